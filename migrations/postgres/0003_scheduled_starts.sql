-- Scheduled experiment starts (the dashboard's queue), PostgreSQL flavour. Keep in step with ../sqlite/0003_scheduled_starts.sql
-- (identical text). Earlier versions created `web_schedule` outside the migrations; its rows move here, those of
-- experiments that no longer exist are dropped.

CREATE TABLE scheduled_starts (
    experiment_id BIGINT PRIMARY KEY REFERENCES experiments (id) ON DELETE CASCADE,
    at_ms BIGINT NOT NULL
);
CREATE TABLE IF NOT EXISTS web_schedule (experiment_id BIGINT PRIMARY KEY, at_ms BIGINT NOT NULL);
INSERT INTO scheduled_starts (experiment_id, at_ms)
    SELECT experiment_id, at_ms FROM web_schedule WHERE experiment_id IN (SELECT id FROM experiments);
DROP TABLE web_schedule;
