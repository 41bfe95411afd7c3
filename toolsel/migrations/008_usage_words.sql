-- Learnt words: the query text of an example whose event taught no other tool (NULL otherwise: a request served
-- by several tools names them all in one sentence, so its words cannot be told apart), and per learnt vector the
-- newest such texts, which the selectors index with BM25 for the scope.
ALTER TABLE tool_usage_examples ADD COLUMN IF NOT EXISTS words text;
ALTER TABLE tool_usage_vectors ADD COLUMN IF NOT EXISTS words text[] NOT NULL DEFAULT '{}';
