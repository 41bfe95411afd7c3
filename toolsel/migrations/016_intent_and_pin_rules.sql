-- The query's intent label of each selection (the tool nearest its meaning, or its category): analytics groups by
-- it; the bandit context names it. Empty for selections recorded before.
ALTER TABLE selection_events ADD COLUMN IF NOT EXISTS intent text NOT NULL DEFAULT '';

-- Rules that pin a tool for the requests they match, or unpin a plugin's pin, without hiding it (seed 000, 5.6).
ALTER TABLE tool_visibility_rules DROP CONSTRAINT IF EXISTS tool_visibility_rules_effect_check;
ALTER TABLE tool_visibility_rules ADD CONSTRAINT tool_visibility_rules_effect_check
    CHECK (effect IN ('allow', 'deny', 'pin', 'unpin'));
