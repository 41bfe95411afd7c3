-- Learnt words: a positive example keeps its query text and the selection it came from; a tool's learnt words are
-- the texts of its newest positive examples whose selection taught no other tool (a request served by several
-- tools names them all in one sentence, so its words cannot be told apart). The selectors index them with BM25.
ALTER TABLE tool_usage_examples ADD COLUMN IF NOT EXISTS words text;
ALTER TABLE tool_usage_examples ADD COLUMN IF NOT EXISTS selection_id uuid;
CREATE INDEX IF NOT EXISTS tool_usage_examples_selection ON tool_usage_examples (selection_id, scope)
    WHERE selection_id IS NOT NULL;
ALTER TABLE tool_usage_vectors ADD COLUMN IF NOT EXISTS words text[] NOT NULL DEFAULT '{}';
