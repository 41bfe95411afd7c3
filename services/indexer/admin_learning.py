"""What the learner stored, read for operators: quarantine, people's feedback and each tool's quality."""

import asyncpg

from contracts import ErrorCode, ToolKey
from contracts.admin import (
    FeedbackEntry,
    FeedbackList,
    FeedbackQuery,
    QualityList,
    QualityQuery,
    QuarantineEntry,
    QuarantineList,
    QuarantineQuery,
    ToolQuality,
)
from services.indexer.admin import show_tool
from toolsel.messaging import RequestError

QUALITY = """
SELECT t.plugin_id, t.name, coalesce(q.calls, 0) AS calls, coalesce(q.successes, 0) AS successes,
       coalesce(q.failures, 0) AS failures, q.successes::float8 / nullif(q.calls, 0) AS success_rate,
       q.rating_sum / nullif(q.rating_count, 0) AS average_rating, coalesce(q.rating_count, 0) AS ratings,
       q.latency_p50_ms, q.latency_p99_ms, q.quality, q.rolling_score,
       CASE WHEN qq.tool_id IS NOT NULL THEN 'quarantined' ELSE coalesce(q.state, 'healthy') END AS state,
       q.degraded_since
FROM tools t LEFT JOIN tool_quality q ON q.tool_id = t.id
LEFT JOIN tool_quarantine qq ON qq.tool_id = t.id AND qq.released_at IS NULL
"""


async def quarantine(pool: asyncpg.Pool, query: QuarantineQuery) -> QuarantineList:
    rows = await pool.fetch(
        """SELECT t.plugin_id, t.name, qq.reason, qq.since, qq.released_at, qq.released_by,
                  coalesce(q.state, 'quarantined') AS state
           FROM tool_quarantine qq JOIN tools t ON t.id = qq.tool_id LEFT JOIN tool_quality q ON q.tool_id = t.id
           WHERE qq.released_at IS NULL OR $1 ORDER BY qq.since DESC""",
        query.include_released,
    )
    return QuarantineList(entries=[QuarantineEntry(**r) for r in rows])


async def feedback(pool: asyncpg.Pool, query: FeedbackQuery) -> FeedbackList:
    """A tool's most recent feedback first (not_found for an unknown tool)."""
    await show_tool(pool, ToolKey(plugin_id=query.plugin_id, name=query.name))
    rows = await pool.fetch(
        """SELECT f.event_id::text AS event_id, f.tenant_id, f.rating, f.comment, f.author, f.occurred_at
           FROM tool_feedback f JOIN tools t ON t.id = f.tool_id
           WHERE t.plugin_id = $1 AND t.name = $2 ORDER BY f.occurred_at DESC LIMIT $3""",
        query.plugin_id,
        query.name,
        query.limit,
    )
    return FeedbackList(plugin_id=query.plugin_id, name=query.name, feedback=[FeedbackEntry(**r) for r in rows])


async def quality(pool: asyncpg.Pool, query: QualityQuery) -> QualityList:
    """One tool's quality, or every live tool that is not healthy (worst rolling score first)."""
    if query.degraded:
        rows = await pool.fetch(
            f"""SELECT * FROM ({QUALITY} WHERE t.deleted_at IS NULL) s WHERE state <> 'healthy'
                ORDER BY rolling_score NULLS LAST, plugin_id, name"""
        )
    else:
        rows = await pool.fetch(f"{QUALITY} WHERE t.plugin_id = $1 AND t.name = $2", query.plugin_id, query.name)
        if not rows:
            raise RequestError(ErrorCode.NOT_FOUND, f"no tool {query.plugin_id}/{query.name}", "name")
    return QualityList(tools=[ToolQuality(**r) for r in rows])
