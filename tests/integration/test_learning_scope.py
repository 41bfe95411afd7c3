"""Learning stays where it was learnt, on the real stack: calls and reviews count only for tools the selection
offered within its tenant, feedback only for a tool its tenant may see, and one session's flood of successes or
reviews moves a tool a bounded amount."""

from uuid import UUID

import asyncpg
import nats.errors
import numpy as np
from nats.js import JetStreamContext
from nats.js.api import DeliverPolicy

from tests.integration.catalog import eventually, plugin_sync, sync_and_wait, tool, unique
from toolsel.client import ToolselClient
from toolsel.contracts import SelectedTool, SelectionEvent, subjects
from toolsel.contracts.events import FeedbackEvent, OutcomeEvent, ReviewEvent, ToolCall, ToolReview, Verdict
from toolsel.settings import Settings

TOOL_OF = "SELECT id FROM tools WHERE plugin_id = $1 AND name = $2"


async def stored(pool: asyncpg.Pool, sql: str, *args: object, expected: int) -> bool:
    """Whether ``sql`` (a count) reaches ``expected``, waiting for the learner."""

    async def reached() -> bool:
        return bool(await pool.fetchval(sql, *args) == expected)

    return await eventually(reached, timeout_s=30)


async def recorded(client: ToolselClient, pool: asyncpg.Pool, event: SelectionEvent) -> UUID:
    """Publish a selection event as a selector would, and wait until the learner stored it."""
    await client.nc.jetstream().publish(subjects.SELECTION_EVENTS, event.model_dump_json().encode())
    assert await stored(
        pool, "SELECT count(*) FROM selection_events WHERE selection_id = $1", event.selection_id, expected=1
    )
    return event.selection_id


def selection(tenant: str, offered: list[tuple[str, str]], session_id: str | None = None) -> SelectionEvent:
    return SelectionEvent(
        tenant_id=tenant,
        session_id=session_id,
        query="what's the weather in Oslo tomorrow",
        tier="free",
        context_key="free::general",
        method="hybrid",
        tools=[
            SelectedTool(plugin_id=p, name=n, rank=i, score=0.5, similarity=0.5) for i, (p, n) in enumerate(offered)
        ],
        candidate_count=len(offered),
        latency_ms=1.0,
        tokens_selected=10,
        tokens_catalog=10,
    )


async def test_calls_on_a_selection_that_did_not_offer_the_tool_in_its_tenant_change_nothing(
    client: ToolselClient, pool: asyncpg.Pool
) -> None:
    tenant_a, tenant_b, plugin_a, plugin_b = unique("a"), unique("b"), unique("mine"), unique("theirs")
    await sync_and_wait(client, plugin_sync(plugin_a, tenant_a, [tool("get_weather")]))
    await sync_and_wait(client, plugin_sync(plugin_b, tenant_b, [tool("send_email")]))
    # b's own selection (never offered a's tool), and a forged one of b that lists a's tool
    not_offered = await recorded(client, pool, selection(tenant_b, [(plugin_b, "send_email")]))
    invisible = await recorded(client, pool, selection(tenant_b, [(plugin_a, "get_weather")]))
    failed = ToolCall(plugin_id=plugin_a, name="get_weather", success=False, error="boom", latency_ms=10)
    outcomes = [OutcomeEvent(selection_id=s, calls=[failed]) for s in (not_offered, invisible) for _ in range(25)]
    await client.report(outcomes)

    counted = "SELECT count(*) FROM outcomes WHERE selection_id = ANY($1::uuid[])"
    assert await stored(pool, counted, [not_offered, invisible], expected=len(outcomes))
    tool_id = await pool.fetchval(TOOL_OF, plugin_a, "get_weather")
    assert await pool.fetchval("SELECT calls FROM tool_quality WHERE tool_id = $1", tool_id) in (None, 0)
    assert await pool.fetchval("SELECT count(*) FROM tool_quarantine WHERE tool_id = $1", tool_id) == 0
    assert await pool.fetchval("SELECT count(*) FROM tool_bandit_stats WHERE tool_id = $1", tool_id) == 0
    assert (await client.select(query="weather in Oslo", tenant_id=tenant_a, k=1, dry_run=True)).tools


async def dead_letter_reason(dead: JetStreamContext.PushSubscription, event_id: UUID) -> str | None:
    """The reason of the next dead letter when it is of that feedback event."""
    try:
        letter = await dead.next_msg(timeout=0.5)
    except nats.errors.TimeoutError:
        return None
    if FeedbackEvent.model_validate_json(letter.data).event_id != event_id:
        return None
    return (letter.headers or {}).get("toolsel-reason", "")


async def test_feedback_on_a_removed_tool_is_dead_lettered_and_changes_nothing(
    client: ToolselClient, pool: asyncpg.Pool
) -> None:
    tenant, plugin = unique("t"), unique("removed")
    await client.sync(plugin_sync(plugin, tenant, [tool("translate_text")]))
    await client.remove_plugin(plugin, tenant)
    late = FeedbackEvent(plugin_id=plugin, name="translate_text", tenant_id=tenant, rating=1.0)
    js = client.nc.jetstream()
    dead = await js.subscribe(subjects.dead_letter("feedback"), ordered_consumer=True, deliver_policy=DeliverPolicy.NEW)
    await client.report([late])
    reason = await eventually(lambda: dead_letter_reason(dead, late.event_id), timeout_s=30)
    assert reason is not None, "the feedback on a removed tool was not dead-lettered"
    assert f"unknown or removed tool {plugin}/translate_text" in reason
    assert await pool.fetchval("SELECT count(*) FROM tool_feedback WHERE event_id = $1", late.event_id) == 0


