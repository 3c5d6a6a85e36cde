//! What several of the binary's test files share: a scratch directory of their own.

use std::path::PathBuf;

/// A fresh directory under the system temp dir (`tolerant-<name>-<pid>-<nanos>`), removed when dropped.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(name: &str) -> TempDir {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let path =
            std::env::temp_dir().join(format!("tolerant-{name}-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&path).expect("create the scratch directory");
        TempDir(path)
    }

    /// The SQLite database inside it, as `--db` takes it.
    #[allow(dead_code)] // each test file is its own crate; not all of them keep a database here
    pub fn db(&self) -> String {
        self.0
            .join("tolerant.db")
            .to_str()
            .expect("utf-8 path")
            .to_owned()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
