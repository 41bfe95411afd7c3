"""Retention on the real PostgreSQL: the history past the window goes, in batches, and what refers to what is kept
stays (toolsel/store/retention.py); an event delivered again after a pass is applied once; a rebuild after a pass
derives what the kept history teaches; each tool keeps its newest versions, the current one always; a removed
plugin's last-sync record goes once old."""

from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime, timedelta
from uuid import UUID, uuid4

import asyncpg
import numpy as np
import pytest

from tests.conftest import Endpoints, scratch_database
from tests.integration.catalog import selection_event
from toolsel.contracts import (
    FeedbackEvent,
    OutcomeEvent,
    ReviewEvent,
    SelectedTool,
    SelectionEvent,
    ToolCall,
    ToolReview,
    Verdict,
)
from toolsel.services.learner.degradation import DegradationPolicy
from toolsel.services.learner.feedback import apply_feedback
from toolsel.services.learner.fitness import Multipliers
from toolsel.services.learner.outcomes import OutcomeRules, apply_outcomes
from toolsel.services.learner.rebuild import rebuild
from toolsel.services.learner.reviews import apply_reviews
from toolsel.services.learner.usage import UsageRules
from toolsel.settings import Settings
from toolsel.store import create_pool, events, registry, retention

WINDOW_DAYS = 30.0
OLD = 40.0
"""Days ago, past the window."""
SETTINGS = Settings()
RULES = OutcomeRules.from_settings(SETTINGS)
POLICY = DegradationPolicy.from_settings(SETTINGS)
UNTAUGHT = UsageRules.from_settings(Settings(learning_credits_per_actor=0))
"""Reviews that log their verdicts and teach no usage example (as once the tool's examples were trimmed)."""
MULTIPLIERS = Multipliers.from_settings(SETTINGS)
KEPT = 8
"""Reviews per selection and sender, feedback per tool and sender: more than a test sends."""
TOOL = SelectedTool(plugin_id="p1", name="t1", rank=0, score=0.9)


async def model(queries: Sequence[str]) -> np.ndarray:
    """One unit vector for every query."""
    return np.full((len(queries), 384), 384**-0.5, dtype=np.float32)


async def with_tool(url: str) -> asyncpg.Pool:
    """A store on ``url`` whose registry holds acme's tool p1/t1."""
    pool = await create_pool(url)
    await pool.execute(
        "INSERT INTO tools (plugin_id, name, tenant_id, spec, content_hash) VALUES ('p1', 't1', 'acme', '{}', $1)",
        "a" * 64,
    )
    return pool


@pytest.fixture
async def store(empty_database: str) -> AsyncIterator[asyncpg.Pool]:
    pool = await with_tool(empty_database)
    yield pool
    await pool.close()


async def asked(pool: asyncpg.Pool, days_ago: float = 0.0) -> SelectionEvent:
    """A stored selection of acme's, made ``days_ago``, that offered p1/t1."""
    made = datetime.now(UTC) - timedelta(days=days_ago)
    selection = selection_event(occurred_at=made, tools=[TOOL], candidate_count=1)
    await events.insert_selections(pool, [selection])
    return selection


def called(selection: SelectionEvent, success: bool = False) -> OutcomeEvent:
    """An outcome of ``selection``: p1/t1 called (a failure teaches no usage example)."""
    return OutcomeEvent(
        selection_id=selection.selection_id, calls=[ToolCall(plugin_id="p1", name="t1", success=success)]
    )


async def outcome(pool: asyncpg.Pool, selection: SelectionEvent, success: bool = False) -> OutcomeEvent:
    event = called(selection, success)
    assert (await apply_outcomes(pool, [event], RULES, POLICY, model)).applied == [event.event_id]
    return event


async def review(pool: asyncpg.Pool, selection: SelectionEvent) -> ReviewEvent:
    event = ReviewEvent(
        selection_id=selection.selection_id, reviews=[ToolReview(plugin_id="p1", name="t1", verdict=Verdict.BROKEN)]
    )
    result = await apply_reviews(
        pool, [event], model, MULTIPLIERS, SETTINGS.review_merge_similarity, UNTAUGHT, per_selection=KEPT
    )
    assert result.applied == [event.event_id]
    return event


async def rated(pool: asyncpg.Pool, rating: float) -> FeedbackEvent:
    event = FeedbackEvent(plugin_id="p1", name="t1", tenant_id="acme", rating=rating)
    assert (await apply_feedback(pool, [event], KEPT)).applied == [event.event_id]
    return event


