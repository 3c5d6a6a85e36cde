-- Container-level faults and per-container samples, SQLite flavour. Keep in step with
-- ../postgres/0006_containers.sql (identical but for the id column).

-- Every container fault a controller applied, with its lease: a container's labels cannot change while it
-- runs, so who paused (stopped, detached…) it and until when is kept here, where any controller on this
-- database finds it. A row with undone_ms NULL is still in force; past until_ms it is undone by the next sweep.
CREATE TABLE container_faults (
    id INTEGER PRIMARY KEY,
    container_id TEXT NOT NULL,
    container_name TEXT NOT NULL,
    service TEXT NOT NULL,
    -- The action as JSON (controller::docker::ContainerAction), with what its undo needs.
    action TEXT NOT NULL,
    owner TEXT NOT NULL,
    run_id BIGINT REFERENCES runs (id) ON DELETE SET NULL,
    started_ms BIGINT NOT NULL,
    until_ms BIGINT NOT NULL,
    undone_ms BIGINT,
    undo_error TEXT
);
CREATE INDEX container_faults_pending ON container_faults (undone_ms, until_ms);

-- Per-container CPU, memory and network, one row per container per second of a run. Energy is modelled:
-- the machine's modelled power at the stack's CPU utilisation, split by each container's share of CPU time.
CREATE TABLE container_samples (
    run_id BIGINT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    second BIGINT NOT NULL,
    container TEXT NOT NULL,
    service TEXT NOT NULL,
    replica BIGINT NOT NULL,
    cpu_seconds DOUBLE PRECISION NOT NULL,
    memory_bytes BIGINT NOT NULL,
    rx_bytes BIGINT NOT NULL,
    tx_bytes BIGINT NOT NULL,
    energy_joules DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (run_id, second, container)
);
