-- The indexes of 023's and 024's columns, in a migration of their own: a migration is one transaction, and the
-- columns' ALTER TABLE holds a lock that blocks every read of the table until it commits, so an index built in the
-- same migration kept the tables unreadable for as long as the build took. Built here, they block only writes.
CREATE INDEX IF NOT EXISTS selection_events_stored ON selection_events (stored_at);
CREATE INDEX IF NOT EXISTS tool_feedback_sender ON tool_feedback (tool_id, tenant_id, sender, occurred_at);
