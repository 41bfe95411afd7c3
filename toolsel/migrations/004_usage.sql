-- Learning from use: the query examples each tool learnt (usage memory) and the vectors computed from them,
-- posteriors per tenant with the last success of their context, and the credits that bound one actor.
CREATE SEQUENCE IF NOT EXISTS tool_usage_version;

CREATE TABLE IF NOT EXISTS tool_usage_examples (
    id            bigserial PRIMARY KEY,
    tool_id       bigint NOT NULL REFERENCES tools (id) ON DELETE CASCADE,
    scope         text NOT NULL,
    event_id      uuid NOT NULL,
    polarity      smallint NOT NULL CHECK (polarity IN (-1, 1)),
    query_vector  vector(384) NOT NULL,
    learned_at    timestamptz NOT NULL DEFAULT now(),
    UNIQUE (tool_id, scope, event_id, polarity)
);
CREATE INDEX IF NOT EXISTS tool_usage_examples_newest ON tool_usage_examples (tool_id, scope, polarity, id);

CREATE TABLE IF NOT EXISTS tool_usage_vectors (
    tool_id            bigint NOT NULL REFERENCES tools (id) ON DELETE CASCADE,
    scope              text NOT NULL,
    centroid           vector(384) NOT NULL,
    negative_centroid  vector(384),
    positives          integer NOT NULL,
    negatives          integer NOT NULL,
    version            bigint NOT NULL,
    updated_at         timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tool_id, scope)
);
CREATE INDEX IF NOT EXISTS tool_usage_vectors_version ON tool_usage_vectors (version);

-- posteriors per (tool, tenant, context); rows learnt before tenants were kept keep tenant ''
ALTER TABLE tool_bandit_stats ADD COLUMN IF NOT EXISTS tenant_id text NOT NULL DEFAULT '';
ALTER TABLE tool_bandit_stats ADD COLUMN IF NOT EXISTS last_success_at timestamptz;
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_constraint WHERE conname = 'tool_bandit_stats_pkey'
                   AND pg_get_constraintdef(oid) LIKE '%tenant_id%') THEN
        ALTER TABLE tool_bandit_stats DROP CONSTRAINT IF EXISTS tool_bandit_stats_pkey;
        ALTER TABLE tool_bandit_stats ADD CONSTRAINT tool_bandit_stats_pkey
            PRIMARY KEY (tool_id, tenant_id, context_key);
    END IF;
END $$;

CREATE TABLE IF NOT EXISTS session_credits (
    tenant_id  text NOT NULL,
    actor      text NOT NULL,
    tool_id    bigint NOT NULL REFERENCES tools (id) ON DELETE CASCADE,
    credits    integer NOT NULL DEFAULT 0,  -- successes of this actor on this tool that counted so far
    PRIMARY KEY (tenant_id, actor, tool_id)
);
