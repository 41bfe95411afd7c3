-- A tool's quality and health are kept per tenant: the tenant of the selections whose calls they count. A shared
-- tool that fails for one tenant is warned about, degraded and quarantined for that tenant only; the others keep
-- it on their own evidence. Rows from before take the tool's own tenant ('*' for a shared tool): that evidence,
-- from every tenant, stays the base every tenant starts from until its own calls say otherwise.
ALTER TABLE tool_quality ADD COLUMN IF NOT EXISTS tenant_id text;
UPDATE tool_quality q SET tenant_id = t.tenant_id FROM tools t WHERE t.id = q.tool_id AND q.tenant_id IS NULL;
ALTER TABLE tool_quality ALTER COLUMN tenant_id SET NOT NULL;
ALTER TABLE tool_quality DROP CONSTRAINT IF EXISTS tool_quality_pkey;
ALTER TABLE tool_quality ADD PRIMARY KEY (tool_id, tenant_id);

ALTER TABLE tool_quarantine ADD COLUMN IF NOT EXISTS tenant_id text;
UPDATE tool_quarantine q SET tenant_id = t.tenant_id FROM tools t WHERE t.id = q.tool_id AND q.tenant_id IS NULL;
ALTER TABLE tool_quarantine ALTER COLUMN tenant_id SET NOT NULL;
ALTER TABLE tool_quarantine DROP CONSTRAINT IF EXISTS tool_quarantine_pkey;
ALTER TABLE tool_quarantine ADD PRIMARY KEY (tool_id, tenant_id);

-- Each tool's quality and health per tenant with evidence or a quarantine (a tool with neither: one healthy row
-- under its own tenant); an open quarantine entry wins over the stored state, as the selector skips the tool on it.
DROP VIEW IF EXISTS tool_health;
CREATE VIEW tool_health AS
SELECT t.id AS tool_id, t.plugin_id, t.name, t.deleted_at, coalesce(k.tenant_id, t.tenant_id) AS tenant_id,
       coalesce(q.calls, 0) AS calls, coalesce(q.successes, 0) AS successes, coalesce(q.failures, 0) AS failures,
       q.successes::float8 / nullif(q.calls, 0) AS success_rate,
       q.rating_sum / nullif(q.rating_count, 0) AS average_rating, coalesce(q.rating_count, 0) AS ratings,
       q.latency_p50_ms, q.latency_p99_ms, q.quality, q.rolling_score,
       CASE WHEN qq.tool_id IS NOT NULL THEN 'quarantined' ELSE coalesce(q.state, 'healthy') END AS state,
       q.degraded_since
FROM tools t
LEFT JOIN (SELECT tool_id, tenant_id FROM tool_quality
           UNION SELECT tool_id, tenant_id FROM tool_quarantine WHERE released_at IS NULL) k ON k.tool_id = t.id
LEFT JOIN tool_quality q ON q.tool_id = k.tool_id AND q.tenant_id = k.tenant_id
LEFT JOIN tool_quarantine qq ON qq.tool_id = k.tool_id AND qq.tenant_id = k.tenant_id AND qq.released_at IS NULL;
