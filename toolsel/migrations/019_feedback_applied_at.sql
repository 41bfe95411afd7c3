-- When a feedback event reached the store, by the store's clock: an incremental export follows it (as it follows
-- outcomes' and reviews' applied_at). It followed occurred_at, which the sender dates: one feedback dated years
-- ahead moved the export's mark past every feedback after it. Rows stored before this take the migration's time,
-- so the next export reads them again and skips the ids it has written.
ALTER TABLE tool_feedback ADD COLUMN IF NOT EXISTS applied_at timestamptz NOT NULL DEFAULT now();
