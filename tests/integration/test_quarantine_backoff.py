"""The quarantine's release delay, in the real store: a tool that fails again on probation waits twice as long
before its next retry (up to the cap); a fresh quarantine starts over."""

import asyncpg

from tests.integration.catalog import plugin_sync, sync_and_wait, tool, unique
from toolsel.client import ToolselClient
from toolsel.store import learning
from toolsel.store.learning import QualityKey

AFTER_S, MAX_S = 5.0, 12.0


async def quarantined_for(conn: asyncpg.Connection, key: QualityKey, seconds: float) -> None:
    """Pretend the open quarantine began ``seconds`` ago."""
    await conn.execute(
        "UPDATE tool_quarantine SET since = now() - make_interval(secs => $3) WHERE tool_id = $1 AND tenant_id = $2",
        *key,
        seconds,
    )


async def due(conn: asyncpg.Connection, key: QualityKey) -> bool:
    return key in await learning.due_for_release(conn, AFTER_S, MAX_S)


async def strikes(conn: asyncpg.Connection, key: QualityKey) -> int:
    value: int = await conn.fetchval("SELECT strikes FROM tool_quarantine WHERE tool_id = $1 AND tenant_id = $2", *key)
    return value


async def test_each_failure_on_probation_doubles_the_wait_up_to_the_cap(
    client: ToolselClient, pool: asyncpg.Pool
) -> None:
    plugin, tenant = unique("backoff"), unique("tenant")
    await sync_and_wait(client, plugin_sync(plugin, tenant, [tool("get_weather")]))
    async with pool.acquire() as conn:
        transaction = conn.transaction()  # rolled back at the end: the running learner never sees any of it
        await transaction.start()
        try:
            await check_backoff(
                conn, (await conn.fetchval("SELECT id FROM tools WHERE plugin_id = $1", plugin), tenant)
            )
        finally:
            await transaction.rollback()


async def check_backoff(conn: asyncpg.Connection, key: QualityKey) -> None:
    await learning.quarantine(conn, {key: "failing"})
    assert await strikes(conn, key) == 1
    await quarantined_for(conn, key, 4)
    assert not await due(conn, key)
    await quarantined_for(conn, key, 6)
    assert await due(conn, key)  # 5 s

    await learning.release(conn, [key], "timer", "probation", 1.0)
    await learning.quarantine(conn, {key: "failing on probation"}, again=[key])
    assert await strikes(conn, key) == 2
    await quarantined_for(conn, key, 8)
    assert not await due(conn, key)
    await quarantined_for(conn, key, 11)
    assert await due(conn, key)  # 10 s

    await learning.release(conn, [key], "timer", "probation", 1.0)
    await learning.quarantine(conn, {key: "failing on probation"}, again=[key])
    assert await strikes(conn, key) == 3
    await quarantined_for(conn, key, 13)
    assert key not in await learning.due_for_release(conn, AFTER_S, 100.0)  # 20 s
    assert await due(conn, key)  # capped at 12 s

    await learning.release(conn, [key], "ops", "probation", 1.0)
    await learning.quarantine(conn, {key: "failing"})  # not from probation: a fresh quarantine
    assert await strikes(conn, key) == 1
