-- Per-second latency of successful requests apart from the others, SQLite flavour. Keep in step with
-- ../postgres/0007_endpoint_seconds_split.sql (identical). p95_us stays the p95 of every request of the second;
-- these are the p95 of its ok requests and of its other ones (failed, rejected, timed out), NULL when the second
-- had none of them (and for seconds stored before this migration), so a fast rejection cannot pass for a fast
-- answer when a run's timeline is replayed.

ALTER TABLE endpoint_seconds ADD COLUMN p95_ok_us BIGINT;
ALTER TABLE endpoint_seconds ADD COLUMN p95_failed_us BIGINT;
