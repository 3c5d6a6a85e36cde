//! What tests of every crate share (compiled for this crate's tests and with the `test-util` feature): a
//! temporary store, a spec from its literal text, and a run started in a store.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use crate::spec::ExperimentSpec;
use crate::store::{RunId, Store};

/// A fresh directory under the system temp dir holding a SQLite store (`tolerant.db`) and whatever else a test
/// writes beside it; removed with everything in it when dropped.
#[derive(Debug)]
pub struct TempStore {
    dir: PathBuf,
}

impl TempStore {
    /// `tolerant-<name>-<pid>-<n>`, empty (a leftover of a killed run with the same pid is cleared first).
    pub fn new(name: &str) -> Self {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "tolerant-{name}-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create the test's temp directory");
        TempStore { dir }
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The database's location, as `Store::open` and `--db` take it.
    pub fn location(&self) -> String {
        self.dir
            .join("tolerant.db")
            .to_str()
            .expect("a UTF-8 temp path")
            .to_owned()
    }

    /// The SQLite store, opened (created on first open).
    pub async fn open(&self) -> Store {
        Store::open(&self.location())
            .await
            .expect("open the test's SQLite store")
    }

    /// The stores a storage scenario runs against: this SQLite one always, and PostgreSQL too when
    /// `TOLERANT_TEST_PG_URL` is set (`scripts/test` starts one).
    pub async fn stores(&self) -> Vec<Store> {
        let mut stores = vec![self.open().await];
        if let Ok(url) = std::env::var("TOLERANT_TEST_PG_URL") {
            stores.push(
                Store::open(&url)
                    .await
                    .expect("TOLERANT_TEST_PG_URL must be reachable"),
            );
        }
        stores
    }
}

impl Drop for TempStore {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The spec written as `text`; a test's spec that does not parse fails the test with the error and the text.
pub fn spec(text: &str) -> ExperimentSpec {
    ExperimentSpec::parse(text).unwrap_or_else(|error| panic!("{error}\n{text}"))
}

/// A run started in `store` (status `running`, nothing written yet) of a one-run experiment of its own.
pub async fn started_run(store: &Store) -> RunId {
    let spec = spec(
        "name = \"started\"\nrounds = 1\nduration = \"10s\"\n[load]\nusers = 1\n\
         [fault]\ntarget = \"payment\"\nrates = [0.5]\n[breaker]\nmodes = [\"enforce\"]\n",
    );
    let experiment = store.create_experiment(&spec, 1).await.expect("stored");
    let zero = std::time::Duration::ZERO;
    (store.start_run(experiment, &spec.plan()[0], zero, zero, 1))
        .await
        .expect("started")
}

/// What `experiments/` ships, as the paths of its TOML files: the experiment specs, and `tolerant tune`'s inputs
/// (`tune-*.toml`, the advisor's own vocabulary), apart and each sorted by name.
pub fn shipped_experiments() -> (Vec<PathBuf>, Vec<PathBuf>) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../experiments");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|error| panic!("{}: {error}", dir.display()))
        .map(|entry| entry.expect("an entry of experiments/").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "toml"))
        .collect();
    paths.sort();
    paths.into_iter().partition(|path| {
        !path
            .file_name()
            .is_some_and(|name| name.to_string_lossy().starts_with("tune-"))
    })
}
