-- Game-day annotations, SQLite flavour. Keep in step with ../postgres/0002_annotations.sql (same columns;
-- only the id differs). An annotation outlives the experiment and run it was written during: deleting
-- them only forgets the link.

CREATE TABLE annotations (
    id INTEGER PRIMARY KEY,
    at_ms BIGINT NOT NULL,
    text TEXT NOT NULL,
    author TEXT,
    experiment_id BIGINT REFERENCES experiments (id) ON DELETE SET NULL,
    run_id BIGINT REFERENCES runs (id) ON DELETE SET NULL
);
CREATE INDEX annotations_by_experiment ON annotations (experiment_id, at_ms);
CREATE INDEX annotations_by_time ON annotations (at_ms);