async def test_feedback_on_another_tenants_tool_is_dead_lettered_and_changes_nothing(
    client: ToolselClient, pool: asyncpg.Pool
) -> None:
    tenant_a, plugin_a = unique("a"), unique("rated")
    await sync_and_wait(client, plugin_sync(plugin_a, tenant_a, [tool("translate_text")]))
    refused = FeedbackEvent(plugin_id=plugin_a, name="translate_text", tenant_id=unique("b"), rating=0.0)
    accepted = FeedbackEvent(plugin_id=plugin_a, name="translate_text", tenant_id=tenant_a, rating=1.0)
    js = client.nc.jetstream()
    dead = await js.subscribe(subjects.dead_letter("feedback"), ordered_consumer=True, deliver_policy=DeliverPolicy.NEW)
    await client.report([refused, accepted])
    reason = await eventually(lambda: dead_letter_reason(dead, refused.event_id), timeout_s=30)
    assert reason is not None, "the refused feedback was not dead-lettered"
    assert "not visible to tenant" in reason
    assert await stored(pool, "SELECT count(*) FROM tool_feedback WHERE event_id = $1", accepted.event_id, expected=1)
    assert await pool.fetchval("SELECT count(*) FROM tool_feedback WHERE event_id = $1", refused.event_id) == 0
    tool_id = await pool.fetchval(TOOL_OF, plugin_a, "translate_text")
    row = await pool.fetchrow("SELECT rating_sum, rating_count FROM tool_quality WHERE tool_id = $1", tool_id)
    assert (row["rating_sum"], row["rating_count"]) == (1.0, 1)


async def test_a_flood_of_successes_from_one_session_moves_a_tool_a_bounded_amount(
    client: ToolselClient, pool: asyncpg.Pool
) -> None:
    tenant, plugin, session = unique("tenant"), unique("flood"), unique("session")
    await sync_and_wait(client, plugin_sync(plugin, tenant, [tool("get_weather")]))
    flooded = [await recorded(client, pool, selection(tenant, [(plugin, "get_weather")], session)) for _ in range(4)]
    success = ToolCall(plugin_id=plugin, name="get_weather", success=True)
    outcomes = [OutcomeEvent(selection_id=flooded[i % 4], calls=[success]) for i in range(100)]
    await client.report(outcomes)

    counted = "SELECT count(*) FROM outcomes WHERE selection_id = ANY($1::uuid[])"
    assert await stored(pool, counted, flooded, expected=len(outcomes))
    settings = Settings()
    tool_id = await pool.fetchval(TOOL_OF, plugin, "get_weather")
    stats = await pool.fetchrow(
        "SELECT alpha, beta, selections, successes FROM tool_bandit_stats WHERE tool_id = $1 AND tenant_id = $2",
        tool_id,
        tenant,
    )
    assert stats["selections"] == len(outcomes)
    assert stats["successes"] == settings.learning_credits_per_actor
    assert 0 < stats["alpha"] - settings.prior_alpha <= settings.learning_credits_per_actor
    assert stats["beta"] == settings.prior_beta
    # One example per credited selection: the credited outcomes may share a selection, never exceed the credits.
    examples = "SELECT count(*) FROM tool_usage_examples WHERE tool_id = $1 AND polarity = 1"
    assert 1 <= await pool.fetchval(examples, tool_id) <= settings.learning_credits_per_actor


async def test_a_flood_of_perfect_reviews_from_one_session_moves_a_tool_a_bounded_amount(
    client: ToolselClient, pool: asyncpg.Pool
) -> None:
    tenant, plugin, session = unique("tenant"), unique("flood"), unique("session")
    await sync_and_wait(client, plugin_sync(plugin, tenant, [tool("get_weather"), tool("send_email")]))
    offered = [(plugin, "get_weather"), (plugin, "send_email")]  # a relevant and an irrelevant one: a listwise step
    flooded = [await recorded(client, pool, selection(tenant, offered, session)) for _ in range(6)]
    verdicts = [
        ToolReview(plugin_id=plugin, name="get_weather", verdict=Verdict.PERFECT),
        ToolReview(plugin_id=plugin, name="send_email", verdict=Verdict.UNRELATED),
    ]
    flood = [ReviewEvent(selection_id=flooded[i % len(flooded)], reviews=verdicts) for i in range(30)]
    await client.report(flood)

    counted = "SELECT count(*) FROM reviews WHERE selection_id = ANY($1::uuid[])"
    assert await stored(pool, counted, flooded, expected=len(flood))
    settings = Settings()
    credits = settings.learning_credits_per_actor
    weather, email = [await pool.fetchval(TOOL_OF, plugin, name) for name in ("get_weather", "send_email")]
    # every verdict is logged; only the credited ones teach (one example per selection, so at most the credits)
    assert await pool.fetchval("SELECT count(*) FROM review_log WHERE tool_id = $1", weather) == len(flood)
    examples = "SELECT count(*) FROM tool_usage_examples WHERE tool_id = $1 AND polarity = $2"
    assert 1 <= await pool.fetchval(examples, weather, 1) <= credits
    assert 1 <= await pool.fetchval(examples, email, -1) <= credits
    residual = await pool.fetchval(
        "SELECT residual FROM tool_usage_vectors WHERE tool_id = $1 AND scope = $2", weather, tenant
    )
    # A credited review steps the residual by rate x coefficient x direction: |coefficient| <= 1 (a verdict share
    # minus a softmax probability, both in [0, 1]), the direction a unit query less the tenant's mean ranked query
    # (a mean of unit vectors) is at most 2 long, and holding it only shortens it.
    assert 0 < float(np.linalg.norm(residual.to_numpy())) <= credits * 2 * settings.usage_residual_rate