async def age(pool: asyncpg.Pool, table: str, column: str, ids: Sequence[UUID], days: float = OLD) -> None:
    """Date these rows' arrival ``days`` ago (by the store's clock), as if stored then."""
    await pool.execute(
        f"UPDATE {table} SET {column} = now() - $2::float8 * interval '1 day' WHERE event_id = ANY($1::uuid[])",
        list(ids),
        days,
    )


async def ids(pool: asyncpg.Pool, query: str) -> set[UUID]:
    return {r[0] for r in await pool.fetch(query)}


async def test_the_history_past_the_window_goes_in_batches_and_what_refers_to_the_kept_stays(
    store: asyncpg.Pool,
) -> None:
    """A batch of one row: every table is walked statement after statement, and a kept old row is passed, not a
    wall. Gone: an old selection with its old outcome, its old review and the review's logged verdict, old
    feedback, an old outcome of no stored selection. Kept: new events; an old selection with an outcome or a review
    inside the window, and those events; an old selection a usage example was learnt from, and its outcome."""
    gone, late, reviewed_late, taught, new = (
        await asked(store, OLD),
        await asked(store, OLD),
        await asked(store, OLD),
        await asked(store, OLD),
        await asked(store),
    )
    old_outcome, old_review = await outcome(store, gone), await review(store, gone)
    late_outcome, late_review = await outcome(store, late), await review(store, reviewed_late)
    taught_outcome, new_outcome = await outcome(store, taught, success=True), await outcome(store, new)
    new_review = await review(store, new)
    orphan = called(selection_event())  # stored while its selection was pruned meanwhile
    async with store.acquire() as conn:
        await events.insert_outcomes(conn, [orphan])
    old_feedback, new_feedback = await rated(store, 0.2), await rated(store, 0.9)
    await age(store, "outcomes", "applied_at", [old_outcome.event_id, taught_outcome.event_id, orphan.event_id])
    await age(store, "reviews", "applied_at", [old_review.event_id])
    await age(store, "review_log", "created_at", [old_review.event_id, late_review.event_id])
    await age(store, "tool_feedback", "applied_at", [old_feedback.event_id])
    assert await store.fetchval("SELECT count(*) FROM tool_usage_examples WHERE selection_id = $1", taught.selection_id)

    dropped = await retention.prune_history(store, WINDOW_DAYS, batch=1)

    assert dropped == {"selections": 1, "outcomes": 2, "reviews": 1, "verdicts": 1, "feedback": 1}
    assert await ids(store, "SELECT selection_id FROM selection_events") == {
        s.selection_id for s in (late, reviewed_late, taught, new)
    }
    assert await ids(store, "SELECT event_id FROM outcomes") == {
        e.event_id for e in (late_outcome, taught_outcome, new_outcome)
    }
    assert await ids(store, "SELECT event_id FROM reviews") == {late_review.event_id, new_review.event_id}
    assert await ids(store, "SELECT event_id FROM review_log") == {late_review.event_id, new_review.event_id}
    assert await ids(store, "SELECT event_id FROM tool_feedback") == {new_feedback.event_id}
    assert await retention.prune_history(store, WINDOW_DAYS, batch=1) == dict.fromkeys(dropped, 0)


async def test_an_event_delivered_again_after_a_pass_is_applied_once(store: asyncpg.Pool) -> None:
    """Inside the window its row recognises it (a duplicate), and so does an old outcome whose selection stays (a
    usage example was learnt from it); an outcome or review past the window finds no selection and is left out as
    unknown, never applied: the posterior and the ratings stand as they were."""
    old, taught, new = await asked(store, OLD), await asked(store, OLD), await asked(store)
    old_outcome, new_outcome = await outcome(store, old), await outcome(store, new)
    taught_outcome = await outcome(store, taught, success=True)
    new_review, new_feedback = await review(store, new), await rated(store, 0.9)
    old_review = await review(store, old)
    await age(store, "outcomes", "applied_at", [old_outcome.event_id, taught_outcome.event_id])
    await age(store, "reviews", "applied_at", [old_review.event_id])
    learnt = "SELECT alpha, beta, selections FROM tool_bandit_stats UNION ALL SELECT rating_sum, rating_count, calls"
    learnt += " FROM tool_quality"
    before = await store.fetch(learnt)
    await retention.prune_history(store, WINDOW_DAYS, batch=100)
    assert await ids(store, "SELECT selection_id FROM selection_events") == {taught.selection_id, new.selection_id}

    again = await apply_outcomes(store, [new_outcome, taught_outcome, old_outcome], RULES, POLICY, model)
    assert (again.applied, set(again.duplicates), again.unknown_selection) == (
        [],
        {new_outcome.event_id, taught_outcome.event_id},
        [old_outcome.event_id],
    )
    reviewed = await apply_reviews(
        store,
        [new_review, old_review],
        model,
        MULTIPLIERS,
        SETTINGS.review_merge_similarity,
        UNTAUGHT,
        per_selection=KEPT,
    )
    assert (reviewed.applied, reviewed.duplicates, reviewed.unknown_selection) == (
        [],
        [new_review.event_id],
        [old_review.event_id],
    )
    assert (await apply_feedback(store, [new_feedback], KEPT)).duplicates == [new_feedback.event_id]
    assert await store.fetch(learnt) == before


