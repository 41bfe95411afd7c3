"""Delivery through NATS with the real services: duplicates, out-of-order events, reviews, a killed learner,
and the replay that rebuilds the same state."""

import asyncio
import os
import signal
from uuid import UUID, uuid4

import asyncpg
import numpy as np

from tests.integration.catalog import TOOLS, eventually, plugin_sync, sync_and_wait, tool, unique
from toolsel.client import ToolselClient
from toolsel.contracts import (
    FeedbackEvent,
    OutcomeEvent,
    ReviewEvent,
    SelectedTool,
    SelectionEvent,
    ToolCall,
    ToolReview,
    Verdict,
    subjects,
)
from toolsel.messaging import consumer_settled
from toolsel.settings import Settings
from toolsel.stack import TOOLSEL_COMMAND, Stack
from toolsel.store.catalog import review_index_version

OUTCOME_DURABLE = f"{subjects.LEARNER_DURABLE_PREFIX}-outcome"


async def publish(client: ToolselClient, subject: str, event: OutcomeEvent | ReviewEvent | FeedbackEvent) -> None:
    """Publish without a message id, so JetStream delivers a repeat and only the learner's store can dedupe."""
    await client.nc.jetstream().publish(subject, event.model_dump_json().encode())


async def toolsel(stack: Stack, *args: str) -> tuple[int, str]:
    """Run a ``toolsel`` command against the test stack; its exit code and output."""
    process = await asyncio.create_subprocess_exec(
        *TOOLSEL_COMMAND,
        *args,
        env=stack.service_env(),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await asyncio.wait_for(process.communicate(), timeout=120)
    return await process.wait(), out.decode()


async def selection(
    client: ToolselClient, pool: asyncpg.Pool, tenant: str, query: str, k: int
) -> tuple[UUID, list[str]]:
    """A recorded selection, once the learner has stored it, and the names it suggested."""
    reply = await client.select(query=query, tenant_id=tenant, k=k)

    async def stored() -> bool:
        return bool(
            await pool.fetchval("SELECT count(*) FROM selection_events WHERE selection_id = $1", reply.selection_id)
        )

    assert await eventually(stored)
    return reply.selection_id, [t.name for t in reply.tools]


async def test_duplicate_deliveries_change_nothing(client: ToolselClient, pool: asyncpg.Pool) -> None:
    tenant, plugin = unique("tenant"), unique("dupes")
    await sync_and_wait(client, plugin_sync(plugin, tenant, [tool("get_weather"), tool("send_email")]))
    selection_id, _ = await selection(client, pool, tenant, "weather in Oslo", 2)
    outcome = OutcomeEvent(
        selection_id=selection_id, calls=[ToolCall(plugin_id=plugin, name="get_weather", success=True, rating=0.5)]
    )
    feedback = FeedbackEvent(plugin_id=plugin, name="get_weather", tenant_id=tenant, rating=1.0, comment="great")
    for _ in range(3):
        await publish(client, subjects.OUTCOME_EVENTS, outcome)
        await publish(client, subjects.FEEDBACK_EVENTS, feedback)

    async def quality() -> asyncpg.Record | None:
        return await pool.fetchrow(
            "SELECT q.calls, q.rating_sum, q.rating_count, q.quality FROM tool_quality q"
            " JOIN tools t ON t.id = q.tool_id"
            " WHERE t.plugin_id = $1 AND t.name = 'get_weather' AND q.rating_count = 2",
            plugin,
        )

    assert await eventually(quality)
    health = await client.health("learner")
    await asyncio.sleep(1.0)  # time enough for the repeats to be applied, were they applied
    row = await quality()
    assert row is not None
    assert (row["calls"], row["rating_sum"], row["rating_count"], row["quality"]) == (1, 1.5, 2, 0.75)
    assert (
        await pool.fetchval(
            "SELECT s.alpha FROM tool_bandit_stats s JOIN tools t ON t.id = s.tool_id"
            " WHERE t.plugin_id = $1 AND t.name = 'get_weather'",
            plugin,
        )
        == 2.0
    )
    assert (await client.health("learner")).details["duplicates"] >= health.details["duplicates"]


async def test_review_before_its_selection_is_applied_when_the_selection_arrives(
    client: ToolselClient, pool: asyncpg.Pool
) -> None:
    tenant, plugin = unique("tenant"), unique("late")
    await sync_and_wait(client, plugin_sync(plugin, tenant, [tool("translate_text")]))
    review = ReviewEvent(
        selection_id=uuid4(), reviews=[ToolReview(plugin_id=plugin, name="translate_text", verdict=Verdict.PERFECT)]
    )
    await publish(client, subjects.REVIEW_EVENTS, review)
    late = SelectionEvent(
        selection_id=review.selection_id,
        tenant_id=tenant,
        query="translate good morning to Italian",
        tier="free",
        context_key="free::general",
        method="vector",
        tools=[SelectedTool(plugin_id=plugin, name="translate_text", rank=0, score=0.5)],
        candidate_count=1,
        latency_ms=1.0,
        tokens_selected=10,
        tokens_catalog=10,
    )
    await asyncio.sleep(0.3)
    await client.nc.jetstream().publish(subjects.SELECTION_EVENTS, late.model_dump_json().encode())

    async def logged() -> asyncpg.Record | None:
        return await pool.fetchrow("SELECT verdict, fitness FROM review_log WHERE event_id = $1", review.event_id)

    row = await eventually(logged)
    assert row is not None
    assert (row["verdict"], row["fitness"]) == ("perfect", 1.4)


async def test_none_of_these_logs_unrelated_for_every_suggestion(client: ToolselClient, pool: asyncpg.Pool) -> None:
    tenant, plugin = unique("tenant"), unique("none")
    await sync_and_wait(client, plugin_sync(plugin, tenant, [tool(n) for n in TOOLS]))
    selection_id, names = await selection(client, pool, tenant, "order a pizza with extra cheese", 3)
    review = ReviewEvent(selection_id=selection_id, none_of_these=True)
    await publish(client, subjects.REVIEW_EVENTS, review)
    await publish(client, subjects.REVIEW_EVENTS, review)  # a repeat logs nothing more

    async def logged() -> list[asyncpg.Record]:
        return await pool.fetch(
            "SELECT t.name, l.verdict, l.fitness, vector_norm(l.query_embedding) AS norm FROM review_log l"
            " JOIN tools t ON t.id = l.tool_id WHERE l.event_id = $1",
            review.event_id,
        )

    assert await eventually(logged)
    await asyncio.sleep(0.5)
    rows = await logged()
    assert sorted(r["name"] for r in rows) == sorted(names)
    assert len(names) == 3
    assert {(r["verdict"], r["fitness"]) for r in rows} == {("unrelated", 0.75)}
    assert all(abs(r["norm"] - 1.0) < 1e-4 for r in rows)
    index = await pool.fetch(
        "SELECT i.fitness, i.reviews FROM review_index i JOIN tools t ON t.id = i.tool_id WHERE t.plugin_id = $1",
        plugin,
    )
    assert [(r["fitness"], r["reviews"]) for r in index] == [(0.75, 1)] * 3


async def test_a_review_of_a_near_query_updates_its_entry_and_a_far_one_adds_an_entry(
    client: ToolselClient, pool: asyncpg.Pool
) -> None:
    tenant, plugin = unique("tenant"), unique("merge")
    await sync_and_wait(client, plugin_sync(plugin, tenant, [tool("get_weather")]))

    async def index() -> list[tuple[float, int]]:
        rows = await pool.fetch(
            "SELECT i.fitness, i.reviews FROM review_index i JOIN tools t ON t.id = i.tool_id"
            " WHERE t.plugin_id = $1 ORDER BY i.id",
            plugin,
        )
        return [(round(r["fitness"], 6), r["reviews"]) for r in rows]

    versions = []  # what the selectors poll: each change, the merge in place too, must change it
    for query, verdict, expected in (
        ("weather in Paris", Verdict.PERFECT, [(1.4, 1)]),
        ("weather in Paris", Verdict.UNRELATED, [(round((1.4 + 0.75) / 2, 6), 2)]),  # merged into the entry
        ("email my boss the report", Verdict.UNRELATED, [(round((1.4 + 0.75) / 2, 6), 2), (0.75, 1)]),
    ):
        selection_id, _ = await selection(client, pool, tenant, query, 1)
        review = ToolReview(plugin_id=plugin, name="get_weather", verdict=verdict)
        await client.report([ReviewEvent(selection_id=selection_id, reviews=[review])])

        async def written(expected: list[tuple[float, int]] = expected) -> bool:
            return await index() == expected

        assert await eventually(written), await index()
        versions.append(await review_index_version(pool))
    assert len(set(versions)) == len(versions), versions


async def test_compaction_shrinks_the_index_to_k_entries_per_tool(
    client: ToolselClient, pool: asyncpg.Pool, stack: Stack
) -> None:
    tenant, plugin = unique("tenant"), unique("compact")
    await sync_and_wait(client, plugin_sync(plugin, tenant, [tool("get_weather")]))
    queries = ["weather in Paris", "rain in London tomorrow?", "translate cat to French", "email my boss"]
    for query in queries:
        selection_id, _ = await selection(client, pool, tenant, query, 1)
        await client.report([ReviewEvent(selection_id=selection_id, none_of_these=True)])

    async def indexed() -> bool:
        reviews = await pool.fetchval(
            "SELECT sum(i.reviews) FROM review_index i JOIN tools t ON t.id = i.tool_id WHERE t.plugin_id = $1", plugin
        )
        return reviews == len(queries)

    assert await eventually(indexed)
    before = await pool.fetchval(
        "SELECT count(*) FROM review_index i JOIN tools t ON t.id = i.tool_id WHERE t.plugin_id = $1", plugin
    )
    code, out = await toolsel(stack, "compact", "--clusters", "1")
    assert code == 0, out
    assert "review index:" in out
    after = await pool.fetch(
        "SELECT i.fitness, i.reviews FROM review_index i JOIN tools t ON t.id = i.tool_id WHERE t.plugin_id = $1",
        plugin,
    )
    assert before > 1
    assert [(r["fitness"], r["reviews"]) for r in after] == [(0.75, len(queries))]


async def test_a_learner_killed_mid_batch_loses_nothing(
    client: ToolselClient, pool: asyncpg.Pool, stack: Stack
) -> None:
    tenant, plugin, session = unique("tenant"), unique("killed"), unique("session")
    await sync_and_wait(client, plugin_sync(plugin, tenant, [tool("create_event")]))
    per_selection, sent = Settings().outcomes_per_selection_max, 5_000  # a sender stores so many of one selection
    query = "schedule a meeting at noon"
    replies = [  # one session: one actor, whose credits bound the successes across its selections
        await client.select(query=query, tenant_id=tenant, k=1, session_id=session)
        for _ in range(-(-sent // per_selection))
    ]
    selection_ids = [r.selection_id for r in replies]

    async def recorded() -> bool:
        stored = "SELECT count(*) FROM selection_events WHERE selection_id = ANY($1::uuid[])"
        return bool(await pool.fetchval(stored, selection_ids) == len(selection_ids))

    assert await eventually(recorded)
    call = ToolCall(plugin_id=plugin, name="create_event", success=True)
    events = [OutcomeEvent(selection_id=selection_ids[i // per_selection], calls=[call]) for i in range(sent)]

    async def applied() -> int:
        stored = "SELECT count(*) FROM outcomes WHERE selection_id = ANY($1::uuid[])"
        return int(await pool.fetchval(stored, selection_ids))

    async def some_applied() -> bool:
        return await applied() > 0

    for event in events:  # into the stream without waiting for each ack: fast enough to catch it mid-way
        await client.nc.publish(subjects.OUTCOME_EVENTS, event.model_dump_json().encode())
    await client.nc.flush()
    try:
        assert await eventually(some_applied)
        os.kill(stack.services["learner"].pid, signal.SIGKILL)
        stack.services["learner"].wait()
        partial = await applied()
    finally:
        if stack.services["learner"].poll() is not None:
            stack.services["learner"] = stack.spawn("learner")
    assert partial < len(events), "the learner applied everything before it was killed: nothing was tested"

    async def all_applied() -> bool:
        return await applied() == len(events)

    async def settled() -> bool:  # redeliveries of the killed learner's batch too: later tests share this learner
        return await consumer_settled(client.nc, OUTCOME_DURABLE)

    # minutes of headroom: a learner applies these in seconds, but CI machines are shared
    assert await eventually(all_applied, timeout_s=180), f"{await applied()} of {len(events)} outcomes applied"
    assert await eventually(settled, timeout_s=180), "the learner still has outcomes pending"
    assert await eventually(lambda: _healthy(client))
    stats = await pool.fetchrow(
        "SELECT s.successes, s.selections FROM tool_bandit_stats s JOIN tools t ON t.id = s.tool_id"
        " WHERE t.plugin_id = $1",
        plugin,
    )
    # every outcome counted once; one actor's successes count toward the posterior only up to its credits
    assert (stats["successes"], stats["selections"]) == (Settings().learning_credits_per_actor, len(events))


async def _healthy(client: ToolselClient) -> bool:
    try:
        await client.health("learner")
    except Exception:
        return False
    return True


async def test_rebuild_recomputes_the_same_posteriors_and_quality(pool: asyncpg.Pool, stack: Stack) -> None:
    """Runs last in this module: every earlier test's events are in the history it replays, and their usage memory
    is derived again from the stored texts."""
    posteriors = "SELECT tool_id, context_key, alpha, beta, selections, successes, failures FROM tool_bandit_stats"
    quality = (
        "SELECT tool_id, tenant_id, calls, successes, failures, round(rating_sum::numeric, 9) AS ratings, rating_count,"
        " round(latency_sum_ms::numeric, 6) AS latency, latency_count, latency_hist::text, latency_p50_ms,"
        " latency_p99_ms, last_success_at FROM tool_quality WHERE calls > 0 OR rating_count > 0"
    )
    usage = "SELECT tool_id, scope, centroid, positives, negatives FROM tool_usage_vectors ORDER BY tool_id, scope"
    online = (set(await pool.fetch(posteriors)), set(await pool.fetch(quality)))
    learnt = await pool.fetch(usage)
    code, out = await toolsel(stack, "learner", "--rebuild")
    assert code == 0, out
    assert "rebuilt" in out
    assert "learnt again" in out
    replayed = (set(await pool.fetch(posteriors)), set(await pool.fetch(quality)))
    assert len(online[0]) > 0
    assert len(online[1]) > 0
    assert replayed == online
    relearnt = await pool.fetch(usage)  # the usage memory derived again from the stored texts, as online
    assert len(learnt) > 0
    assert [(r["tool_id"], r["scope"], r["positives"], r["negatives"]) for r in relearnt] == [
        (r["tool_id"], r["scope"], r["positives"], r["negatives"]) for r in learnt
    ]
    for before, after in zip(learnt, relearnt, strict=True):
        assert np.allclose(before["centroid"].to_numpy(), after["centroid"].to_numpy(), atol=1e-5)
