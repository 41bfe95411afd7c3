"""Quarantine entries: written when a tool's state machine trips, released by an operator or by the timer.

A released tool goes on probation (``degradation.release``); the selector skips a tool only while its
quarantine entry is unreleased.
"""

from collections.abc import Mapping, Sequence

import asyncpg

from contracts import ErrorCode, ToolStateChanged
from services.learner.degradation import Health, release

RECORD = """
INSERT INTO tool_quarantine AS q (tool_id, reason)
SELECT * FROM unnest($1::bigint[], $2::text[])
ON CONFLICT (tool_id) DO UPDATE SET reason = excluded.reason, since = now(), released_at = NULL, released_by = NULL
"""

RELEASE = """
UPDATE tool_quarantine SET released_at = now(), released_by = $2
WHERE tool_id = ANY($1::bigint[]) AND released_at IS NULL
RETURNING tool_id
"""

ON_PROBATION = """
UPDATE tool_quality SET state = $2, rolling_score = $3, degraded_since = NULL, consecutive_degraded = 0,
    probation_calls = 0, state_changed_at = now()
WHERE tool_id = ANY($1::bigint[])
"""


class ReleaseRefused(Exception):
    """Why an operator's release cannot be done (no such tool, or it is not quarantined)."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code


async def record_quarantines(conn: asyncpg.Connection, reasons: Mapping[int, str]) -> None:
    """Quarantine these tools with their reasons (again, when an earlier quarantine was released)."""
    if reasons:
        ordered = sorted(reasons.items())
        await conn.execute(RECORD, [t for t, _ in ordered], [r for _, r in ordered])


async def _release(conn: asyncpg.Connection, tool_ids: Sequence[int], by: str) -> list[ToolStateChanged]:
    # quality rows first, in id order, as an outcome batch locks them: no deadlock with a batch in flight
    await conn.execute(
        "SELECT 1 FROM tool_quality WHERE tool_id = ANY($1::bigint[]) ORDER BY tool_id FOR UPDATE", list(tool_ids)
    )
    released = [r["tool_id"] for r in await conn.fetch(RELEASE, sorted(tool_ids), by)]
    if not released:
        return []
    probation = release(Health())
    await conn.execute(ON_PROBATION, released, probation.state.value, probation.score)
    rows = await conn.fetch("SELECT plugin_id, name FROM tools WHERE id = ANY($1::bigint[]) ORDER BY id", released)
    return [
        ToolStateChanged(plugin_id=r["plugin_id"], name=r["name"], state=probation.state, reason=f"released by {by}")
        for r in rows
    ]


async def release_tool(pool: asyncpg.Pool, plugin_id: str, name: str, by: str) -> ToolStateChanged:
    """An operator's release of one quarantined tool."""
    async with pool.acquire() as conn, conn.transaction():
        tool_id = await conn.fetchval("SELECT id FROM tools WHERE plugin_id = $1 AND name = $2", plugin_id, name)
        if tool_id is None:
            raise ReleaseRefused(ErrorCode.NOT_FOUND, f"no tool {plugin_id}/{name}")
        changed = await _release(conn, [tool_id], by)
        if not changed:
            raise ReleaseRefused(ErrorCode.CONFLICT, f"{plugin_id}/{name} is not quarantined")
        return changed[0]


async def release_due(pool: asyncpg.Pool, after_s: float) -> list[ToolStateChanged]:
    """Release every tool quarantined for ``after_s`` seconds or more (several learners: each tool once)."""
    async with pool.acquire() as conn, conn.transaction():
        due = await conn.fetch(
            "SELECT tool_id FROM tool_quarantine"
            " WHERE released_at IS NULL AND since <= now() - make_interval(secs => $1)",
            after_s,
        )
        return await _release(conn, [r["tool_id"] for r in due], "timer")
