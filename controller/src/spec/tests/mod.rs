//! Spec parsing, validation and matrix expansion tests, one file per topic; the shared fixtures here.

mod bounds;
mod breaker_table;
mod criteria;
mod fault;
mod field_errors;
mod matrix;
mod scaling;
mod shipped;
mod sources;
mod targets;
mod workload;

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use super::*;

const MINIMAL: &str = r#"
name = "t"
duration = "10s"

[load]
users = 2
"#;

fn experiments_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../experiments")
}

/// Parses `source`, expecting an error; returns (field, line).
fn error_of(source: &str) -> (String, usize, String) {
    let error = ExperimentSpec::parse(source).expect_err("spec should be rejected");
    let message = error.to_string();
    (
        error.field().unwrap_or("<none>").to_owned(),
        error.line().unwrap_or(0),
        message,
    )
}
