-- The query's intent label of each selection (the tool nearest its meaning, or its category): analytics groups by
-- it; the bandit context names it. Empty for selections recorded before.
ALTER TABLE selection_events ADD COLUMN IF NOT EXISTS intent text NOT NULL DEFAULT '';
