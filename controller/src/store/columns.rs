//! The columns of each per-run table, in one order: writing inserts them (after the row's keys, `run_id` and
//! where rows keep their order `ordinal`) and binds in this order, reading selects them, so a column is added or
//! renamed in one place. The tables themselves are the migrations'.

/// Outcome counts, in the order `bind_outcomes` binds them.
pub(super) const OUTCOMES: [&str; 6] = [
    "ok",
    "failed",
    "rejected",
    "timeout",
    "connection_error",
    "client_error",
];

/// Latency percentiles of a histogram, in µs.
pub(super) const LATENCY: [&str; 4] = ["p50_us", "p95_us", "p99_us", "max_us"];

/// `samples`: a run's seconds, the load driver's figures joined with the collector's.
pub(super) fn samples() -> Vec<&'static str> {
    [
        &["second", "warmup", "requests"][..],
        &OUTCOMES,
        &[
            "cart_mean_items",
            "carts",
            "pool_in_flight",
            "pool_queued",
            "cpu_seconds",
            "energy_joules",
            "extra_json",
        ],
    ]
    .concat()
}

/// `endpoint_seconds`: per endpoint, per second.
pub(super) fn endpoint_seconds() -> Vec<&'static str> {
    [
        &["second", "endpoint"][..],
        &OUTCOMES,
        &LATENCY,
        &["histogram", "p95_ok_us", "p95_failed_us"],
    ]
    .concat()
}

/// `endpoint_histograms`: per endpoint over the measured part of the run.
pub(super) fn endpoint_histograms() -> Vec<&'static str> {
    [
        &["endpoint"][..],
        &OUTCOMES,
        &LATENCY,
        &["mean_us", "histogram", "histogram_ok"],
    ]
    .concat()
}

/// `transitions` (after `run_id`, `ordinal`).
pub(super) const TRANSITIONS: [&str; 10] = [
    "at_ms",
    "service",
    "breaker",
    "from_state",
    "to_state",
    "reason",
    "detail_json",
    "seq",
    "shadow",
    "source",
];

/// `fault_events` (after `run_id`, `ordinal`).
pub(super) const FAULT_EVENTS: [&str; 4] = ["at_ms", "event", "fault_id", "detail_json"];

/// The columns an insert names: the row's keys, then `columns`.
pub(super) fn keyed(keys: &[&'static str], columns: &[&'static str]) -> Vec<&'static str> {
    [keys, columns].concat()
}

/// `SELECT columns FROM table WHERE run_id = $1 ORDER BY order`.
pub(super) fn select_of_run(columns: &[&str], table: &str, order: &str) -> String {
    select_where(columns, table, "run_id = $1", order)
}

/// `SELECT columns FROM table WHERE condition ORDER BY order`.
pub(super) fn select_where(columns: &[&str], table: &str, condition: &str, order: &str) -> String {
    format!(
        "SELECT {} FROM {table} WHERE {condition} ORDER BY {order}",
        columns.join(", ")
    )
}
