"""What one sender may store, on the real PostgreSQL: an outcome keeps only its calls to offered tools, their
errors cut; a sender stores a bounded number of outcomes and reviews per selection (past it they are not stored,
a copy of a stored one is still a duplicate, another sender's are applied as ever); and keeps its latest ratings
of a tool, the average following them. Appended without bounds, one selection took 21.6 MB of outcomes."""

import json
from collections.abc import AsyncIterator, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from uuid import UUID

import asyncpg
import numpy as np
import pytest

from tests.integration.catalog import selection_event
from toolsel.contracts import (
    FeedbackEvent,
    OutcomeEvent,
    ReviewEvent,
    SelectedTool,
    ToolCall,
    ToolReview,
    Verdict,
)
from toolsel.contracts.identity import OPERATOR, Scope, tenant_scope
from toolsel.services.learner.degradation import DegradationPolicy
from toolsel.services.learner.feedback import apply_feedback
from toolsel.services.learner.fitness import Multipliers
from toolsel.services.learner.outcomes import OutcomeRules, apply_outcomes
from toolsel.services.learner.reviews import apply_reviews
from toolsel.settings import Settings
from toolsel.store import create_pool, events

SETTINGS = Settings()
RULES = replace(OutcomeRules.from_settings(SETTINGS), per_selection=2, error_chars=16)
POLICY = DegradationPolicy.from_settings(SETTINGS)
AGENT, OTHER = tenant_scope("acme", "agent"), tenant_scope("globex", "agent")
T0 = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture
async def store(empty_database: str) -> AsyncIterator[asyncpg.Pool]:
    """A store whose registry holds acme's p1/t1 and globex's p2/t1."""
    pool = await create_pool(empty_database)
    await pool.execute(
        "INSERT INTO tools (plugin_id, name, tenant_id, spec, content_hash)"
        " VALUES ('p1', 't1', 'acme', '{}', repeat('a', 64)), ('p2', 't1', 'globex', '{}', repeat('a', 64))"
    )
    yield pool
    await pool.close()


async def model(queries: Sequence[str]) -> np.ndarray:
    """One unit vector for every query."""
    return np.full((len(queries), 384), 384**-0.5, dtype=np.float32)


async def asked(pool: asyncpg.Pool, by: Scope = AGENT) -> UUID:
    """A stored selection of ``by``'s tenant, made by it, that offered its tenant's tool t1."""
    plugin = "p1" if by.tenant == "acme" else "p2"
    offered = [SelectedTool(plugin_id=plugin, name="t1", rank=0, score=0.9)]
    selection = selection_event(tenant_id=by.tenant, owner=by.token, tools=offered, candidate_count=1)
    await events.insert_selections(pool, [selection])
    return selection.selection_id


def outcome(selection_id: UUID, by: Scope = AGENT, plugin: str = "p1") -> OutcomeEvent:
    call = ToolCall(plugin_id=plugin, name="t1", success=True)
    return OutcomeEvent(selection_id=selection_id, calls=[call]).sent_by(by)


async def test_an_outcome_stores_only_its_calls_to_offered_tools_with_their_errors_cut(store: asyncpg.Pool) -> None:
    selection_id = await asked(store)
    made_up = [ToolCall(plugin_id="x", name=f"f{i}", success=False, error="e" * 2000) for i in range(199)]
    offered = ToolCall(plugin_id="p1", name="t1", success=False, error="HTTP 500: " + "e" * 1990)
    event = OutcomeEvent(selection_id=selection_id, calls=[*made_up, offered]).sent_by(AGENT)
    assert (await apply_outcomes(store, [event], RULES, POLICY, model)).applied == [event.event_id]
    row = await store.fetchrow("SELECT calls, sender FROM outcomes WHERE event_id = $1", event.event_id)
    assert json.loads(row["calls"]) == [
        {"plugin_id": "p1", "name": "t1", "success": False, "error": "HTTP 500: eeeeee"}
    ]
    assert row["sender"] == AGENT.token


