"""Reviews (seed 002) into the append-only review log and, online, the review index and the usage memory (a
'perfect' verdict is a positive example, 'unrelated' and 'broken' negative ones); and the index's compaction.

Only verdicts on tools the selection offered, and that its tenant may see, count. One actor's reviews teach a
tool's usage memory at most ``learning_credits_per_actor`` times per tenant, as its outcomes do (``credited``):
a flood of verdicts from one session moves a tool a bounded amount. Every verdict of a stored review is logged and
indexed: that history is append-only, and the fitness multipliers bound what it weighs. One sender stores at most
``per_selection`` reviews of one selection (each logs a query vector per offered tool: 100 "none of these" of one
selection took 6.8 MB); past that a review is dead-lettered (``outcomes.within``)."""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple
from uuid import UUID

import asyncpg

from toolsel.contracts import ReviewEvent, UsageUpdated, Verdict
from toolsel.services.learner.compaction import compact
from toolsel.services.learner.fitness import Multipliers, verdicts
from toolsel.services.learner.outcomes import bounded, spend, split_inserted, taught_with, teachable, with_selections
from toolsel.services.learner.review_index import Entry, add_review
from toolsel.services.learner.usage import POLARITY, Embed, Example, UsageRules, embedded, remember
from toolsel.store import events, learning, reviews
from toolsel.store.learning import CreditKey
from toolsel.tenancy import actor


@dataclass
class ReviewResult:
    applied: list[UUID] = field(default_factory=list)
    duplicates: list[UUID] = field(default_factory=list)
    unknown_selection: list[UUID] = field(default_factory=list)
    refused: list[ReviewEvent] = field(default_factory=list)
    """Reviews of selections another identity made: counted nowhere, dead-lettered."""
    over_limit: list[ReviewEvent] = field(default_factory=list)
    """Reviews past their sender's bound on their selection: stored nowhere, dead-lettered."""
    logged: int = 0
    usage: UsageUpdated | None = None


@dataclass(frozen=True)
class Compaction:
    before: int
    after: int
    tools: int


def step_start(selection: Mapping[str, Any], key: str) -> float | None:
    """Where a review's listwise step on an offered tool starts: the cosine the selection recorded for it. None
    (no step, ``usage.rankings``) when none was recorded, or when the request was split into parts: a verdict
    judges a tool for the whole request, so it does not say which part's ranking the tool should have led."""
    if any(selection["needs"]):
        return None
    recorded = zip(selection["keys"], selection["similarities"], strict=True)
    return next((s for k, s in recorded if k == key), None)


class Lesson(NamedTuple):
    """What one review teaches one tool's usage memory, and whose credit on the tool it takes."""

    credit: CreditKey
    """(tenant, actor, tool id): the selection's tenant and actor (``outcomes.actor``)."""
    example: Example


def lesson(
    event_id: UUID, selection: Mapping[str, Any], key: str, verdict: Verdict, tool_id: int, usage: UsageRules
) -> Lesson:
    """What a teaching verdict (one in ``POLARITY``) on an offered tool teaches its usage memory (with the part of
    the query the tool was offered for: ``taught_with``), and whose credit it takes."""
    example = Example(
        tool_id,
        usage.scope(selection["tenant_id"]),
        event_id,
        POLARITY[verdict],
        taught_with(selection, key),
        selection["selection_id"],
        step_start(selection, key),
    )
    return Lesson((selection["tenant_id"], actor(selection, usage.credits_window_s), tool_id), example)


def credited(
    lessons: Sequence[Lesson], used: Mapping[CreditKey, int], limit: int
) -> tuple[list[Example], dict[CreditKey, int]]:
    """The examples that count, in the order given (event order), and the credits used as they now stand: each
    lesson takes one of its actor's ``limit`` credits on its tool (``used`` before), and teaches nothing once they
    are spent, whatever its polarity.

    A lesson dropped here also leaves its review's listwise ranking (``usage.stepped``): the tools left in it are
    ranked among themselves and still step, and one left alone, or with only relevant or only irrelevant tools
    beside it, steps nothing. So a tool moves only by lessons that were credited to it, however many others
    reviewed it beside."""
    credits = dict(used)
    return [lesson.example for lesson in lessons if spend(credits, lesson.credit, 1, limit)], credits


