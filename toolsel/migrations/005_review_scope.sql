-- The review log and index are kept per scope (the tenant whose selection was reviewed, or '*' when learning is
-- shared on purpose): one tenant's reviews never move another tenant's historical fitness. Rows from before are
-- left in scope '' (read by nobody); `toolsel compact` rebuilds the index from the log.
ALTER TABLE review_log ADD COLUMN IF NOT EXISTS scope text NOT NULL DEFAULT '';
ALTER TABLE review_index ADD COLUMN IF NOT EXISTS scope text NOT NULL DEFAULT '';
CREATE INDEX IF NOT EXISTS review_log_tool_scope ON review_log (tool_id, scope);
CREATE INDEX IF NOT EXISTS review_index_tool_scope ON review_index (tool_id, scope);
