"""Usage memory on the real stack: a success on a tenant's selection becomes a learnt example of the tool in
that tenant's scope only (no other tenant's, not the shared one), and the selectors are told the new version
once it is committed."""

import asyncio
import json

import asyncpg
import nats.aio.msg
import numpy as np
import pytest

from tests.integration.catalog import TOOLS, eventually, plugin_sync, sync_and_wait, tool, unique
from toolsel.client import ToolselClient
from toolsel.contracts import OutcomeEvent, ReviewEvent, ToolCall, ToolReview, UsageUpdated, Verdict, subjects

VECTORS = """
SELECT v.scope, v.centroid, v.negative_centroid, v.positives, v.negatives, v.words, v.version
FROM tool_usage_vectors v JOIN tools t ON t.id = v.tool_id WHERE t.plugin_id = $1 AND t.name = $2
"""


async def test_a_success_teaches_the_tool_in_its_tenants_scope_and_is_broadcast_after_commit(
    client: ToolselClient, pool: asyncpg.Pool
) -> None:
    tenant_a, plugin = unique("a"), unique("mine")
    await sync_and_wait(client, plugin_sync(plugin, tenant_a, [tool(n) for n in TOOLS]))
    reply = await client.select(
        query="is it going to snow in Oslo", tenant_id=tenant_a, k=5, filters={"plugins": [plugin]}
    )
    assert "get_weather" in {t.name for t in reply.tools}
    broadcasts: asyncio.Queue[nats.aio.msg.Msg] = asyncio.Queue()

    async def heard(msg: nats.aio.msg.Msg) -> None:
        await broadcasts.put(msg)

    subscription = await client.nc.subscribe(subjects.USAGE_UPDATED, cb=heard)
    try:
        call = ToolCall(plugin_id=plugin, name="get_weather", success=True)
        perfect = ToolReview(plugin_id=plugin, name="get_weather", verdict=Verdict.PERFECT)
        await client.report(  # an outcome and a review of one selection: one query learnt, once
            [
                OutcomeEvent(selection_id=reply.selection_id, calls=[call]),
                ReviewEvent(selection_id=reply.selection_id, reviews=[perfect]),
            ]
        )

        async def learnt() -> list[asyncpg.Record]:
            found: list[asyncpg.Record] = await pool.fetch(VECTORS, plugin, "get_weather")
            return found

        rows = await eventually(learnt, timeout_s=30)
        notice = UsageUpdated.model_validate_json((await asyncio.wait_for(broadcasts.get(), timeout=30)).data)
    finally:
        await subscription.unsubscribe()
    assert [(r["scope"], r["positives"], r["negatives"], r["negative_centroid"], r["words"]) for r in rows] == [
        (tenant_a, 1, 0, None, ["is it going to snow in Oslo"])
    ]
    reviewed = await eventually(
        lambda: pool.fetchval("SELECT count(*) FROM reviews WHERE selection_id = $1", reply.selection_id), 30
    )
    assert reviewed == 1
    positives = await pool.fetchval(
        "SELECT count(*) FROM tool_usage_examples x JOIN tools t ON t.id = x.tool_id"
        " WHERE t.plugin_id = $1 AND t.name = 'get_weather' AND x.polarity = 1",
        plugin,
    )
    assert positives == 1
    assert notice.version >= rows[0]["version"]
    assert notice.tools >= 1
    centroid = rows[0]["centroid"].to_numpy()
    assert abs(float(np.linalg.norm(centroid)) - 1.0) < 1e-4
    assert not await pool.fetchval(
        "SELECT count(*) FROM tool_usage_examples x JOIN tools t ON t.id = x.tool_id"
        " WHERE t.plugin_id = $1 AND x.scope <> $2",
        plugin,
        tenant_a,
    ), "another scope (another tenant or the shared one) learnt from tenant a"


async def learnt_words(pool: asyncpg.Pool, plugin: str, name: str, expected: list[str]) -> list[str] | None:
    """The tool's learnt words once they are ``expected`` (None if they never become so)."""

    async def current() -> tuple[list[str]] | None:
        found: list[str] | None = await pool.fetchval(
            "SELECT v.words FROM tool_usage_vectors v JOIN tools t ON t.id = v.tool_id"
            " WHERE t.plugin_id = $1 AND t.name = $2",
            plugin,
            name,
        )
        return (found,) if found == expected else None

    settled = await eventually(current, timeout_s=30)
    return None if settled is None else settled[0]


