-- Where a transition came from when the breaker is not one of Tolerant's: a Prometheus scrape or a push
-- (`prometheus:<url>`, `push`). NULL for transitions from a Tolerant breaker's own stream. Same text in both
-- flavours.

ALTER TABLE transitions ADD COLUMN source TEXT;
