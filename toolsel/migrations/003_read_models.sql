-- Read models: each tool's health as operators and analytics read it, defined once; unused objects dropped.
DROP TABLE IF EXISTS dead_letters;
ALTER TABLE tool_quality DROP COLUMN IF EXISTS error_rate;

-- A tool's quality counters and health (a tool the learner has not seen is healthy with no calls); an open
-- quarantine entry wins over the stored state, as the selector skips the tool on it.
CREATE OR REPLACE VIEW tool_health AS
SELECT t.id AS tool_id, t.plugin_id, t.name, t.deleted_at,
       coalesce(q.calls, 0) AS calls, coalesce(q.successes, 0) AS successes, coalesce(q.failures, 0) AS failures,
       q.successes::float8 / nullif(q.calls, 0) AS success_rate,
       q.rating_sum / nullif(q.rating_count, 0) AS average_rating, coalesce(q.rating_count, 0) AS ratings,
       q.latency_p50_ms, q.latency_p99_ms, q.quality, q.rolling_score,
       CASE WHEN qq.tool_id IS NOT NULL THEN 'quarantined' ELSE coalesce(q.state, 'healthy') END AS state,
       q.degraded_since
FROM tools t
LEFT JOIN tool_quality q ON q.tool_id = t.id
LEFT JOIN tool_quarantine qq ON qq.tool_id = t.id AND qq.released_at IS NULL;
