-- How well each [[sources]] Prometheus source was seen during a run, PostgreSQL flavour (identical to
-- ../sqlite/0009_run_sources.sql). One row per run and source (`ordinal`: its place among the spec's scraped sources): scrapes tried, those that got no usable answer,
-- the longest time between two answers (ms), and the periods it was blind as a JSON list of [from_ms, to_ms]
-- (at most 64). Written with the run's other rows when it ends; runs stored before this table have none.

CREATE TABLE run_sources (
    run_id BIGINT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    ordinal BIGINT NOT NULL,
    source TEXT NOT NULL,
    scrapes BIGINT NOT NULL,
    failures BIGINT NOT NULL,
    longest_gap_ms BIGINT NOT NULL,
    blind_json TEXT NOT NULL,
    PRIMARY KEY (run_id, ordinal)
);
