"""Learner throughput: outcome (or review) events applied per second by ``apply_outcomes`` (``apply_reviews``)
against PostgreSQL.

    python scripts/bench_learner.py [--events 100000] [--batch 1000] [--concurrency 2] [--reviews]

Uses TOOLSEL_DATABASE_URL, or starts an embedded PostgreSQL in a temporary directory. Registers 200 tools and
2,000 stored selections of 7 tools in 9 page contexts, then applies outcomes (one or two calls each, with
latency, some with a rating and a failure) in batches, each batch one transaction as the learner runs it:
deduplication, posteriors, quality counters, the degradation state machine, the usage memory (the selection
queries are embedded by the packaged model, once each: a learner caches them). With ``--reviews`` the events
are reviews of all 7 offered tools instead, one 'perfect' and six 'unrelated' (the review log, the review index and
the usage memory's positive and negative examples, as in the online evaluation).
"""

import argparse
import asyncio
import gc
import random
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from uuid import uuid4

import numpy as np
import numpy.typing as npt

from toolsel.contracts import OutcomeEvent, ReviewEvent, SelectedTool, SelectionEvent, ToolCall, ToolReview, Verdict
from toolsel.embedded import EmbeddedPostgres
from toolsel.runtime import load_model
from toolsel.services.learner.degradation import DegradationPolicy
from toolsel.services.learner.fitness import Multipliers
from toolsel.services.learner.outcomes import OutcomeRules, apply_outcomes
from toolsel.services.learner.reviews import apply_reviews
from toolsel.settings import get_settings
from toolsel.store import create_pool
from toolsel.store.events import insert_selections

PLUGIN = "bench"
WORDS = (
    "send",
    "read",
    "create",
    "delete",
    "list",
    "search",
    "weather",
    "flight",
    "hotel",
    "invoice",
    "email",
    "calendar",
    "file",
    "image",
    "translate",
    "stock",
    "price",
    "news",
    "music",
    "video",
    "map",
    "route",
    "order",
    "payment",
    "ticket",
    "user",
    "account",
    "report",
    "chart",
    "database",
    "backup",
    "deploy",
)


def _selections(rng: random.Random, count: int, tools: int) -> list[SelectionEvent]:
    return [
        SelectionEvent(
            selection_id=uuid4(),
            tenant_id="bench",
            query=" ".join(rng.choices(WORDS, k=8)) + f" {i}",
            tier="free",
            context_key=f"free:/page{i % 9}:general",
            method="vector",
            tools=[
                SelectedTool(plugin_id=PLUGIN, name=f"tool{t}", rank=r, score=0.5, similarity=0.6 - 0.05 * r)
                for r, t in enumerate(rng.sample(range(tools), 7))  # cosines as recorded: reviews take their step
            ],
            candidate_count=30,
            latency_ms=5.0,
            tokens_selected=700,
            tokens_catalog=20_000,
        )
        for i in range(count)
    ]


def _reviews(selections: list[SelectionEvent], count: int) -> list[ReviewEvent]:
    return [
        ReviewEvent(
            selection_id=selection.selection_id,
            reviews=[
                ToolReview(plugin_id=PLUGIN, name=t.name, verdict=Verdict.PERFECT if t.rank == 0 else Verdict.UNRELATED)
                for t in selection.tools
            ],
        )
        for selection in (selections[i % len(selections)] for i in range(count))
    ]


def _outcomes(rng: random.Random, selections: list[SelectionEvent], count: int) -> list[OutcomeEvent]:
    events = []
    for i in range(count):
        selection = selections[i % len(selections)]
        first, second = selection.tools[0], selection.tools[1]
        calls = [ToolCall(plugin_id=PLUGIN, name=first.name, success=rng.random() < 0.8, latency_ms=rng.random() * 900)]
        if rng.random() < 0.5:
            calls.append(ToolCall(plugin_id=PLUGIN, name=second.name, success=True, latency_ms=50, rating=0.9))
        events.append(OutcomeEvent(selection_id=selection.selection_id, calls=calls))
    return events


async def _measure(dsn: str, events: int, batch: int, concurrency: int, reviewed: bool) -> None:
    settings = get_settings()
    pool = await create_pool(dsn)
    try:
        await pool.execute(
            "INSERT INTO tools (plugin_id, name, spec, content_hash) SELECT $1, 'tool' || i, '{}', repeat('0', 64)"
            " FROM generate_series(0, 199) i ON CONFLICT (plugin_id, name) DO NOTHING",
            PLUGIN,
        )
        rng = random.Random(7)
        bound = settings.reviews_per_selection_max if reviewed else settings.outcomes_per_selection_max
        selections = _selections(rng, max(2000, -(-events // bound)), 200)  # none past its bound: all are applied
        await insert_selections(pool, selections)
        made = _reviews(selections, events) if reviewed else _outcomes(rng, selections, events)
        batches = [made[i : i + batch] for i in range(0, len(made), batch)]
        gc.freeze()  # the pre-built events are the benchmark's, not the learner's: keep the collector off them

        policy, rules = DegradationPolicy.from_settings(settings), OutcomeRules.from_settings(settings)
        embedder = await load_model(settings)
        vectors = dict(zip((s.query for s in selections), embedder.embed([s.query for s in selections]), strict=True))

        async def embed(queries: Sequence[str]) -> npt.NDArray[np.float32]:
            return np.vstack([vectors[q] for q in queries])

        multipliers = Multipliers.from_settings(settings)

        async def worker(mine: list[list[Any]]) -> None:
            for events in mine:
                if reviewed:
                    await apply_reviews(
                        pool,
                        events,
                        embed,
                        multipliers,
                        settings.review_merge_similarity,
                        rules.usage,
                        per_selection=settings.reviews_per_selection_max,
                    )
                else:
                    await apply_outcomes(pool, events, rules, policy, embed)

        started = time.perf_counter()
        await asyncio.gather(*(worker(batches[w::concurrency]) for w in range(concurrency)))
        elapsed = time.perf_counter() - started
        what = "review" if reviewed else "outcome"
        print(f"{events} {what} events, batches of {batch}, {concurrency} at a time: {elapsed:.2f} s")
        print(f"throughput: {events / elapsed:,.0f} events/s")
    finally:
        await pool.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=1, help="batches in flight at once, as a learner runs them")
    parser.add_argument("--reviews", action="store_true", help="review events instead of outcomes")
    args = parser.parse_args()
    dsn = get_settings().database_url
    if dsn:
        asyncio.run(_measure(dsn, args.events, args.batch, args.concurrency, args.reviews))
        return
    with tempfile.TemporaryDirectory(prefix="toolsel-bench-") as home:
        postgres = EmbeddedPostgres(Path(home) / "pg")
        try:
            asyncio.run(_measure(postgres.start(), args.events, args.batch, args.concurrency, args.reviews))
        finally:
            postgres.stop()


if __name__ == "__main__":
    main()
