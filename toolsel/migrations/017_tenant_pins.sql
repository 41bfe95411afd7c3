-- Where a visibility rule came from: the operator's rules API, or a tenant pinning or unpinning a tool for itself
-- (toolsel.rpc.pins). The selectors apply a tenant's own choices beneath the operator's rules; a tenant changes
-- only the rules of its own origin.
ALTER TABLE tool_visibility_rules ADD COLUMN IF NOT EXISTS origin text NOT NULL DEFAULT 'operator';
ALTER TABLE tool_visibility_rules DROP CONSTRAINT IF EXISTS tool_visibility_rules_origin_check;
ALTER TABLE tool_visibility_rules ADD CONSTRAINT tool_visibility_rules_origin_check
    CHECK (origin IN ('operator', 'tenant'));

-- One choice per tenant and tool: pinning again, or unpinning, replaces it.
CREATE UNIQUE INDEX IF NOT EXISTS tool_visibility_rules_tenant_choice
    ON tool_visibility_rules (tenant_id, target) WHERE origin = 'tenant';
