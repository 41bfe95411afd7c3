-- When a selection reached the store, by the store's clock: an incremental export follows it (as it follows
-- outcomes' and reviews' applied_at and feedback's). It followed occurred_at, the selector's clock: one selector
-- running a day ahead, or a selection stored more than the export's overlap late, moved the export's mark past
-- selections stored after it, which no later export wrote. Rows stored before this take the migration's time, so
-- the next export reads them again and skips the ids it has written. Its index is built by 025, after this
-- migration's lock on the table (it blocks reads) is let go.
ALTER TABLE selection_events ADD COLUMN IF NOT EXISTS stored_at timestamptz NOT NULL DEFAULT now();