LEARNT = """
SELECT 'posterior', tool_id, tenant_id, context_key, alpha, beta, selections, successes, failures
FROM tool_bandit_stats
UNION ALL
SELECT 'quality', tool_id, tenant_id, '', rating_sum, rating_count, calls, successes, failures FROM tool_quality
ORDER BY 1, 2, 3, 4
"""


async def test_a_rebuild_after_a_pass_derives_what_the_kept_history_teaches(
    store: asyncpg.Pool, endpoints: Endpoints
) -> None:
    """A rebuild replays what is kept: after a pass it ends where online learning of the window's events alone
    ends (another store that was sent only those), the pruned events' share of the posteriors and quality gone."""
    for _ in range(3):
        await age(store, "outcomes", "applied_at", [(await outcome(store, await asked(store, OLD))).event_id])
    await age(store, "tool_feedback", "applied_at", [(await rated(store, 0.1)).event_id])
    selections = [await asked(store) for _ in range(4)]
    kept = [
        called(selection, success) for selection, success in zip(selections, (True, False, True, True), strict=True)
    ]
    for event in kept:
        assert (await apply_outcomes(store, [event], RULES, POLICY, model)).applied == [event.event_id]
    await rated(store, 0.8)
    await retention.prune_history(store, WINDOW_DAYS, batch=100)
    rebuilt = await rebuild(store, RULES)
    assert (rebuilt.outcomes, rebuilt.feedback) == (len(kept), 1)

    async with scratch_database(endpoints) as url:
        only_the_window = await with_tool(url)
        try:
            await events.insert_selections(only_the_window, selections)
            for event in kept:
                await apply_outcomes(only_the_window, [event], RULES, POLICY, model)
            await rated(only_the_window, 0.8)
            assert await store.fetch(LEARNT) == await only_the_window.fetch(LEARNT)
        finally:
            await only_the_window.close()


async def versions_of(pool: asyncpg.Pool) -> dict[int, list[int]]:
    found: dict[int, list[int]] = {}
    for r in await pool.fetch("SELECT tool_id, version FROM tool_versions ORDER BY tool_id, version"):
        found.setdefault(r["tool_id"], []).append(r["version"])
    return found


async def test_each_tool_keeps_its_newest_versions_and_always_its_current_one(store: asyncpg.Pool) -> None:
    """Four statements of four rows take a tool's 25 excess versions (the cursor stays on it while its versions
    fill the batch) and the next tools'; a removed tool is bounded alike; versions are numbered on after a pass."""
    await store.execute(
        "INSERT INTO tools (plugin_id, name, tenant_id, spec, content_hash, deleted_at)"
        " VALUES ('p1', 't2', 'acme', '{}', $1, NULL), ('p1', 't3', 'acme', '{}', $1, NULL),"
        " ('p2', 't4', 'acme', '{}', $1, now())",
        "a" * 64,
    )
    tools = {r["name"]: r["id"] for r in await store.fetch("SELECT id, name FROM tools")}
    changes = {"t1": 30, "t2": 3, "t3": 7, "t4": 8}
    for n in range(max(changes.values())):
        changed = [(tools[name], ["description"], "b" * 64) for name, count in changes.items() if n < count]
        await registry.snapshot_versions(store, changed, "sync")

    assert await retention.prune_versions(store, 5, batch=4) == 25 + 2 + 3
    assert await versions_of(store) == {
        tools["t1"]: list(range(26, 31)),
        tools["t2"]: [1, 2, 3],
        tools["t3"]: list(range(3, 8)),
        tools["t4"]: list(range(4, 9)),
    }
    assert await retention.prune_versions(store, 1, batch=4) == 4 + 2 + 4 + 4
    assert await versions_of(store) == {tools[name]: [count] for name, count in changes.items()}
    assert await registry.snapshot_version(store, tools["t1"], ["description"], "c" * 64, "sync") == 31


