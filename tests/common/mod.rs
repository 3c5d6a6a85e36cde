//! What several of the binary's test files share: a scratch directory, a child-process guard, running the
//! built `tolerant` with a clean environment, and (`compose`) a compose project on the machine's engine.
// Each test file is its own crate and uses only some of these.
#![allow(dead_code)]

pub mod compose;

use std::path::Path;
use std::process::{Child, Command, Output};

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_tolerant");

/// Kills a child process when the test ends, however it ends.
pub struct Running(pub Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs `tolerant <args>` in `dir` to its end, without the caller's database or token settings.
pub fn tolerant(args: &[&str], dir: &Path) -> Output {
    Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .env_remove("TOLERANT_DB")
        .env_remove("TOLERANT_TOKEN")
        .env("RUST_LOG", "warn")
        .output()
        .expect("run tolerant")
}

/// A child's output as text.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}
