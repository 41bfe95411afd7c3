"""Quarantine releases: by an operator or by the timer. (Entries are written when a tool's state machine trips,
with the outcome batch that tripped it.)

A released tool goes on probation (``degradation.release``); the selector skips a tool for a tenant only while
its quarantine entry for that tenant is unreleased.
"""

from collections.abc import Collection

import asyncpg

from toolsel.contracts import ErrorCode, ToolStateChanged
from toolsel.services.learner.degradation import DegradationPolicy, release
from toolsel.store import learning


class ReleaseRefused(Exception):
    """Why an operator's release cannot be done (no such tool, or it is not quarantined)."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code


async def _release(
    conn: asyncpg.Connection, keys: Collection[learning.QualityKey], by: str, policy: DegradationPolicy
) -> list[ToolStateChanged]:
    probation = release(policy)
    released = await learning.release(conn, keys, by, probation.state.value, probation.score)
    if not released:
        return []
    names = await learning.tool_keys(conn, {tool for tool, _ in released})
    return [
        ToolStateChanged(
            plugin_id=names[tool][0],
            name=names[tool][1],
            tenant_id=tenant,
            state=probation.state,
            reason=f"released by {by}",
        )
        for tool, tenant in released
    ]


async def release_tool(
    pool: asyncpg.Pool, plugin_id: str, name: str, tenant: str | None, by: str, policy: DegradationPolicy
) -> list[ToolStateChanged]:
    """An operator's release of one quarantined tool, for ``tenant`` or (None) every tenant it is quarantined
    for."""
    async with pool.acquire() as conn, conn.transaction():
        tool_id = await learning.tool_id(conn, plugin_id, name)
        if tool_id is None:
            raise ReleaseRefused(ErrorCode.NOT_FOUND, f"no tool {plugin_id}/{name}")
        keys = [k for k in await learning.open_quarantines(conn, tool_id) if tenant in (None, k[1])]
        changed = await _release(conn, keys, by, policy)
        if not changed:
            scope = "" if tenant is None else f" for {tenant}"
            raise ReleaseRefused(ErrorCode.CONFLICT, f"{plugin_id}/{name} is not quarantined{scope}")
        return changed


async def release_due(
    pool: asyncpg.Pool, after_s: float, max_s: float, policy: DegradationPolicy
) -> list[ToolStateChanged]:
    """Release every quarantine that has lasted its delay: ``after_s``, doubled for each time in a row the tool
    failed again on probation for that tenant, at most ``max_s`` (several learners: each once)."""
    async with pool.acquire() as conn, conn.transaction():
        return await _release(conn, await learning.due_for_release(conn, after_s, max_s), "timer", policy)
