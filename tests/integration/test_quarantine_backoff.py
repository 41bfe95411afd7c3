"""The quarantine's release delay, in the real store: a tool that fails again on probation waits twice as long
before its next retry (up to the cap); a fresh quarantine starts over."""

import asyncpg

from tests.integration.catalog import plugin_sync, sync_and_wait, tool, unique
from toolsel.client import ToolselClient
from toolsel.store import learning

AFTER_S, MAX_S = 5.0, 12.0


async def quarantined_for(conn: asyncpg.Connection, tool_id: int, seconds: float) -> None:
    """Pretend the open quarantine began ``seconds`` ago."""
    await conn.execute(
        "UPDATE tool_quarantine SET since = now() - make_interval(secs => $2) WHERE tool_id = $1", tool_id, seconds
    )


async def due(conn: asyncpg.Connection, tool_id: int) -> bool:
    return tool_id in await learning.due_for_release(conn, AFTER_S, MAX_S)


async def strikes(conn: asyncpg.Connection, tool_id: int) -> int:
    value: int = await conn.fetchval("SELECT strikes FROM tool_quarantine WHERE tool_id = $1", tool_id)
    return value


async def test_each_failure_on_probation_doubles_the_wait_up_to_the_cap(
    client: ToolselClient, pool: asyncpg.Pool
) -> None:
    plugin = unique("backoff")
    await sync_and_wait(client, plugin_sync(plugin, unique("tenant"), [tool("get_weather")]))
    async with pool.acquire() as conn:
        transaction = conn.transaction()  # rolled back at the end: the running learner never sees any of it
        await transaction.start()
        try:
            await check_backoff(conn, await conn.fetchval("SELECT id FROM tools WHERE plugin_id = $1", plugin))
        finally:
            await transaction.rollback()


async def check_backoff(conn: asyncpg.Connection, tool_id: int) -> None:
    await learning.quarantine(conn, {tool_id: "failing"})
    assert await strikes(conn, tool_id) == 1
    await quarantined_for(conn, tool_id, 4)
    assert not await due(conn, tool_id)
    await quarantined_for(conn, tool_id, 6)
    assert await due(conn, tool_id)  # 5 s

    await learning.release(conn, [tool_id], "timer", "probation", 1.0)
    await learning.quarantine(conn, {tool_id: "failing on probation"}, again=[tool_id])
    assert await strikes(conn, tool_id) == 2
    await quarantined_for(conn, tool_id, 8)
    assert not await due(conn, tool_id)
    await quarantined_for(conn, tool_id, 11)
    assert await due(conn, tool_id)  # 10 s

    await learning.release(conn, [tool_id], "timer", "probation", 1.0)
    await learning.quarantine(conn, {tool_id: "failing on probation"}, again=[tool_id])
    assert await strikes(conn, tool_id) == 3
    await quarantined_for(conn, tool_id, 13)
    assert tool_id not in await learning.due_for_release(conn, AFTER_S, 100.0)  # 20 s
    assert await due(conn, tool_id)  # capped at 12 s

    await learning.release(conn, [tool_id], "ops", "probation", 1.0)
    await learning.quarantine(conn, {tool_id: "failing"})  # not from probation: a fresh quarantine
    assert await strikes(conn, tool_id) == 1
