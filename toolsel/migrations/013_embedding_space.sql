-- Vectors of any size, so that a model other than the packaged 384-d one can be used, and which model made the
-- vectors stored: a query embedded by one model is meaningless against vectors of another, even of the same size,
-- so every service compares its model with this row when it starts and refuses to run on vectors of another
-- (``toolsel indexer --switch-model`` changes it). No index reads these columns (the selectors keep the vectors
-- in memory), so their size need not be fixed.
ALTER TABLE tools ALTER COLUMN embedding TYPE vector;
ALTER TABLE review_log ALTER COLUMN query_embedding TYPE vector;
ALTER TABLE review_index ALTER COLUMN centroid TYPE vector;
ALTER TABLE tool_usage_examples ALTER COLUMN query_vector TYPE vector;
ALTER TABLE tool_usage_vectors ALTER COLUMN centroid TYPE vector;
ALTER TABLE tool_usage_vectors ALTER COLUMN negative_centroid TYPE vector;
ALTER TABLE tool_usage_vectors ALTER COLUMN residual TYPE vector;
ALTER TABLE usage_query_totals ALTER COLUMN total TYPE vector;

CREATE TABLE IF NOT EXISTS embedding_space (
    id           boolean PRIMARY KEY DEFAULT true CHECK (id),  -- one row
    model        text NOT NULL,
    dim          integer NOT NULL CHECK (dim > 0),
    recorded_at  timestamptz NOT NULL DEFAULT now()
);
