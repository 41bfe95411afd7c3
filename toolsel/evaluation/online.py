"""Online evaluation: a simulated agent selects, calls and reviews; the held-out quality is measured as it learns."""

import asyncio
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from contracts import OutcomeEvent, ReviewEvent, SelectReply, SelectRequest, ToolCall, ToolReview, Verdict
from toolsel.client import ToolselClient
from toolsel.evaluation.dataset import MAX_QUERY, Query
from toolsel.evaluation.metrics import mean_metrics, query_metrics
from toolsel.evaluation.ranking import CONCURRENCY, BenchCatalog, rank

STREAM_K = 10
"""Tools the simulated agent is offered per query."""


@dataclass(frozen=True)
class Point:
    events: int
    recall_at_5: float
    ndcg_at_10: float


def holdout_split(queries: Sequence[Query], holdout: int, seed: int) -> tuple[list[Query], list[Query]]:
    """(held-out slice, stream pool): a seeded shuffle; the first ``holdout`` queries are never streamed."""
    order = list(queries)
    random.Random(seed).shuffle(order)
    return order[:holdout], order[holdout:]


def stream(pool: Sequence[Query], events: int) -> list[Query]:
    """``events`` queries from the pool, cycling through it when it is shorter."""
    return [pool[i % len(pool)] for i in range(events)] if pool else []


def agent_events(reply: SelectReply, query: Query, catalog: BenchCatalog) -> tuple[OutcomeEvent, ReviewEvent]:
    """What the simulated agent reports: it calls the first relevant tool offered (the call works) and reviews
    every offered tool, perfect when relevant and unrelated otherwise."""
    offered = [(t, catalog.names.get(t.name, "") in query.relevant) for t in reply.tools]
    calls = [
        ToolCall(plugin_id=t.plugin_id, name=t.name, success=True, latency_ms=100.0)
        for t, relevant in offered
        if relevant
    ][:1]
    reviews = [
        ToolReview(plugin_id=t.plugin_id, name=t.name, verdict=Verdict.PERFECT if relevant else Verdict.UNRELATED)
        for t, relevant in offered
    ]
    outcome = OutcomeEvent(selection_id=reply.selection_id, calls=calls)
    review = ReviewEvent(selection_id=reply.selection_id, reviews=reviews, none_of_these=not reviews)
    return outcome, review


async def wait_for_learner(client: ToolselClient, settle_s: float, timeout_s: float = 60.0) -> None:
    """Until the learner's counters stop moving, then ``settle_s`` more for the selector's periodic reload."""
    deadline = time.monotonic() + timeout_s
    last = None
    while time.monotonic() < deadline:
        details = (await client.health("learner")).details
        counters = tuple(sorted((k, v) for k, v in details.items() if isinstance(v, int)))
        if counters == last:
            break
        last = counters
        await asyncio.sleep(0.5)
    await asyncio.sleep(settle_s)


async def measure(
    client: ToolselClient, catalog: BenchCatalog, holdout: Sequence[Query], events: int, seed: int
) -> Point:
    """R@5 and NDCG@10 of the full pipeline on the held-out slice (dry run, seeded)."""
    rankings = await rank(client, catalog, holdout, retrieval="hybrid", rerank=True, k=10, seed=seed)
    means = mean_metrics(query_metrics(r, q.relevant) for r, q in zip(rankings, holdout, strict=True))
    return Point(events, means["R@5"], means["NDCG@10"])


async def learn(
    client: ToolselClient,
    catalog: BenchCatalog,
    holdout: Sequence[Query],
    queries: Sequence[Query],
    *,
    every: int,
    seed: int,
    settle_s: float,
    advance: Callable[[int], None] = lambda n: None,
) -> list[Point]:
    """Stream the queries (select, then report outcome and review), measuring before and every ``every`` events."""
    curve = [await measure(client, catalog, holdout, 0, seed)]

    async def one(i: int, query: Query) -> None:
        request = SelectRequest(
            query=query.text[:MAX_QUERY],
            tenant_id=catalog.tenant_id,
            session_id=f"eval-{i}",
            k=STREAM_K,
            seed=seed + i,
            filters=catalog.filters(),
        )
        reply = await client.select(request)
        await client.report(agent_events(reply, query, catalog))

    done = 0
    while done < len(queries):
        step = min(every - done % every, CONCURRENCY, len(queries) - done)
        await asyncio.gather(*(one(done + j, queries[done + j]) for j in range(step)))
        done += step
        advance(step)
        if done % every == 0 or done == len(queries):
            await wait_for_learner(client, settle_s)
            curve.append(await measure(client, catalog, holdout, done, seed))
    return curve
