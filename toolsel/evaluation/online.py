"""Online evaluation: a simulated agent selects, calls and reviews; the held-out quality is measured as it learns."""

import asyncio
import random
import time
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

from toolsel.client import ToolselClient
from toolsel.contracts import OutcomeEvent, ReviewEvent, SelectReply, SelectRequest, ToolCall, ToolReview, Verdict
from toolsel.contracts.selection import QUERY_MAX
from toolsel.errors import Timeout
from toolsel.evaluation.dataset import Query
from toolsel.evaluation.discovery import discovery
from toolsel.evaluation.metrics import mean_metrics, query_metrics
from toolsel.evaluation.plan import Event
from toolsel.evaluation.ranking import CONCURRENCY, BenchCatalog, rank
from toolsel.evaluation.split import same_text
from toolsel.waiting import eventually

STREAM_K = 10
"""Tools the simulated agent is offered per query."""


@dataclass(frozen=True)
class Point:
    events: int
    recall_at_5: float
    ndcg_at_10: float
    learner_wait_s: float = 0.0
    """How long the measurement waited, after the stream, for the learner to deal with every event sent: its lag."""


@dataclass(frozen=True)
class Streamed:
    """What a stream produced: the held-out curve, per event the set's names of the tools offered, and what the
    stream could teach (``toolsel.evaluation.discovery``)."""

    curve: list[Point]
    offered: list[list[str]] = field(default_factory=list)
    discovery: dict[str, Any] = field(default_factory=dict)


class Holdout(NamedTuple):
    holdout: list[Query]
    pool: list[Query]
    overlap_dropped: int
    """Queries left out of the pool because their text is a held-out query's (``split.same_text``)."""


