"""The quarantine's release delay, in the real store: a tool that fails again on probation waits twice as long
before its next retry (up to the cap); a fresh quarantine starts over."""

import asyncpg

from tests.integration.catalog import plugin_sync, sync_and_wait, tool, unique
from toolsel.client import ToolselClient
from toolsel.store import learning
from toolsel.store.learning import QualityKey

AFTER_S, MAX_S = 5.0, 12.0


async def due_after(conn: asyncpg.Connection, key: QualityKey, seconds: float, max_s: float = MAX_S) -> bool:
    """Whether the open quarantine is due for release had it begun ``seconds`` ago."""
    await conn.execute(
        "UPDATE tool_quarantine SET since = now() - make_interval(secs => $3) WHERE tool_id = $1 AND tenant_id = $2",
        *key,
        seconds,
    )
    return key in await learning.due_for_release(conn, AFTER_S, max_s)


async def fail_on_probation(conn: asyncpg.Connection, key: QualityKey) -> None:
    """Released by the timer, then quarantined again straight from probation."""
    await learning.release(conn, [key], "timer", "probation", 1.0)
    await learning.quarantine(conn, {key: "failing on probation"}, again=[key])


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
    for strike, (early, late) in enumerate(((4, 6), (8, 11)), start=1):  # due after 5 s, then 10 s
        if strike > 1:
            await fail_on_probation(conn, key)
        assert await strikes(conn, key) == strike
        assert not await due_after(conn, key, early)
        assert await due_after(conn, key, late)

    await fail_on_probation(conn, key)
    assert await strikes(conn, key) == 3
    assert not await due_after(conn, key, 13, max_s=100.0)  # 20 s
    assert await due_after(conn, key, 13)  # capped at 12 s

    await learning.release(conn, [key], "ops", "probation", 1.0)
    await learning.quarantine(conn, {key: "failing"})  # not from probation: a fresh quarantine
    assert await strikes(conn, key) == 1
