"""Through NATS with the real services: a broken tool is quarantined, dropped, and released by an operator; a
shared tool failing for one tenant is quarantined for that tenant alone."""

import json
from collections.abc import Awaitable, Callable

import asyncpg
import pytest

from tests.integration.catalog import eventually, plugin_sync, sync_and_wait, tool, unique
from toolsel.client import ToolselClient, ToolselError
from toolsel.contracts import (
    ErrorCode,
    OutcomeEvent,
    QuarantineRelease,
    ToolCall,
    ToolState,
    ToolStateChanged,
    subjects,
)
from toolsel.contracts.admin import QuarantineList, QuarantineQuery, QuarantineReleased
from toolsel.messaging import consumer_settled
from toolsel.store import readmodels

FAILURES_TO_QUARANTINE = 18
"""With the default window (20 calls), threshold (0.3) and quarantine_after (5): 13 failures warn, the 14th
degrades, the 18th is the fifth consecutive degraded call."""


async def release(client: ToolselClient, plugin: str, name: str, tenant: str | None = None) -> list[ToolStateChanged]:
    request = QuarantineRelease(plugin_id=plugin, name=name, tenant_id=tenant, released_by="ops")
    return (await client.admin(subjects.ADMIN_QUARANTINE_RELEASE, request, QuarantineReleased)).changes


async def fail(client: ToolselClient, tenant: str, plugin: str, name: str, times: int) -> None:
    """Report a failed call of the tool ``times``, each for a selection of its own: one actor's failures count
    only ``learning_credits_per_actor`` times per tool."""
    for _ in range(times):
        reply = await client.select(query="weather in Oslo", tenant_id=tenant, k=2)
        call = ToolCall(plugin_id=plugin, name=name, success=False, latency_ms=30, error="HTTP 500")
        await client.report([OutcomeEvent(selection_id=reply.selection_id, calls=[call])])


async def selected(client: ToolselClient, tenant: str, query: str) -> set[str]:
    return {t.name for t in (await client.select(query=query, tenant_id=tenant, k=5, dry_run=True)).tools}


async def test_broken_tool_is_quarantined_dropped_and_released(client: ToolselClient, pool: asyncpg.Pool) -> None:
    tenant, plugin = unique("tenant"), unique("flaky")
    await sync_and_wait(client, plugin_sync(plugin, tenant, [tool("get_weather"), tool("send_email")]))
    changes = await client.nc.subscribe(subjects.TOOL_STATE_CHANGED)
    asked = await client.select(query="weather in Oslo", tenant_id=tenant, dry_run=True)
    assert asked.intent == f"{plugin}/get_weather"

    await fail(client, tenant, plugin, "get_weather", FAILURES_TO_QUARANTINE)

    seen: list[ToolState] = []
    while ToolState.QUARANTINED not in seen:
        change = ToolStateChanged.model_validate_json((await changes.next_msg(timeout=60)).data)
        if change.plugin_id == plugin:
            seen.append(change.state)
            assert change.tenant_id == tenant
    await changes.unsubscribe()
    assert seen == [ToolState.WARNING, ToolState.DEGRADED, ToolState.QUARANTINED]

    async def dropped() -> bool:
        return "get_weather" not in await selected(client, tenant, "weather in Oslo")

    async def back() -> bool:
        return "get_weather" in await selected(client, tenant, "weather in Oslo")

    assert await eventually(dropped), "the quarantined tool is still selected"
    # the failures were learnt under the label the tool gave the query: the query still reads them
    assert (
        await client.select(query="weather in Oslo", tenant_id=tenant, dry_run=True)
    ).context_key == asked.context_key
    row = await pool.fetchrow(
        "SELECT q.reason, q.released_at, h.state, h.degraded_since, h.failures FROM tool_quarantine q"
        " JOIN tool_quality h USING (tool_id, tenant_id) JOIN tools t ON t.id = q.tool_id WHERE t.plugin_id = $1",
        plugin,
    )
    assert "5 consecutive degraded calls" in row["reason"]
    assert row["released_at"] is None
    assert (row["state"], row["failures"]) == ("quarantined", FAILURES_TO_QUARANTINE)
    assert row["degraded_since"] is not None

    with pytest.raises(ToolselError) as not_quarantined:
        await release(client, plugin, "send_email")
    assert not_quarantined.value.detail.code == ErrorCode.CONFLICT
    with pytest.raises(ToolselError) as unknown:
        await release(client, plugin, "no_such_tool")
    assert unknown.value.detail.code == ErrorCode.NOT_FOUND

    [released] = await release(client, plugin, "get_weather")
    assert (released.tenant_id, released.state, released.reason) == (tenant, ToolState.PROBATION, "released by ops")
    assert await eventually(back), "the released tool did not come back"
    assert (
        await pool.fetchval(
            "SELECT h.state FROM tool_quality h JOIN tools t ON t.id = h.tool_id WHERE t.plugin_id = $1", plugin
        )
        == "probation"
    )