def holdout_split(queries: Sequence[Query], holdout: int, seed: int) -> Holdout:
    """(held-out slice, stream pool, pool queries dropped): a seeded shuffle; the first ``holdout`` queries are
    never streamed, at most half of a small set so that something is left to stream. Nor is their text: a set
    holds the same query under several ids (toolbench_stb's G2_category/43200 and /43201), and one streamed would
    teach the answer to the held-out one it measures."""
    order = list(queries)
    random.Random(seed).shuffle(order)
    cut = min(holdout, len(order) // 2)
    held = {same_text(q.text) for q in order[:cut]}
    pool = [q for q in order[cut:] if same_text(q.text) not in held]
    return Holdout(order[:cut], pool, len(order) - cut - len(pool))


def stream(pool: Sequence[Query], events: int) -> list[Query]:
    """``events`` queries from the pool, cycling through it when it is shorter."""
    return [pool[i % len(pool)] for i in range(events)] if pool else []


def _verdict(relevant: bool, failing: bool) -> Verdict:
    if failing:
        return Verdict.BROKEN
    return Verdict.PERFECT if relevant else Verdict.UNRELATED


def agent_events(
    reply: SelectReply, query: Query, catalog: BenchCatalog, failing: frozenset[str] = frozenset()
) -> tuple[OutcomeEvent, ReviewEvent]:
    """What the simulated agent reports: it calls the relevant tools offered in order until one works (a call to a
    ``failing`` tool fails) and reviews every offered tool: broken when failing, else perfect when relevant and
    unrelated otherwise."""
    offered = [(t, catalog.names.get(t.name, "")) for t in reply.tools]
    calls: list[ToolCall] = []
    for t, name in offered:
        if name in query.relevant:
            works = name not in failing
            error = None if works else "unavailable"
            calls.append(ToolCall(plugin_id=t.plugin_id, name=t.name, success=works, latency_ms=100.0, error=error))
            if works:
                break
    reviews = [
        ToolReview(plugin_id=t.plugin_id, name=t.name, verdict=_verdict(name in query.relevant, name in failing))
        for t, name in offered
    ]
    outcome = OutcomeEvent(selection_id=reply.selection_id, calls=calls)
    review = ReviewEvent(selection_id=reply.selection_id, reviews=reviews, none_of_these=not reviews)
    return outcome, review


HANDLED = ("applied", "reviews", "dead_letters")
"""The learner's health counters that together count every outcome and review event it has dealt with, each once.
Not ``duplicates``: the stream sends every event once, so a duplicate is a redelivery of one already counted (a
learner behind the stream sees many), and counting it would measure before the learning had happened."""


async def learner_handled(client: ToolselClient) -> int | None:
    """How many events the learner has dealt with so far; None while it is too busy to answer in time."""
    try:
        details = (await client.health("learner")).details
    except Timeout:
        return None
    return sum(int(details.get(name, 0)) for name in HANDLED)


async def wait_for_learner(client: ToolselClient, target: int, settle_s: float, timeout_s: float = 300.0) -> float:
    """Until the learner has dealt with ``target`` events (or ``timeout_s`` passed), then ``settle_s`` more for
    the selectors to take in what it broadcast: a measurement never runs ahead of the learning it measures.
    Returns the seconds the learner took (the settling left out)."""

    async def dealt_with() -> bool:
        handled = await learner_handled(client)
        return handled is not None and handled >= target

    started = time.monotonic()
    await eventually(dealt_with, timeout_s, every_s=0.5)
    waited = time.monotonic() - started
    await asyncio.sleep(settle_s)
    return waited


async def measure(
    client: ToolselClient, catalog: BenchCatalog, holdout: Sequence[Query], events: int, seed: int
) -> Point:
    """R@5 and NDCG@10 of the full pipeline on the held-out slice (dry run, seeded)."""
    return score_point(events, await held_out_rankings(client, catalog, holdout, seed), holdout)


async def held_out_rankings(
    client: ToolselClient, catalog: BenchCatalog, holdout: Sequence[Query], seed: int
) -> list[list[str]]:
    """The full pipeline's top 10 for each held-out query (dry run, seeded: the same state gives the same answer)."""
    return await rank(client, catalog, holdout, retrieval="hybrid", rerank=True, k=10, seed=seed)


def score_point(events: int, rankings: Sequence[Sequence[str]], queries: Sequence[Query]) -> Point:
    """Mean R@5 and NDCG@10 of the rankings, as the curve's point after ``events`` events."""
    means = mean_metrics(query_metrics(r, q.relevant) for r, q in zip(rankings, queries, strict=True))
    return Point(events, means["R@5"], means["NDCG@10"])


async def learn(
    client: ToolselClient,
    catalog: BenchCatalog,
    holdout: Sequence[Query],
    events: Sequence[Event],
    *,
    every: int,
    seed: int,
    settle_s: float,
    changes: Mapping[int, Callable[[BenchCatalog], Awaitable[BenchCatalog]]] | None = None,
    paced: Collection[int] = (),
    advance: Callable[[int], None] = lambda n: None,
) -> Streamed:
    """Stream the events (select, then report outcome and review), measuring before and every ``every`` events;
    ``changes[i]`` runs before event ``i`` and returns the catalog from then on (a tool added mid-stream).

    Before each event of ``paced`` the stream waits until the learner has dealt with every event sent so far: the
    stream goes faster than any agent, so without the wait a tracked tool's rank would measure the learner's lag
    behind it rather than what the learner makes of the tool's own events."""
    changes = changes or {}
    curve = [await measure(client, catalog, holdout, 0, seed)]
    before = await learner_handled(client) or 0
    offered: list[list[str]] = [[] for _ in events]

    async def one(i: int, event: Event) -> None:
        request = SelectRequest(
            query=event.query.text[:QUERY_MAX],
            tenant_id=catalog.tenant_id,
            session_id=f"eval-{i}",
            k=STREAM_K,
            seed=seed + i,
            filters=catalog.filters(),
        )
        reply = await client.select(request)
        offered[i] = catalog.ranked(reply)
        await client.report(agent_events(reply, event.query, catalog, event.failing))

    done = 0
    while done < len(events):
        if done in changes:
            catalog = await changes[done](catalog)
        if done in paced and done:
            await wait_for_learner(client, before + 2 * done, settle_s)
        upcoming = min((c for c in (*changes, *paced) if c > done), default=len(events))
        step = min(every - done % every, CONCURRENCY, upcoming - done)
        await asyncio.gather(*(one(done + j, events[done + j]) for j in range(step)))
        done += step
        advance(step)
        if done % every == 0 or done == len(events):
            waited = await wait_for_learner(client, before + 2 * done, settle_s)  # an outcome and a review per event
            curve.append(replace(await measure(client, catalog, holdout, done, seed), learner_wait_s=waited))
    return Streamed(curve, offered, discovery(events, offered))