async def test_a_query_that_taught_two_tools_is_the_learnt_words_of_neither(
    client: ToolselClient, pool: asyncpg.Pool
) -> None:
    """Its outcome teaches the flight tool alone (its words count), then a review says the email tool served it
    too: a request served by several tools names them all, so neither keeps its words (the flight tool's vector
    is recomputed though the review did not name it)."""
    tenant, plugin = unique("t"), unique("mine")
    await sync_and_wait(client, plugin_sync(plugin, tenant, [tool(n) for n in TOOLS]))
    query = "email my boss the booking of the flight to Rome"
    reply = await client.select(query=query, tenant_id=tenant, k=10, filters={"plugins": [plugin]})
    assert reply.sub_queries == []  # one need, not split
    assert {"search_flights", "send_email"} <= {t.name for t in reply.tools}
    call = ToolCall(plugin_id=plugin, name="search_flights", success=True)
    await client.report([OutcomeEvent(selection_id=reply.selection_id, calls=[call])])
    assert await learnt_words(pool, plugin, "search_flights", [query]) == [query]
    perfect = ToolReview(plugin_id=plugin, name="send_email", verdict=Verdict.PERFECT)
    await client.report([ReviewEvent(selection_id=reply.selection_id, reviews=[perfect])])
    assert await learnt_words(pool, plugin, "search_flights", []) == []
    assert await learnt_words(pool, plugin, "send_email", []) == []


async def test_each_tool_of_a_compound_query_learns_the_part_it_was_offered_for(
    client: ToolselClient, pool: asyncpg.Pool
) -> None:
    """The flight tool was offered for the first need and the email tool for the second: each learns its own
    part (vector and words), not the other need beside it."""
    tenant, plugin = unique("t"), unique("mine")
    await sync_and_wait(client, plugin_sync(plugin, tenant, [tool(n) for n in TOOLS]))
    query = "find a flight to Rome and email the booking to my boss"
    reply = await client.select(query=query, tenant_id=tenant, k=10, filters={"plugins": [plugin]})
    assert reply.sub_queries == ["find a flight to Rome", "email the booking to my boss"]
    call = ToolCall(plugin_id=plugin, name="search_flights", success=True)
    perfect = ToolReview(plugin_id=plugin, name="send_email", verdict=Verdict.PERFECT)
    await client.report(
        [
            OutcomeEvent(selection_id=reply.selection_id, calls=[call]),
            ReviewEvent(selection_id=reply.selection_id, reviews=[perfect]),
        ]
    )
    assert await learnt_words(pool, plugin, "search_flights", ["find a flight to Rome"]) == ["find a flight to Rome"]
    email = ["email the booking to my boss"]
    assert await learnt_words(pool, plugin, "send_email", email) == email


async def test_a_review_moves_the_relevant_tool_s_residual_towards_its_query(
    client: ToolselClient, pool: asyncpg.Pool
) -> None:
    """The selection records each offered tool's cosine; a review that calls one tool perfect and another
    unrelated steps the perfect one's residual towards the query (its only example, so its centroid)."""
    tenant, plugin = unique("t"), unique("mine")
    await sync_and_wait(client, plugin_sync(plugin, tenant, [tool(n) for n in TOOLS]))
    reply = await client.select(
        query="is it going to snow in Oslo", tenant_id=tenant, k=5, filters={"plugins": [plugin]}
    )
    offered = {t.name: t for t in reply.tools}
    other = next(name for name in offered if name != "get_weather")
    recorded = await eventually(
        lambda: pool.fetchval("SELECT tools FROM selection_events WHERE selection_id = $1", reply.selection_id), 30
    )
    similarities = {t["name"]: t["similarity"] for t in json.loads(recorded)}
    assert similarities == {name: t.breakdown.similarity for name, t in offered.items()}
    reviews = [
        ToolReview(plugin_id=plugin, name="get_weather", verdict=Verdict.PERFECT),
        ToolReview(plugin_id=plugin, name=other, verdict=Verdict.UNRELATED),
    ]
    await client.report([ReviewEvent(selection_id=reply.selection_id, reviews=reviews)])

    async def residual() -> asyncpg.Record | None:
        row: asyncpg.Record | None = await pool.fetchrow(
            "SELECT v.centroid, v.residual FROM tool_usage_vectors v JOIN tools t ON t.id = v.tool_id"
            " WHERE t.plugin_id = $1 AND t.name = 'get_weather' AND v.residual IS NOT NULL",
            plugin,
        )
        return row

    row = await eventually(residual, timeout_s=30)
    assert row is not None, "no residual learnt"
    moved = row["residual"].to_numpy()
    assert float(moved @ row["centroid"].to_numpy()) > 0
    assert 0 < float(np.linalg.norm(moved)) <= 1.0
    # The tenant's first ranked query stepped along itself, and is now what its next steps are centred on.
    totals = await pool.fetchrow("SELECT total, queries FROM usage_query_totals WHERE scope = $1", tenant)
    assert totals["queries"] == 1
    assert float(totals["total"].to_numpy() @ row["centroid"].to_numpy()) == pytest.approx(1.0, abs=1e-5)
