-- When each actor's credits on a tool were last spent (toolsel/store/learning.py): an actor's credits refill with
-- each window of its selections (TOOLSEL_LEARNING_CREDITS_WINDOW_S), so a row untouched for two windows is never
-- spent again, and the learner drops it; an anonymous request's actor is its one selection, a row per call before.
-- Rows from before this take the migration's time.
ALTER TABLE session_credits ADD COLUMN IF NOT EXISTS touched_at timestamptz NOT NULL DEFAULT now();
ALTER TABLE failure_credits ADD COLUMN IF NOT EXISTS touched_at timestamptz NOT NULL DEFAULT now();
ALTER TABLE review_credits ADD COLUMN IF NOT EXISTS touched_at timestamptz NOT NULL DEFAULT now();
