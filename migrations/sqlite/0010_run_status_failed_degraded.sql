-- A run failed by its harness and a run degraded by a lost load worker get their own status, SQLite flavour
-- (../postgres/0010_run_status_failed_degraded.sql does the same in place). Until now they were stored as
-- 'aborted' with an abort_reason beginning 'failed: ' or 'degraded: '; those rows get their status and lose the
-- prefix. SQLite cannot widen a CHECK, so `runs` is rebuilt: a new table, every row copied (ids kept), the old
-- one dropped, the new one renamed, its indexes made again.
--
-- Dropping `runs` with foreign keys enforced would delete every child row (samples, transitions, events…)
-- through ON DELETE CASCADE, and `PRAGMA foreign_keys` cannot be changed inside the transaction sqlx runs a
-- SQLite migration in (sqlx 0.8 honours `-- no-transaction` only on PostgreSQL). So the store runs its SQLite
-- migrations on a connection with enforcement turned off beforehand (controller/src/store/migrations.rs); the
-- first two statements refuse to go on if it is on, the last ones refuse to commit if any reference is broken.

CREATE TEMP TABLE migration_0010_guard (foreign_keys_must_be_off BIGINT NOT NULL CHECK (foreign_keys_must_be_off = 0));
INSERT INTO migration_0010_guard SELECT foreign_keys FROM pragma_foreign_keys;

CREATE TABLE runs_0010 (
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
    status TEXT NOT NULL CHECK (status IN ('pending', 'running', 'finished', 'aborted', 'interrupted', 'failed', 'degraded')),
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
    energy_source TEXT CHECK (energy_source IN ('measured', 'modelled')),
    load_errors BIGINT
);
INSERT INTO runs_0010 (
    id, experiment_id, plan_index, round_index, condition_index, condition_label, fault_kind, fault_rate,
    breaker_mode, condition_json, status, warmup_ms, duration_ms, started_at_ms, finished_at_ms, abort_reason,
    requests, ok, failed, rejected, timeout, connection_error, client_error, energy_joules, energy_source,
    load_errors
)
SELECT
    id, experiment_id, plan_index, round_index, condition_index, condition_label, fault_kind, fault_rate,
    breaker_mode, condition_json,
    CASE
        WHEN status = 'aborted' AND substr(abort_reason, 1, 8) = 'failed: ' THEN 'failed'
        WHEN status = 'aborted' AND substr(abort_reason, 1, 10) = 'degraded: ' THEN 'degraded'
        ELSE status
    END,
    warmup_ms, duration_ms, started_at_ms, finished_at_ms,
    CASE
        WHEN status = 'aborted' AND substr(abort_reason, 1, 8) = 'failed: ' THEN substr(abort_reason, 9)
        WHEN status = 'aborted' AND substr(abort_reason, 1, 10) = 'degraded: ' THEN substr(abort_reason, 11)
        ELSE abort_reason
    END,
    requests, ok, failed, rejected, timeout, connection_error, client_error, energy_joules, energy_source,
    load_errors
FROM runs;
DROP TABLE runs;
ALTER TABLE runs_0010 RENAME TO runs;
CREATE INDEX runs_by_experiment ON runs (experiment_id, plan_index);
-- A plan position is finished at most once; interrupted, aborted, failed and degraded attempts stay as history.
CREATE UNIQUE INDEX runs_finished_once ON runs (experiment_id, plan_index) WHERE status = 'finished';

CREATE TEMP TABLE migration_0010_check (broken_references BIGINT NOT NULL CHECK (broken_references = 0));
INSERT INTO migration_0010_check SELECT count(*) FROM pragma_foreign_key_check;
DROP TABLE temp.migration_0010_guard;
DROP TABLE temp.migration_0010_check;
