"""Read-only queries over what the learner stored, for operators (quality, quarantine, feedback) and analytics.

Each tool's health is read from the ``tool_health`` view (migration 003), defined once for both.
"""

from collections.abc import Mapping
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
    "selections": """SELECT selection_id::text AS selection_id, occurred_at, stored_at, tenant_id, user_id, session_id,
        query, page, tier, role, intent, context_key, method, tools::text AS tools, candidate_count, latency_ms,
        tokens_selected, tokens_catalog FROM selection_events e""",
    "outcomes": """SELECT e.event_id::text AS event_id, e.selection_id::text AS selection_id, s.tenant_id,
        e.occurred_at, e.applied_at, e.calls::text AS calls
        FROM outcomes e LEFT JOIN selection_events s ON s.selection_id = e.selection_id""",
    "reviews": """SELECT e.event_id::text AS event_id, e.selection_id::text AS selection_id, s.tenant_id,
        e.occurred_at, e.applied_at, e.none_of_these, e.reviews::text AS reviews
        FROM reviews e LEFT JOIN selection_events s ON s.selection_id = e.selection_id""",
    "feedback": """SELECT e.event_id::text AS event_id, t.plugin_id, t.name, e.tenant_id, e.rating, e.comment,
        e.author, e.occurred_at, e.applied_at FROM tool_feedback e JOIN tools t ON t.id = e.tool_id""",
}
"""The event history's tables as analytics reads them (nested lists as JSON text); an outcome or review is its
selection's tenant's (none when its selection is not stored)."""
TENANT: Final = {
    "selections": "e.tenant_id",
    "outcomes": "s.tenant_id",
    "reviews": "s.tenant_id",
    "feedback": "e.tenant_id",
}
"""Each table's tenant, as its source names it."""
ARRIVAL: Final = {
    "selections": "stored_at",
    "outcomes": "applied_at",
    "reviews": "applied_at",
    "feedback": "applied_at",
}
"""When a row reached the store, by the store's clock (never a sender's or a selector's, which may run ahead):
what an incremental export follows."""
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


WINDOW = """($1::date IS NULL OR (e.occurred_at AT TIME ZONE 'UTC')::date >= $1)
    AND ($2::date IS NULL OR (e.occurred_at AT TIME ZONE 'UTC')::date <= $2)"""
"""The UTC days ``$1``..``$2`` (both included; NULL: unbounded) of an event aliased ``e``."""


def event_query(table: str) -> str:
    """One event table's rows in the window (``WINDOW``) that arrived after ``$3`` (NULL: any) of tenant ``$4``
    (NULL: every tenant), in arrival order."""
    arrival = f"e.{ARRIVAL[table]}"
    return f"""{EVENT_SOURCES[table]}
        WHERE {WINDOW} AND ($3::timestamptz IS NULL OR {arrival} > $3) AND ($4::text IS NULL OR {TENANT[table]} = $4)
        ORDER BY {arrival}"""


async def event_rows(
    pool: asyncpg.Pool,
    table: str,
    since: date | None,
    until: date | None,
    after: datetime | None = None,
    tenant: str | None = None,
) -> list[asyncpg.Record]:
    """One event table's rows of the days ``since``..``until`` (UTC, both included) that arrived after ``after``,
    of ``tenant`` (None: every tenant), in arrival order."""
    rows: list[asyncpg.Record] = await pool.fetch(event_query(table), since, until, after, tenant)
    return rows


async def event_snapshot(
    pool: asyncpg.Pool,
    since: date | None,
    until: date | None,
    after: Mapping[str, datetime | None],
    tenant: str | None = None,
) -> dict[str, list[asyncpg.Record]]:
    """Every event table's ``event_rows`` (each after its own ``after``) as of one moment: read in one read-only
    REPEATABLE READ transaction, so an outcome read is never of a selection stored after the selections were read."""
    async with pool.acquire() as conn, conn.transaction(isolation="repeatable_read", readonly=True):
        return {
            table: await conn.fetch(event_query(table), since, until, after.get(table), tenant)
            for table in EVENT_TABLES
        }


HEATMAP_CELLS = f"""
SELECT (t ->> 'plugin_id') || '/' || (t ->> 'name') AS tool, e.page, count(*) AS count
FROM selection_events e CROSS JOIN jsonb_array_elements(e.tools) t
WHERE {WINDOW} AND ($3::text IS NULL OR e.tenant_id = $3)
GROUP BY 1, 2
"""
SELECTION_METRICS = f"""
WITH s AS (
    SELECT e.selection_id, e.method, e.latency_ms, e.tokens_catalog - e.tokens_selected AS saved
    FROM selection_events e WHERE {WINDOW} AND ($3::text IS NULL OR e.tenant_id = $3)
), o AS (
    SELECT e.selection_id, count(c.value) AS calls, bool_or(NOT (c.value ->> 'success')::boolean) AS failed
    FROM outcomes e LEFT JOIN LATERAL jsonb_array_elements(e.calls) c ON true
    WHERE {WINDOW} AND e.selection_id IN (SELECT selection_id FROM s)
    GROUP BY e.selection_id
), kinds AS (
    SELECT s.*, CASE WHEN o.selection_id IS NULL THEN 'no_outcome' WHEN o.failed THEN 'failure'
                     WHEN o.calls > 0 THEN 'success' ELSE 'not_called' END AS outcome
    FROM s LEFT JOIN o USING (selection_id)
)
SELECT count(*) AS selections,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY latency_ms) AS latency_p50_ms,
       percentile_cont(0.95) WITHIN GROUP (ORDER BY latency_ms) AS latency_p95_ms,
       percentile_cont(0.99) WITHIN GROUP (ORDER BY latency_ms) AS latency_p99_ms,
       (SELECT coalesce(jsonb_object_agg(method, n), '{{}}')::text
        FROM (SELECT method, count(*) AS n FROM kinds GROUP BY method) m) AS methods,
       (SELECT coalesce(jsonb_object_agg(outcome, n), '{{}}')::text
        FROM (SELECT outcome, count(*) AS n FROM kinds GROUP BY outcome) k) AS outcomes,
       avg(saved)::float8 AS average_tokens_saved
FROM kinds
"""


async def heatmap_cells(
    pool: asyncpg.Pool, since: date | None, until: date | None, tenant: str | None
) -> list[asyncpg.Record]:
    """How often each tool (``plugin/name``) was selected on each page in the window: tool, page, count
    (``toolsel.analytics.metrics.heatmap`` of the same selections, unordered)."""
    rows: list[asyncpg.Record] = await pool.fetch(HEATMAP_CELLS, since, until, tenant)
    return rows


async def selection_metrics(
    pool: asyncpg.Pool, since: date | None, until: date | None, tenant: str | None
) -> asyncpg.Record:
    """``toolsel.analytics.metrics.selection_metrics`` of the window, counted by the database (methods and
    outcomes as JSON objects): one row whatever the history's size reaches the learner."""
    row: asyncpg.Record = await pool.fetchrow(SELECTION_METRICS, since, until, tenant)
    return row
