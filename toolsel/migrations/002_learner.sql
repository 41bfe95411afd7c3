-- Learner: latency histogram and percentiles, the stored composite quality, probation; review-table indexes.
ALTER TABLE tool_quality ADD COLUMN IF NOT EXISTS latency_hist bigint[] NOT NULL DEFAULT '{}';
ALTER TABLE tool_quality ADD COLUMN IF NOT EXISTS latency_p50_ms double precision;
ALTER TABLE tool_quality ADD COLUMN IF NOT EXISTS latency_p99_ms double precision;
ALTER TABLE tool_quality ADD COLUMN IF NOT EXISTS probation_calls integer NOT NULL DEFAULT 0;
ALTER TABLE tool_quality ADD COLUMN IF NOT EXISTS state_changed_at timestamptz;
-- seed 004's composite quality (success rate x average rating of model and people; 1.0 before any rating)
ALTER TABLE tool_quality ADD COLUMN IF NOT EXISTS quality double precision GENERATED ALWAYS AS (
    CASE WHEN calls > 0 THEN successes::double precision / calls
        * CASE WHEN rating_count > 0 THEN rating_sum / rating_count ELSE 1.0 END END) STORED;
ALTER TABLE tool_quality ADD COLUMN IF NOT EXISTS error_rate double precision GENERATED ALWAYS AS (
    CASE WHEN calls > 0 THEN failures::double precision / calls END) STORED;

CREATE UNIQUE INDEX IF NOT EXISTS review_log_event_tool ON review_log (event_id, tool_id);
CREATE INDEX IF NOT EXISTS review_log_tool ON review_log (tool_id);
CREATE INDEX IF NOT EXISTS review_index_tool ON review_index (tool_id);
CREATE INDEX IF NOT EXISTS tool_feedback_tool ON tool_feedback (tool_id);
CREATE INDEX IF NOT EXISTS tool_quarantine_open ON tool_quarantine (since) WHERE released_at IS NULL;
