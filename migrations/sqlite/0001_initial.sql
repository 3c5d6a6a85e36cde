-- Tolerant storage, SQLite flavour. Keep in step with ../postgres/0001_initial.sql: the two differ only
-- in how ids are generated (INTEGER PRIMARY KEY vs an identity column) and the blob type name
-- (a test checks that both declare the same tables and columns).
-- Times are milliseconds since the Unix epoch; flags are 0/1 integers.

CREATE TABLE experiments (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    spec_toml TEXT NOT NULL,
    seed BIGINT NOT NULL,
    planned_runs BIGINT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('pending', 'running', 'finished', 'aborted', 'interrupted')),
    created_at_ms BIGINT NOT NULL,
    started_at_ms BIGINT,
    finished_at_ms BIGINT,
    abort_reason TEXT
);

CREATE TABLE runs (
    id INTEGER PRIMARY KEY,
    experiment_id BIGINT NOT NULL REFERENCES experiments (id) ON DELETE CASCADE,
    plan_index BIGINT NOT NULL,
    round_index BIGINT NOT NULL,
    condition_index BIGINT NOT NULL,
    condition_label TEXT NOT NULL,
    fault_kind TEXT NOT NULL,
    fault_rate DOUBLE PRECISION NOT NULL,
    breaker_mode TEXT NOT NULL,
    condition_json TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('pending', 'running', 'finished', 'aborted', 'interrupted')),
    warmup_ms BIGINT NOT NULL,
    duration_ms BIGINT NOT NULL,
    started_at_ms BIGINT,
    finished_at_ms BIGINT,
    abort_reason TEXT,
    requests BIGINT,
    ok BIGINT,
    failed BIGINT,
    rejected BIGINT,
    timeout BIGINT,
    connection_error BIGINT,
    client_error BIGINT,
    energy_joules DOUBLE PRECISION,
    energy_source TEXT CHECK (energy_source IN ('measured', 'modelled'))
);
CREATE INDEX runs_by_experiment ON runs (experiment_id, plan_index);
-- A plan position is finished at most once; interrupted and aborted attempts stay as history.
CREATE UNIQUE INDEX runs_finished_once ON runs (experiment_id, plan_index) WHERE status = 'finished';

CREATE TABLE samples (
    run_id BIGINT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    second BIGINT NOT NULL,
    warmup BIGINT NOT NULL,
    requests BIGINT NOT NULL,
    ok BIGINT NOT NULL,
    failed BIGINT NOT NULL,
    rejected BIGINT NOT NULL,
    timeout BIGINT NOT NULL,
    connection_error BIGINT NOT NULL,
    client_error BIGINT NOT NULL,
    cart_mean_items DOUBLE PRECISION,
    carts BIGINT,
    pool_in_flight BIGINT,
    pool_queued BIGINT,
    cpu_seconds DOUBLE PRECISION,
    energy_joules DOUBLE PRECISION,
    extra_json TEXT,
    PRIMARY KEY (run_id, second)
);

CREATE TABLE endpoint_seconds (
    run_id BIGINT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    second BIGINT NOT NULL,
    endpoint TEXT NOT NULL,
    ok BIGINT NOT NULL,
    failed BIGINT NOT NULL,
    rejected BIGINT NOT NULL,
    timeout BIGINT NOT NULL,
    connection_error BIGINT NOT NULL,
    client_error BIGINT NOT NULL,
    p50_us BIGINT NOT NULL,
    p95_us BIGINT NOT NULL,
    p99_us BIGINT NOT NULL,
    max_us BIGINT NOT NULL,
    histogram BLOB NOT NULL,
    PRIMARY KEY (run_id, second, endpoint)
);

CREATE TABLE endpoint_histograms (
    run_id BIGINT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    endpoint TEXT NOT NULL,
    ok BIGINT NOT NULL,
    failed BIGINT NOT NULL,
    rejected BIGINT NOT NULL,
    timeout BIGINT NOT NULL,
    connection_error BIGINT NOT NULL,
    client_error BIGINT NOT NULL,
    p50_us BIGINT NOT NULL,
    p95_us BIGINT NOT NULL,
    p99_us BIGINT NOT NULL,
    max_us BIGINT NOT NULL,
    mean_us DOUBLE PRECISION NOT NULL,
    histogram BLOB NOT NULL,
    histogram_ok BLOB NOT NULL,
    PRIMARY KEY (run_id, endpoint)
);

CREATE TABLE transitions (
    run_id BIGINT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    ordinal BIGINT NOT NULL,
    at_ms BIGINT NOT NULL,
    service TEXT NOT NULL,
    breaker TEXT NOT NULL,
    from_state TEXT NOT NULL,
    to_state TEXT NOT NULL,
    reason TEXT NOT NULL,
    detail_json TEXT NOT NULL,
    seq BIGINT NOT NULL,
    shadow BIGINT NOT NULL,
    PRIMARY KEY (run_id, ordinal)
);

CREATE TABLE fault_events (
    run_id BIGINT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    ordinal BIGINT NOT NULL,
    at_ms BIGINT NOT NULL,
    event TEXT NOT NULL,
    fault_id TEXT NOT NULL,
    detail_json TEXT NOT NULL,
    PRIMARY KEY (run_id, ordinal)
);