async def test_release_without_the_admin_token_is_refused(client: ToolselClient) -> None:
    request = QuarantineRelease(plugin_id="any", name="tool", admin_token="wrong")
    with pytest.raises(ToolselError) as refused:
        await client.admin(subjects.ADMIN_QUARANTINE_RELEASE, request, QuarantineReleased)
    assert (refused.value.detail.code, refused.value.detail.field) == (ErrorCode.UNAUTHORIZED, "admin_token")


async def test_a_shared_tool_failing_for_one_tenant_is_quarantined_for_that_tenant_alone(
    client: ToolselClient, pool: asyncpg.Pool
) -> None:
    """A tenant's failures quarantine a shared tool for that tenant: another tenant that
    sees the tool keeps it, and an operator releases each tenant's quarantine on its own."""
    noisy, quiet, plugin = unique("noisy"), unique("quiet"), unique("shared")
    await client.sync(plugin_sync(plugin, "*", [tool("get_weather"), tool("send_email")]))  # shared
    query = "weather in Oslo"

    try:

        async def synced() -> bool:
            return "get_weather" in await selected(client, quiet, query)

        assert await eventually(synced), "the selector did not pick up the sync"
        await fail(client, noisy, plugin, "get_weather", FAILURES_TO_QUARANTINE)

        async def dropped_for_noisy() -> bool:
            return "get_weather" not in await selected(client, noisy, query)

        assert await eventually(dropped_for_noisy), "the tool is still selected for the tenant it failed for"
        assert "get_weather" in await selected(client, quiet, query)
        listed = await client.admin(subjects.ADMIN_QUARANTINE_LIST, QuarantineQuery(), QuarantineList)
        assert [e.tenant_id for e in listed.entries if e.plugin_id == plugin] == [noisy]

        with pytest.raises(ToolselError) as not_for_quiet:
            await release(client, plugin, "get_weather", quiet)
        assert not_for_quiet.value.detail.code == ErrorCode.CONFLICT
        [released] = await release(client, plugin, "get_weather", noisy)
        assert (released.tenant_id, released.state) == (noisy, ToolState.PROBATION)

        async def back_for_noisy() -> bool:
            return "get_weather" in await selected(client, noisy, query)

        assert await eventually(back_for_noisy), "the released tool did not come back"
    finally:  # shared tools are offered to every tenant: leave none behind for the tests that follow
        await client.sync(plugin_sync(plugin, "*", []))


async def test_a_release_for_a_malformed_tenant_is_refused_as_invalid(client: ToolselClient) -> None:
    body = {"plugin_id": "any", "name": "tool", "tenant_id": "not a tenant!", "admin_token": client.admin_token}
    with pytest.raises(ToolselError) as refused:
        await client.request(subjects.ADMIN_QUARANTINE_RELEASE, json.dumps(body).encode(), QuarantineReleased)
    assert (refused.value.detail.code, refused.value.detail.field) == (ErrorCode.INVALID_REQUEST, "tenant_id")


async def test_one_actors_flood_of_failures_counts_a_bounded_number_of_times(
    client: ToolselClient, pool: asyncpg.Pool
) -> None:
    """25 failed calls reported on one selection (its own actor) count as 3 (``learning_credits_per_actor``):
    the tool is not quarantined, nor even warned about."""
    tenant, plugin = unique("tenant"), unique("flood")
    await sync_and_wait(client, plugin_sync(plugin, tenant, [tool("get_weather"), tool("send_email")]))
    reply = await client.select(query="weather in Oslo", tenant_id=tenant, k=2)
    call = ToolCall(plugin_id=plugin, name="get_weather", success=False, error="HTTP 500")
    await client.report([OutcomeEvent(selection_id=reply.selection_id, calls=[call]) for _ in range(25)])

    async def counted() -> int:
        rows = await readmodels.tool_health(pool, plugin, "get_weather")
        return sum(row["calls"] for row in rows if row["tenant_id"] == tenant)

    assert await eventually(lambda: _at_least(counted, 3))
    assert await eventually(lambda: consumer_settled(client.nc, f"{subjects.LEARNER_DURABLE_PREFIX}-outcome"))
    rows = [r for r in await readmodels.tool_health(pool, plugin, "get_weather") if r["tenant_id"] == tenant]
    assert [(r["calls"], r["state"]) for r in rows] == [(3, "healthy")]


async def _at_least(count: Callable[[], Awaitable[int]], n: int) -> bool:
    return await count() >= n
