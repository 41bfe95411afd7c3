-- Retention (toolsel/store/retention.py): the history past TOOLSEL_HISTORY_RETENTION_DAYS is walked oldest first,
-- in (time, key) order from a cursor, a bounded batch per statement; rows that stay (a selection an example was
-- learnt from, its outcomes) are passed once a pass, not read again by every statement. A selection stays while
-- a recent review of it does: found by its selection. Examples learnt before migration 008 name only their event.
CREATE INDEX IF NOT EXISTS selection_events_time_key ON selection_events (occurred_at, selection_id);
CREATE INDEX IF NOT EXISTS outcomes_applied ON outcomes (applied_at, event_id);
CREATE INDEX IF NOT EXISTS reviews_applied ON reviews (applied_at, event_id);
CREATE INDEX IF NOT EXISTS reviews_selection ON reviews (selection_id);
CREATE INDEX IF NOT EXISTS review_log_created ON review_log (created_at, id);
CREATE INDEX IF NOT EXISTS tool_feedback_applied ON tool_feedback (applied_at, event_id);
CREATE INDEX IF NOT EXISTS tool_usage_examples_event ON tool_usage_examples (event_id) WHERE selection_id IS NULL;
-- Last: dropping an index locks its table against reads until the migration commits, so nothing may follow it.
DROP INDEX IF EXISTS selection_events_time;  -- the new index's prefix
