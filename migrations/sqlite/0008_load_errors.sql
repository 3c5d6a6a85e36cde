-- Requests a run's load generator itself failed (no descriptor left, a panicked request task…), SQLite flavour.
-- Keep in step with ../postgres/0008_load_errors.sql (identical). They are in no outcome count: they say
-- nothing about the system under test. NULL until the run ended (and for runs stored before this column).
-- A run failed by its harness is stored with status 'aborted' and an abort_reason beginning 'failed: ' (the
-- status CHECK of 0001 cannot be widened in SQLite without rebuilding `runs` under its foreign keys); the
-- store reads it back as failed.

ALTER TABLE runs ADD COLUMN load_errors BIGINT;
