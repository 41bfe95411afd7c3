-- Who made each selection (the sender's scope: 'op' for the operator, 't.<tenant>.<name>' for a tenant's
-- identity): only it, or the operator, may report outcomes and reviews of it.
ALTER TABLE selection_events ADD COLUMN IF NOT EXISTS owner text NOT NULL DEFAULT 'op';

-- Failed calls of one actor on one tool that count, per tenant (successes are bounded in session_credits).
CREATE TABLE IF NOT EXISTS failure_credits (
    tenant_id text NOT NULL,
    actor text NOT NULL,
    tool_id bigint NOT NULL REFERENCES tools(id) ON DELETE CASCADE,
    credits integer NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant_id, actor, tool_id)
);
