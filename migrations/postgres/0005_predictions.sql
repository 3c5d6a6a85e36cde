-- Simulator predictions, PostgreSQL flavour (identical to ../sqlite/0005_predictions.sql). One row per
-- condition of an experiment the model covers, written with the experiment: what breaker::sim predicted for its
-- runs (bands for opens, rejected requests, checkout failure, time open; the opens bound), as JSON.

CREATE TABLE predictions (
    experiment_id BIGINT NOT NULL REFERENCES experiments (id) ON DELETE CASCADE,
    condition_index BIGINT NOT NULL,
    prediction_json TEXT NOT NULL,
    PRIMARY KEY (experiment_id, condition_index)
);
