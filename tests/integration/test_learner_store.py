"""What the learner reads and writes, on a fresh database of the real PostgreSQL: tools found by key through the
registry's unique index, an outcome batch whose model fails that stores nothing and is retried as it is, and a
rebuild that waits for a batch in flight (both take the learnt tables in one order)."""

import asyncio
from collections.abc import AsyncIterator, Sequence
from uuid import uuid4

import asyncpg
import numpy as np
import pytest

from tests.integration.catalog import eventually, selection_event
from toolsel.contracts import (
    OutcomeEvent,
    ReviewEvent,
    SelectedTool,
    SelectionEvent,
    ToolCall,
    ToolReview,
    Verdict,
)
from toolsel.messaging import Unavailable, transient
from toolsel.services.learner import relearn
from toolsel.services.learner.degradation import DegradationPolicy
from toolsel.services.learner.fitness import Multipliers
from toolsel.services.learner.outcomes import OutcomeRules, apply_outcomes
from toolsel.services.learner.rebuild import Rebuilt, rebuild
from toolsel.services.learner.review_index import Entry, add_review
from toolsel.services.learner.reviews import apply_reviews, compact_review_index
from toolsel.services.learner.usage import UsageRules
from toolsel.settings import Settings
from toolsel.store import create_pool, events, learning, reviews
from toolsel.store.learning import PosteriorKey

TOOLS = 20_000
BY_TEXT = """
SELECT id, plugin_id || '/' || name AS key, tenant_id FROM tools WHERE plugin_id || '/' || name = ANY($1::text[])
"""
"""What the tools' keys are: their ``plugin/name`` text (how the learner matched them before)."""


@pytest.fixture
async def registry(empty_database: str) -> AsyncIterator[asyncpg.Pool]:
    """A registry of ``TOOLS`` described tools: plugin ``p<i % 100>``, name ``t<i>``, every tenth shared."""
    connections = await create_pool(empty_database)
    await connections.execute(
        "INSERT INTO tools (plugin_id, name, tenant_id, spec, content_hash)"
        " SELECT 'p' || (i % 100), 't' || i, CASE WHEN i % 10 = 0 THEN '*' ELSE 'acme' END,"
        " jsonb_build_object('description', repeat('x', 400)), repeat('a', 64) FROM generate_series(1, $1) i",
        TOOLS,
    )
    await connections.execute("ANALYZE tools")
    yield connections
    await connections.close()


async def test_tools_are_found_by_key_as_their_plugin_name_text_finds_them(registry: asyncpg.Pool) -> None:
    keys = ["p1/t1", "p10/t10", "p1/t1", "p2/t1", "p3/t3/x", "p4", "nobody/t4", "p5/t1005", "p5/"]
    found = await learning.registered(registry, keys)
    expected = {r["key"]: learning.Registered(r["id"], r["tenant_id"]) for r in await registry.fetch(BY_TEXT, keys)}
    assert found == expected
    assert sorted(found) == ["p1/t1", "p10/t10", "p5/t1005"]


async def test_tools_are_found_by_key_through_the_registrys_unique_index(registry: asyncpg.Pool) -> None:
    """An index finds each tool of a batch's selections: no batch reads the whole registry."""
    async with registry.acquire() as conn, conn.transaction():
        await learning.registered(conn, [f"p{i % 100}/t{i}" for i in range(1, 40)])
        scans = await conn.fetchrow("SELECT seq_scan, idx_scan FROM pg_stat_xact_user_tables WHERE relname = 'tools'")
    assert scans is not None
    assert (scans["seq_scan"], scans["idx_scan"] > 0) == (0, True)


async def asked(pool: asyncpg.Pool, query: str = "send mail") -> SelectionEvent:
    """A stored selection of acme's that offered tool p1/t1."""
    offered = [SelectedTool(plugin_id="p1", name="t1", rank=0, score=0.9)]
    selection = selection_event(query=query, tools=offered, candidate_count=1)
    await events.insert_selections(pool, [selection])
    return selection


async def model(queries: Sequence[str]) -> np.ndarray:
    """One unit vector for every query."""
    return np.full((len(queries), 384), 384**-0.5, dtype=np.float32)


RULES = OutcomeRules.from_settings(Settings())
POLICY = DegradationPolicy.from_settings(Settings())


