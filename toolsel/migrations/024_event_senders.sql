-- Who sent each outcome, review and feedback (its scope's token, `op` for the operator): one sender stores at most
-- TOOLSEL_OUTCOMES_PER_SELECTION_MAX outcomes and TOOLSEL_REVIEWS_PER_SELECTION_MAX reviews per selection, and keeps
-- its latest TOOLSEL_FEEDBACK_KEPT_PER_SENDER ratings per tool and tenant (one tenant filled the disk through a
-- single selection). Rows stored before name no sender and count for none. Its index is built by 025.
ALTER TABLE outcomes ADD COLUMN IF NOT EXISTS sender text;
ALTER TABLE reviews ADD COLUMN IF NOT EXISTS sender text;
ALTER TABLE tool_feedback ADD COLUMN IF NOT EXISTS sender text;
