"""Read-only queries over what the learner stored, for operators (quality, quarantine, feedback) and analytics.

Each tool's health is read from the ``tool_health`` view (migration 003), defined once for both.
"""

from datetime import date, datetime
from typing import Final

import asyncpg

HEALTH_COLUMNS = (
    "plugin_id, name, tenant_id, calls, successes, failures, success_rate, average_rating, ratings, latency_p50_ms,"
    " latency_p99_ms, quality, rolling_score, state, degraded_since"
)
TOOL_HEALTH = f"SELECT {HEALTH_COLUMNS} FROM tool_health WHERE plugin_id = $1 AND name = $2 ORDER BY tenant_id"
UNHEALTHY = f"""
SELECT {HEALTH_COLUMNS} FROM tool_health WHERE deleted_at IS NULL AND state <> 'healthy'
ORDER BY rolling_score NULLS LAST, plugin_id, name, tenant_id
"""
LIVE_HEALTH = """
SELECT plugin_id || '/' || name AS tool, tenant_id, state, calls, success_rate, average_rating, quality,
       rolling_score
FROM tool_health WHERE deleted_at IS NULL ORDER BY tool, tenant_id
"""
QUARANTINE = """
SELECT t.plugin_id, t.name, qq.tenant_id, qq.reason, qq.since, qq.released_at, qq.released_by,
       coalesce(q.state, 'quarantined') AS state
FROM tool_quarantine qq JOIN tools t ON t.id = qq.tool_id
LEFT JOIN tool_quality q ON q.tool_id = qq.tool_id AND q.tenant_id = qq.tenant_id
WHERE qq.released_at IS NULL OR $1 ORDER BY qq.since DESC
"""
TOOL_EXISTS = "SELECT EXISTS (SELECT 1 FROM tools WHERE plugin_id = $1 AND name = $2)"
RECENT_FEEDBACK = """
SELECT f.event_id::text AS event_id, f.tenant_id, f.rating, f.comment, f.author, f.occurred_at
FROM tool_feedback f JOIN tools t ON t.id = f.tool_id
WHERE t.plugin_id = $1 AND t.name = $2 ORDER BY f.occurred_at DESC LIMIT $3
"""

EVENT_SOURCES: Final = {
    "selections": """SELECT selection_id::text AS selection_id, occurred_at, tenant_id, user_id, session_id, query,
        page, tier, role, intent, context_key, method, tools::text AS tools, candidate_count, latency_ms,
        tokens_selected, tokens_catalog FROM selection_events e""",
    "outcomes": """SELECT event_id::text AS event_id, selection_id::text AS selection_id, occurred_at, applied_at,
        calls::text AS calls FROM outcomes e""",
    "reviews": """SELECT event_id::text AS event_id, selection_id::text AS selection_id, occurred_at, applied_at,
        none_of_these, reviews::text AS reviews FROM reviews e""",
    "feedback": """SELECT e.event_id::text AS event_id, t.plugin_id, t.name, e.tenant_id, e.rating, e.comment,
        e.author, e.occurred_at, e.applied_at FROM tool_feedback e JOIN tools t ON t.id = e.tool_id""",
}
"""The event history's tables as analytics reads them (nested lists as JSON text)."""
ARRIVAL: Final = {
    "selections": "occurred_at",
    "outcomes": "applied_at",
    "reviews": "applied_at",
    "feedback": "applied_at",
}
"""When a row reached the store, by the store's clock or the selector's (never a sender's): what an incremental
export follows."""
EVENT_TABLES: Final = tuple(EVENT_SOURCES)


async def tool_health(pool: asyncpg.Pool, plugin_id: str, name: str) -> list[asyncpg.Record]:
    """One tool's quality and health (deleted or not), one row per tenant with evidence (one under its own
    tenant when none has any); none when there is no such tool."""
    rows: list[asyncpg.Record] = await pool.fetch(TOOL_HEALTH, plugin_id, name)
    return rows


async def unhealthy_tools(pool: asyncpg.Pool) -> list[asyncpg.Record]:
    """Every live tool that is not healthy, worst rolling score first."""
    rows: list[asyncpg.Record] = await pool.fetch(UNHEALTHY)
    return rows


async def live_tool_health(pool: asyncpg.Pool) -> list[asyncpg.Record]:
    """Each live tool's ``tool`` key, tenant, state, calls, success rate, average rating, quality and rolling
    score, per tenant with evidence."""
    rows: list[asyncpg.Record] = await pool.fetch(LIVE_HEALTH)
    return rows


async def quarantine_entries(pool: asyncpg.Pool, include_released: bool) -> list[asyncpg.Record]:
    """Open quarantine entries (and released ones when asked), most recent first."""
    rows: list[asyncpg.Record] = await pool.fetch(QUARANTINE, include_released)
    return rows


async def tool_exists(pool: asyncpg.Pool, plugin_id: str, name: str) -> bool:
    exists: bool = await pool.fetchval(TOOL_EXISTS, plugin_id, name)
    return exists


async def recent_feedback(pool: asyncpg.Pool, plugin_id: str, name: str, limit: int) -> list[asyncpg.Record]:
    """A tool's most recent feedback first."""
    rows: list[asyncpg.Record] = await pool.fetch(RECENT_FEEDBACK, plugin_id, name, limit)
    return rows


async def event_rows(
    pool: asyncpg.Pool, table: str, since: date | None, until: date | None, after: datetime | None
) -> list[asyncpg.Record]:
    """One event table's rows of the days ``since``..``until`` (UTC, both included) that arrived after
    ``after``, in arrival order."""
    arrival = f"e.{ARRIVAL[table]}"
    rows: list[asyncpg.Record] = await pool.fetch(
        f"""{EVENT_SOURCES[table]}
            WHERE ($1::date IS NULL OR (e.occurred_at AT TIME ZONE 'UTC')::date >= $1)
              AND ($2::date IS NULL OR (e.occurred_at AT TIME ZONE 'UTC')::date <= $2)
              AND ($3::timestamptz IS NULL OR {arrival} > $3)
            ORDER BY {arrival}""",
        since,
        until,
        after,
    )
    return rows