async def test_an_outcome_batch_whose_model_fails_stores_nothing_and_is_retried_not_split(
    registry: asyncpg.Pool,
) -> None:
    """A transient failure: its events are redelivered as they are, and applied once the model works again."""
    call = ToolCall(plugin_id="p1", name="t1", success=True)
    outcome = OutcomeEvent(selection_id=(await asked(registry)).selection_id, calls=[call])

    async def out_of_memory(queries: Sequence[str]) -> np.ndarray:
        raise RuntimeError("onnxruntime: Failed to allocate memory")

    with pytest.raises(Unavailable) as raised:
        await apply_outcomes(registry, [outcome], RULES, POLICY, out_of_memory)
    assert transient(raised.value)
    assert await registry.fetchval("SELECT count(*) FROM outcomes") == 0
    applied = await apply_outcomes(registry, [outcome], RULES, POLICY, model)
    assert applied.applied == [outcome.event_id]
    assert await registry.fetchval("SELECT count(*) FROM tool_usage_examples") == 1


async def lock_waiters(pool: asyncpg.Pool) -> bool:
    """Whether a transaction of this database waits for a lock."""
    return bool(
        await pool.fetchval(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
        )
    )


async def test_a_rebuild_waits_for_an_outcome_batch_in_flight_and_neither_is_aborted(
    registry: asyncpg.Pool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The batch holds the failure credits of its failed call when the rebuild starts; it locks the posteriors once
    the rebuild waits for a lock. The rebuild then replays the batch's outcome."""
    failed = ToolCall(plugin_id="p1", name="t1", success=False, error="timeout")
    outcome = OutcomeEvent(selection_id=(await asked(registry)).selection_id, calls=[failed])
    rebuilding: list[asyncio.Task[Rebuilt]] = []
    lock_posteriors = learning.lock_posteriors

    async def once_a_rebuild_waits(
        conn: asyncpg.Connection, keys: Sequence[PosteriorKey], alpha: float, beta: float
    ) -> dict[PosteriorKey, asyncpg.Record]:
        if not rebuilding:  # the batch's (the rebuild's own replay passes)
            rebuilding.append(asyncio.create_task(rebuild(registry, RULES)))
            assert await eventually(lambda: lock_waiters(registry))
        return await lock_posteriors(conn, keys, alpha, beta)

    monkeypatch.setattr(learning, "lock_posteriors", once_a_rebuild_waits)
    try:
        result = await apply_outcomes(registry, [outcome], RULES, POLICY, model)
    finally:
        rebuilt = await asyncio.gather(*rebuilding, return_exceptions=True)
    assert result.applied == [outcome.event_id]
    assert [r.outcomes if isinstance(r, Rebuilt) else r for r in rebuilt] == [1]


async def test_a_review_merged_while_the_index_is_compacted_is_kept(empty_database: str) -> None:
    """An online batch that has read its tool's entries holds the index: a compaction started meanwhile waits for
    it, then rebuilds from a log that holds its review (it merged into entries the compaction deleted, and the
    review was lost from the index until the next one)."""
    store = await create_pool(empty_database)
    try:
        tool = await store.fetchval(
            "INSERT INTO tools (plugin_id, name, tenant_id, spec, content_hash)"
            " VALUES ('mail', 'send', 'acme', '{}', repeat('a', 64)) RETURNING id"
        )
        query = np.ones(384, dtype=np.float32) / np.sqrt(384)
        await reviews.log_reviews(store, [(uuid4(), tool, "acme", query, "perfect", 1.4)])
        await reviews.write_index_entries(store, [], [(tool, "acme", query, 1.4, 1)])
        async with store.acquire() as conn, conn.transaction():  # an online batch, as apply_reviews runs it
            await reviews.log_reviews(conn, [(uuid4(), tool, "acme", query, "broken", 0.35)])
            await reviews.lock_tool_indexes(conn, {tool})
            nearest = await reviews.nearest_entries(conn, [(tool, "acme", query)])
            entries = [Entry(r[3], r[4], r[5], r[0]) for r in nearest]
            compaction = asyncio.create_task(compact_review_index(store, 8))
            await asyncio.sleep(0.5)  # the compaction is under way, waiting for the index
            merged = add_review(entries, query, 0.35, 0.9)
            await reviews.write_index_entries(conn, [(e.id, e.centroid, e.fitness, e.reviews) for e in merged], [])
        await compaction
        assert await store.fetchval("SELECT sum(reviews) FROM review_index") == 2
    finally:
        await store.close()


async def test_a_relearning_keeps_what_a_learner_applied_while_it_was_planned(registry: asyncpg.Pool) -> None:
    """A rebuild does not stop the learners, and its plan embeds every learnt text first (minutes on a real store): a
    review applied meanwhile stayed in the log but left the index, and its example kept the old model's vector."""
    settings = Settings()
    rules, multipliers = UsageRules.from_settings(settings), Multipliers.from_settings(settings)
    embedded: list[str] = []

    async def counting(queries: Sequence[str]) -> np.ndarray:
        embedded.extend(queries)
        return await model(queries)

    async def reviewed(query: str) -> None:
        verdict = ToolReview(plugin_id="p1", name="t1", verdict=Verdict.PERFECT)
        review = ReviewEvent(selection_id=(await asked(registry, query)).selection_id, reviews=[verdict])
        await apply_reviews(
            registry, [review], model, multipliers, settings.review_merge_similarity, rules, per_selection=8
        )

    await reviewed("send mail")
    planned = await relearn.plan(registry, rules, counting, 64, lambda *_: None)
    await reviewed("email my boss")
    assert await registry.fetchval("SELECT sum(reviews) FROM review_index") == 2
    async with registry.acquire() as conn, conn.transaction():
        learnt = await relearn.write(conn, planned, rules, settings.review_merge_similarity)
    assert await registry.fetchval("SELECT sum(reviews) FROM review_index") == 2
    assert (learnt.verdicts, learnt.examples) == (2, 2)
    assert embedded == ["send mail", "email my boss"]  # the plan's text, then the one it lacked


async def test_a_rebuild_replays_outcome_batches_in_the_order_they_took_their_locks(
    registry: asyncpg.Pool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch whose transaction began first but took its locks after another batch on the same tool was
    replayed first (by its start time): the posterior's discounts, and which calls an actor's credits counted, came
    out otherwise than online."""
    first, second = await asked(registry), await asked(registry, "email my boss")
    fails = OutcomeEvent(selection_id=first.selection_id, calls=[ToolCall(plugin_id="p1", name="t1", success=False)])
    works = OutcomeEvent(selection_id=second.selection_id, calls=[ToolCall(plugin_id="p1", name="t1", success=True)])
    started, go_on = asyncio.Event(), asyncio.Event()
    lock_credits = learning.lock_credits

    async def after_the_other(conn: asyncpg.Connection, table: str, keys: Sequence[tuple[str, str, int]]) -> object:
        started.set()  # its transaction began: applied_at is now
        await go_on.wait()
        return await lock_credits(conn, table, keys)

    monkeypatch.setattr(learning, "lock_credits", after_the_other)
    slow = asyncio.create_task(apply_outcomes(registry, [fails], RULES, POLICY, model))
    await started.wait()
    monkeypatch.setattr(learning, "lock_credits", lock_credits)
    await apply_outcomes(registry, [works], RULES, POLICY, model)  # applied first, though begun after
    go_on.set()
    await slow
    posterior = "SELECT alpha, beta FROM tool_bandit_stats"
    online = tuple(await registry.fetchrow(posterior))
    await rebuild(registry, RULES)
    assert tuple(await registry.fetchrow(posterior)) == online


async def test_credits_rows_of_past_windows_are_dropped_and_a_held_one_is_skipped(registry: asyncpg.Pool) -> None:
    """Credits refill with each window of an actor's selections, so a row untouched for two windows is never spent
    again: the tables kept one for every anonymous call and every day of every actor, for good."""
    for query in ("send mail", "email my boss", "mail the team"):
        call = ToolCall(plugin_id="p1", name="t1", success=True)
        outcome = OutcomeEvent(selection_id=(await asked(registry, query)).selection_id, calls=[call])
        await apply_outcomes(registry, [outcome], RULES, POLICY, model)
    rows = "SELECT actor FROM session_credits ORDER BY actor"
    old, held, fresh = [r["actor"] for r in await registry.fetch(rows)]
    stale = "UPDATE session_credits SET touched_at = now() - interval '3 days' WHERE actor = ANY($1::text[])"
    await registry.execute(stale, [old, held])
    window = Settings().learning_credits_window_s
    async with registry.acquire() as batch, batch.transaction():  # a batch holds this row
        await batch.execute("SELECT 1 FROM session_credits WHERE actor = $1 FOR UPDATE", held)
        assert await learning.prune_credits(registry, 2 * window) == 1
    assert [r["actor"] for r in await registry.fetch(rows)] == sorted([held, fresh])