async def test_a_removed_plugins_last_sync_record_goes_once_old_and_a_live_ones_stays(store: asyncpg.Pool) -> None:
    """p1 is live for acme (its record orders acme's next sync, however old); beta holds no live tool of p1, nor
    does anyone of p9: their old records go, a recent one stays until it is old."""
    syncs = [("p1", "acme", OLD), ("p1", "beta", OLD), ("p9", "acme", OLD), ("p9", "beta", 1.0)]
    for plugin, tenant, days in syncs:
        sync = registry.AppliedSync(uuid4(), datetime.now(UTC))
        async with store.acquire() as conn:
            await registry.record_sync(conn, plugin, tenant, sync)
        await store.execute(
            "UPDATE plugin_syncs SET applied_at = now() - $3::float8 * interval '1 day'"
            " WHERE plugin_id = $1 AND tenant_id = $2",
            plugin,
            tenant,
            days,
        )
    assert await retention.prune_sync_records(store, WINDOW_DAYS, batch=1) == 2
    left = await store.fetch("SELECT plugin_id, tenant_id FROM plugin_syncs ORDER BY 1, 2")
    assert [tuple(r) for r in left] == [("p1", "acme"), ("p9", "beta")]


HISTORY_ROWS = 20_000
FILL = f"""
INSERT INTO selection_events (selection_id, occurred_at, tenant_id, query, tier, context_key, method, tools,
                              candidate_count, latency_ms, tokens_selected, tokens_catalog)
SELECT gen_random_uuid(), now() - (i % 60 + 0.5) * interval '1 day', 'acme', 'q', 'free', 'c', 'hybrid', '[]', 0, 1,
       0, 0
FROM generate_series(1, {HISTORY_ROWS}) i;
INSERT INTO outcomes (event_id, selection_id, occurred_at, calls, applied_at)
SELECT gen_random_uuid(), selection_id, occurred_at, '[]', occurred_at FROM selection_events;
INSERT INTO reviews (event_id, selection_id, occurred_at, reviews, applied_at)
SELECT gen_random_uuid(), selection_id, occurred_at, '[]', occurred_at FROM selection_events;
INSERT INTO review_log (event_id, tool_id, scope, query_embedding, verdict, fitness, created_at)
SELECT event_id, 1, 'acme', array_fill(0.1, ARRAY[384])::vector, 'perfect', 1.4, applied_at FROM reviews;
INSERT INTO tool_feedback (event_id, tool_id, tenant_id, rating, occurred_at, applied_at)
SELECT gen_random_uuid(), 1, 'acme', 0.5, occurred_at, occurred_at FROM selection_events;
ANALYZE selection_events, outcomes, reviews, review_log, tool_feedback;
"""
"""Two months of history, a day's share of it each day (the history of a store in use), half of it past the
window."""
PAST_THE_WINDOW = sum(1 for i in range(1, HISTORY_ROWS + 1) if i % 60 >= WINDOW_DAYS)


async def test_a_pass_reads_the_history_through_its_indexes(store: asyncpg.Pool) -> None:
    """No statement of a pass reads a whole history table: each walks its (time, key) index from its cursor and
    finds what refers to a row by an index (migration 022), so a pass costs what it deletes, not what is kept."""
    await store.execute(FILL)
    async with store.acquire() as conn, conn.transaction():
        dropped = await retention.prune_history(conn, WINDOW_DAYS, batch=500)
        scans = await conn.fetch(
            "SELECT relname, seq_scan FROM pg_stat_xact_user_tables WHERE relname = ANY($1::text[])",
            ["selection_events", "outcomes", "reviews", "review_log", "tool_feedback"],
        )
    assert dropped == dict.fromkeys(dropped, PAST_THE_WINDOW)
    assert {r["relname"]: r["seq_scan"] for r in scans} == dict.fromkeys(
        ["selection_events", "outcomes", "reviews", "review_log", "tool_feedback"], 0
    )