async def apply_reviews(
    pool: asyncpg.Pool,
    batch: Sequence[ReviewEvent],
    embed: Embed,
    multipliers: Multipliers,
    merge_similarity: float,
    usage: UsageRules,
    *,
    per_selection: int,
) -> ReviewResult:
    """Log each offered tool's verdict with the selection's query embedding, fold it into the index and (with
    the part of the query the tool was offered for: ``taught_with``) the usage memory while the reviewer has
    credits on the tool (``credited``), in one transaction; a review already stored changes nothing (its
    credits included), one of an unknown selection is left out, one past its sender's ``per_selection`` reviews
    of the selection is not stored (``over_limit``)."""
    result = ReviewResult()
    known, selections, result.unknown_selection, result.refused = await with_selections(pool, batch)
    if not known:
        return result
    tools = await learning.registered(pool, [k for e in known for k in selections[e.selection_id]["keys"]])
    asked = [selections[e.selection_id] for e in known]
    queries = sorted({q for row in asked for q in (row["query"], *filter(None, row["needs"]))})
    vectors = await embedded(embed, queries)
    async with pool.acquire() as conn, conn.transaction():
        known, result.over_limit = await bounded(conn, events.REVIEWS_LOCK, known, per_selection)
        fresh, repeated = split_inserted(known, await events.insert_reviews(conn, known))
        result.applied = [e.event_id for e in fresh]
        result.duplicates = [e.event_id for e in repeated]
        logged = []  # (event id, tool id, scope, query vector, verdict, fitness)
        lessons = []
        for event in fresh:
            row = selections[event.selection_id]
            for key, verdict in verdicts(teachable(row, tools), event.reviews, event.none_of_these).items():
                tool_id, query, scope = tools[key].id, row["query"], usage.scope(row["tenant_id"])
                logged.append((event.event_id, tool_id, scope, vectors[query], verdict.value, multipliers.of(verdict)))
                if verdict in POLARITY:
                    lessons.append(lesson(event.event_id, row, key, verdict, tool_id, usage))
        if not logged:
            return result
        await reviews.log_reviews(conn, logged)
        result.logged = len(logged)
        touched = sorted({(tool_id, scope) for _, tool_id, scope, _, _, _ in logged})
        await reviews.lock_tool_indexes(conn, {t for t, _ in touched})  # concurrent learners queue per tool
        entries: dict[reviews.Owner, list[Entry]] = {o: [] for o in touched}
        reviewed = [(tool_id, scope, query) for _, tool_id, scope, query, _, _ in logged]
        for entry_id, tool_id, scope, centroid, fitness, count in await reviews.nearest_entries(conn, reviewed):
            entries[(tool_id, scope)].append(Entry(centroid, fitness, count, entry_id))
        loaded = [e for es in entries.values() for e in es]  # held: no new entry can take one of their ids
        stored = {id(e) for e in loaded}
        for _, tool_id, scope, query_vector, _, fitness in logged:
            owner = (tool_id, scope)
            entries[owner] = add_review(entries[owner], query_vector, fitness, merge_similarity)
        written = {o: [e for e in es if id(e) not in stored] for o, es in entries.items()}
        changed = [(e.id, e.centroid, e.fitness, e.reviews) for es in written.values() for e in es if e.id is not None]
        new = _index_rows({o: [e for e in es if e.id is None] for o, es in written.items()})
        await reviews.write_index_entries(conn, changed, new)
        used = await learning.lock_credits(conn, learning.REVIEW_CREDITS, [lesson.credit for lesson in lessons])
        examples, credits = credited(lessons, used, usage.credits_per_actor)
        await learning.write_credits(conn, learning.REVIEW_CREDITS, credits, used)
        result.usage = await remember(conn, examples, vectors, usage)
    return result


def _index_rows(entries: dict[reviews.Owner, list[Entry]]) -> list[reviews.IndexRow]:
    return [(tool_id, scope, e.centroid, e.fitness, e.reviews) for (tool_id, scope), es in entries.items() for e in es]


async def compact_review_index(pool: asyncpg.Pool, clusters: int, seed: int = 0) -> Compaction:
    """Rebuild the whole review index from the review log, at most ``clusters`` entries per tool and scope
    (k-means), in one transaction that online updates wait for; report its size before and after."""
    async with pool.acquire() as conn, conn.transaction():
        before = await reviews.lock_index(conn)
        owners = await reviews.reviewed(conn)
        entries: dict[reviews.Owner, list[Entry]] = {}
        for owner in owners:
            points, fitness = await reviews.owner_reviews(conn, owner)
            entries[owner] = compact(points, fitness, clusters, seed)
        await reviews.replace_index(conn, _index_rows(entries))
        after = await reviews.index_size(conn)
    return Compaction(before=before, after=after, tools=len({t for t, _ in owners}))