async def test_past_its_bound_a_senders_outcome_is_dead_lettered_and_a_stored_ones_copy_is_a_duplicate(
    store: asyncpg.Pool,
) -> None:
    selection_id = await asked(store)
    first, second, third = (outcome(selection_id) for _ in range(3))
    for event in (first, second):
        assert (await apply_outcomes(store, [event], RULES, POLICY, model)).applied == [event.event_id]
    past = await apply_outcomes(store, [third], RULES, POLICY, model)
    assert (past.applied, past.duplicates, [e.event_id for e in past.over_limit]) == ([], [], [third.event_id])
    again = await apply_outcomes(store, [first, third], RULES, POLICY, model)
    assert (again.duplicates, [e.event_id for e in again.over_limit]) == ([first.event_id], [third.event_id])
    stored = "SELECT event_id FROM outcomes WHERE selection_id = $1"
    assert {r["event_id"] for r in await store.fetch(stored, selection_id)} == {first.event_id, second.event_id}
    successes = "SELECT successes FROM tool_quality q JOIN tools t ON t.id = q.tool_id WHERE t.plugin_id = $1"
    assert await store.fetchval(successes, "p1") == 2  # neither the one past the bound nor the copy counted

    operators = outcome(selection_id, OPERATOR)  # another sender's place on the selection is its own
    elsewhere = await asked(store, OTHER)
    theirs = [outcome(elsewhere, OTHER, "p2") for _ in range(2)]
    applied = await apply_outcomes(store, [operators, *theirs], RULES, POLICY, model)
    assert (sorted(applied.applied), applied.over_limit) == (sorted(e.event_id for e in [operators, *theirs]), [])


async def test_past_its_bound_a_senders_review_is_not_stored_nor_logged(store: asyncpg.Pool) -> None:
    selection_id = await asked(store)
    verdicts = [ToolReview(plugin_id="p1", name="t1", verdict=Verdict.UNRELATED)]
    first, second = (ReviewEvent(selection_id=selection_id, reviews=verdicts).sent_by(AGENT) for _ in range(2))
    multipliers, usage = Multipliers.from_settings(SETTINGS), RULES.usage

    async def review(batch: list[ReviewEvent]) -> tuple[list[UUID], list[UUID], list[UUID]]:
        merge = SETTINGS.review_merge_similarity
        result = await apply_reviews(store, batch, model, multipliers, merge, usage, per_selection=1)
        return result.applied, result.duplicates, [e.event_id for e in result.over_limit]

    assert await review([first]) == ([first.event_id], [], [])
    assert await review([second]) == ([], [], [second.event_id])
    assert await review([first]) == ([], [first.event_id], [])
    assert await store.fetchval("SELECT count(*) FROM reviews") == 1
    assert await store.fetchval("SELECT count(*) FROM review_log") == 1


async def test_a_sender_keeps_its_latest_ratings_of_a_tool_and_the_average_follows_them(store: asyncpg.Pool) -> None:
    def rating(value: float, minutes: int, by: Scope = AGENT) -> FeedbackEvent:
        at = T0 + timedelta(minutes=minutes)
        return FeedbackEvent(plugin_id="p1", name="t1", tenant_id="acme", rating=value, occurred_at=at).sent_by(by)

    async def ratings() -> tuple[float, int]:
        row = await store.fetchrow("SELECT rating_sum, rating_count FROM tool_quality")
        return row["rating_sum"], row["rating_count"]

    oldest, middle, latest = rating(0.0, 0), rating(1.0, 1), rating(0.5, 2)
    for event in (middle, latest, oldest):  # the oldest arrives last: it is dropped as it comes
        assert (await apply_feedback(store, [event], 2)).applied == [event.event_id]
    assert await ratings() == (1.5, 2)
    await apply_feedback(store, [oldest, middle], 2)  # copies delivered again: nothing changes
    assert await ratings() == (1.5, 2)
    newer = rating(0.25, 3)
    await apply_feedback(store, [newer, rating(0.0, 0, tenant_scope("acme", "other"))], 2)
    assert await ratings() == (0.75, 3)  # middle dropped, newer and the other sender's rating added
    kept = "SELECT sender, rating FROM tool_feedback ORDER BY occurred_at, sender"
    assert [tuple(r) for r in await store.fetch(kept)] == [
        ("t.acme.other", 0.0),
        (AGENT.token, 0.5),
        (AGENT.token, 0.25),
    ]
    async with store.acquire() as conn:
        assert await events.feedback_totals(conn) == {(1, "acme"): (0.75, 3)}  # what a rebuild adds to the calls'
