-- A run failed by its harness and a run degraded by a lost load worker get their own status, PostgreSQL flavour
-- (../sqlite/0010_run_status_failed_degraded.sql rebuilds the table, which SQLite needs to widen a CHECK;
-- PostgreSQL replaces the constraint in place, so no row moves and no foreign key is touched). Until now they
-- were stored as 'aborted' with an abort_reason beginning 'failed: ' or 'degraded: '; those rows get their
-- status and lose the prefix.

ALTER TABLE runs DROP CONSTRAINT runs_status_check;
UPDATE runs SET
    status = CASE WHEN substr(abort_reason, 1, 8) = 'failed: ' THEN 'failed' ELSE 'degraded' END,
    abort_reason = CASE
        WHEN substr(abort_reason, 1, 8) = 'failed: ' THEN substr(abort_reason, 9)
        ELSE substr(abort_reason, 11)
    END
WHERE status = 'aborted' AND (substr(abort_reason, 1, 8) = 'failed: ' OR substr(abort_reason, 1, 10) = 'degraded: ');
ALTER TABLE runs ADD CONSTRAINT runs_status_check
    CHECK (status IN ('pending', 'running', 'finished', 'aborted', 'interrupted', 'failed', 'degraded'));
