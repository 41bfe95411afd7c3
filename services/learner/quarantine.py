"""Quarantine releases: by an operator or by the timer. (Entries are written when a tool's state machine trips,
with the outcome batch that tripped it.)

A released tool goes on probation (``degradation.release``); the selector skips a tool only while its
quarantine entry is unreleased.
"""

from collections.abc import Sequence

import asyncpg

from contracts import ErrorCode, ToolStateChanged
from services.learner.degradation import DegradationPolicy, release
from toolsel.store import learning


class ReleaseRefused(Exception):
    """Why an operator's release cannot be done (no such tool, or it is not quarantined)."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code


async def _release(
    conn: asyncpg.Connection, tool_ids: Sequence[int], by: str, policy: DegradationPolicy
) -> list[ToolStateChanged]:
    probation = release(policy)
    released = await learning.release(conn, tool_ids, by, probation.state.value, probation.score)
    if not released:
        return []
    return [
        ToolStateChanged(plugin_id=plugin_id, name=name, state=probation.state, reason=f"released by {by}")
        for plugin_id, name in await learning.tool_keys(conn, released)
    ]


async def release_tool(
    pool: asyncpg.Pool, plugin_id: str, name: str, by: str, policy: DegradationPolicy
) -> ToolStateChanged:
    """An operator's release of one quarantined tool."""
    async with pool.acquire() as conn, conn.transaction():
        tool_id = await learning.tool_id(conn, plugin_id, name)
        if tool_id is None:
            raise ReleaseRefused(ErrorCode.NOT_FOUND, f"no tool {plugin_id}/{name}")
        changed = await _release(conn, [tool_id], by, policy)
        if not changed:
            raise ReleaseRefused(ErrorCode.CONFLICT, f"{plugin_id}/{name} is not quarantined")
        return changed[0]


async def release_due(
    pool: asyncpg.Pool, after_s: float, max_s: float, policy: DegradationPolicy
) -> list[ToolStateChanged]:
    """Release every tool whose quarantine has lasted its delay: ``after_s``, doubled for each time in a row it
    failed again on probation, at most ``max_s`` (several learners: each tool once)."""
    async with pool.acquire() as conn, conn.transaction():
        return await _release(conn, await learning.due_for_release(conn, after_s, max_s), "timer", policy)
