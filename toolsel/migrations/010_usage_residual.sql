-- A learnt tool's residual: a vector the learner moves with each review (a listwise step over the selection's
-- reviewed tools: towards the query for the relevant ones, away for the others), added to the tool's cosine by
-- the selectors. It is state, not derived from the kept examples, so rebuilding a tool's vectors keeps it.
ALTER TABLE tool_usage_vectors ADD COLUMN IF NOT EXISTS residual vector(384);
