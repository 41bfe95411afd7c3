"""The whole loop through NATS: sync, select, report outcomes, and the next answer reflects them."""

import asyncio
from uuid import uuid4

import asyncpg
import pytest

from tests.integration.catalog import TOOLS, eventually, plugin_sync, sync_and_wait, tool, unique
from toolsel.client import ToolselClient
from toolsel.contracts import OutcomeEvent, SelectReply, ToolCall
from toolsel.settings import Settings


async def test_sync_then_select_finds_the_right_tool(client: ToolselClient) -> None:
    tenant = unique("tenant")
    report = await sync_and_wait(client, plugin_sync(unique("mail"), tenant, [tool(n) for n in TOOLS]))
    assert (report.inserted, report.embedded, report.unchanged) == (5, 5, 0)

    reply = await client.select(query="please email the report to my manager", tenant_id=tenant, k=3, dry_run=True)
    assert reply.tools[0].name == "send_email"
    assert reply.tools[0].breakdown.similarity > reply.tools[1].breakdown.similarity
    assert reply.tools[0].parameters["required"] == ["query"]
    assert reply.candidate_counts["visible"] == 5
    assert reply.tokens.selected < reply.tokens.catalog


async def test_outcomes_move_the_posteriors_and_the_next_order(client: ToolselClient, pool: asyncpg.Pool) -> None:
    tenant, plugin = unique("tenant"), unique("travel")
    await sync_and_wait(client, plugin_sync(plugin, tenant, [tool(n) for n in TOOLS]))
    query = "book a trip to Rome"
    before = await client.select(query=query, tenant_id=tenant, k=5, dry_run=True, seed=3)
    first, second = before.tools[0], before.tools[1]

    for _ in range(12):
        reply = await client.select(query=query, tenant_id=tenant, k=5, seed=3)
        shown = {t.key for t in reply.tools}
        assert {first.key, second.key} <= shown
        await client.report(
            [
                OutcomeEvent(
                    selection_id=reply.selection_id,
                    calls=[
                        ToolCall(plugin_id=plugin, name=first.name, success=False, latency_ms=900),
                        ToolCall(plugin_id=plugin, name=second.name, success=True, latency_ms=40, rating=0.9),
                    ],
                )
            ]
        )

    # each outcome discounts the evidence before it (Settings.posterior_discount): 12 successes weigh less than 12
    discount = Settings().posterior_discount
    learnt_alpha = 1.0 + sum(discount**i for i in range(12))

    async def learnt() -> SelectReply | None:
        now = await client.select(query=query, tenant_id=tenant, k=5, dry_run=True, seed=3)
        done = now.tools[0].key == second.key and now.tools[0].breakdown.alpha == pytest.approx(learnt_alpha)
        return now if done else None

    after = await eventually(learnt)
    assert after is not None, "the tool that worked did not move to the top"
    top = after.tools[0].breakdown
    assert (top.alpha, top.beta) == (pytest.approx(learnt_alpha), 1.0)
    stats = await pool.fetchrow(
        "SELECT s.alpha, s.beta, s.successes, s.failures FROM tool_bandit_stats s JOIN tools t ON t.id = s.tool_id"
        " WHERE t.plugin_id = $1 AND t.name = $2",
        plugin,
        first.name,
    )
    assert (stats["alpha"], stats["successes"], stats["failures"]) == (1.0, 0, 12)
    assert stats["beta"] == pytest.approx(learnt_alpha)


async def test_duplicate_outcome_changes_nothing(client: ToolselClient, pool: asyncpg.Pool) -> None:
    tenant, plugin = unique("tenant"), unique("dup")
    await sync_and_wait(client, plugin_sync(plugin, tenant, [tool("get_weather"), tool("send_email")]))
    reply = await client.select(query="weather in Oslo", tenant_id=tenant, k=2)
    event = OutcomeEvent(
        selection_id=reply.selection_id, calls=[ToolCall(plugin_id=plugin, name="get_weather", success=True)]
    )
    await client.report([event])
    await client.report([event.model_copy(update={})])  # redelivered: same event id

    async def stats() -> asyncpg.Record | None:
        return await pool.fetchrow(
            "SELECT s.alpha, s.selections FROM tool_bandit_stats s JOIN tools t ON t.id = s.tool_id"
            " WHERE t.plugin_id = $1 AND t.name = 'get_weather'",
            plugin,
        )

    row = await eventually(stats)
    await asyncio.sleep(1.0)  # give a second application the time it would need
    row = await stats()
    assert row is not None
    assert (row["alpha"], row["selections"]) == (2.0, 1)
    assert await pool.fetchval("SELECT count(*) FROM outcomes WHERE event_id = $1", event.event_id) == 1


async def test_outcome_before_its_selection_is_applied_when_the_selection_arrives(
    client: ToolselClient, pool: asyncpg.Pool
) -> None:
    """Out of order: the learner retries an outcome whose selection event it has not stored yet."""
    tenant, plugin = unique("tenant"), unique("order")
    await sync_and_wait(client, plugin_sync(plugin, tenant, [tool("translate_text")]))
    reply = await client.select(query="translate hello to French", tenant_id=tenant, k=1, dry_run=True)
    outcome = OutcomeEvent(
        selection_id=uuid4(), calls=[ToolCall(plugin_id=plugin, name="translate_text", success=True)]
    )
    await client.report([outcome])
    # the selection event arrives after the outcome (published as the selector would)
    from toolsel.contracts import SelectedTool, SelectionEvent, subjects

    selection = SelectionEvent(
        selection_id=outcome.selection_id,
        tenant_id=tenant,
        query="translate hello to French",
        tier="free",
        context_key=reply.context_key,
        method="vector",
        tools=[SelectedTool(plugin_id=plugin, name="translate_text", rank=0, score=0.5)],
        candidate_count=1,
        latency_ms=1.0,
        tokens_selected=10,
        tokens_catalog=10,
    )
    await client.nc.jetstream().publish(subjects.SELECTION_EVENTS, selection.model_dump_json().encode())

    async def applied() -> bool:
        return bool(await pool.fetchval("SELECT count(*) FROM outcomes WHERE event_id = $1", outcome.event_id))

    assert await eventually(applied)


@pytest.mark.parametrize("tenant_sees_other", [False])
async def test_tenant_isolation(client: ToolselClient, tenant_sees_other: bool) -> None:
    mine, theirs = unique("tenant"), unique("tenant")
    await sync_and_wait(client, plugin_sync(unique("mine"), mine, [tool("get_weather")]))
    await sync_and_wait(client, plugin_sync(unique("theirs"), theirs, [tool("send_email")]))
    reply = await client.select(query="send an email", tenant_id=mine, k=5, dry_run=True)
    assert [t.name for t in reply.tools] == ["get_weather"]
