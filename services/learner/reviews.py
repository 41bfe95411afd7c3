"""Reviews (seed 002) into the append-only review log and, online, the review index; and its compaction."""

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from uuid import UUID

import asyncpg
import numpy as np
import numpy.typing as npt

from contracts import ReviewEvent
from services.learner.compaction import compact
from services.learner.fitness import Multipliers, verdicts
from services.learner.review_index import Entry, add_review
from toolsel.store import events, learning, reviews

Embed = Callable[[Sequence[str]], Awaitable[npt.NDArray[np.float32]]]
"""Unit query embeddings, one row per query (the learner embeds a selection's query itself)."""


@dataclass
class ReviewResult:
    applied: list[UUID] = field(default_factory=list)
    duplicates: list[UUID] = field(default_factory=list)
    unknown_selection: list[UUID] = field(default_factory=list)
    logged: int = 0


@dataclass(frozen=True)
class Compaction:
    before: int
    after: int
    tools: int


async def apply_reviews(
    pool: asyncpg.Pool, batch: Sequence[ReviewEvent], embed: Embed, multipliers: Multipliers, merge_similarity: float
) -> ReviewResult:
    """Log each suggested tool's verdict with the selection's query embedding and fold it into the index, in
    one transaction; a review already stored changes nothing, one of an unknown selection is left out."""
    result = ReviewResult()
    unique = list({e.event_id: e for e in batch}.values())
    selections = await events.selection_queries(pool, [e.selection_id for e in unique])
    known = [e for e in unique if e.selection_id in selections]
    result.unknown_selection = [e.event_id for e in unique if e.selection_id not in selections]
    if not known:
        return result
    queries = sorted({selections[e.selection_id]["query"] for e in known})
    vectors = dict(zip(queries, await embed(queries), strict=True))
    async with pool.acquire() as conn, conn.transaction():
        inserted = await events.insert_reviews(conn, known)
        fresh = [e for e in known if e.event_id in inserted]
        result.applied = [e.event_id for e in fresh]
        result.duplicates = [e.event_id for e in known if e.event_id not in inserted]
        verdicts_given = []  # (event id, tool key, verdict, fitness, query)
        for event in fresh:
            row = selections[event.selection_id]
            for key, verdict in verdicts(row["keys"], event.reviews, event.none_of_these).items():
                verdicts_given.append((event.event_id, key, verdict.value, multipliers.of(verdict), row["query"]))
        ids = await learning.tool_ids(conn, [key for _, key, _, _, _ in verdicts_given])
        logged = [(e, ids[k], vectors[q], v, f) for e, k, v, f, q in verdicts_given if k in ids]
        if not logged:
            return result
        await reviews.log_reviews(conn, logged)
        result.logged = len(logged)
        touched = sorted({tool_id for _, tool_id, _, _, _ in logged})
        await reviews.lock_tool_indexes(conn, touched)  # concurrent learners queue per tool
        entries: dict[int, list[Entry]] = {t: [] for t in touched}
        for tool_id, centroid, fitness, count in await reviews.index_entries(conn, touched):
            entries[tool_id].append(Entry(centroid, fitness, count))
        for _, tool_id, query, _, fitness in logged:
            entries[tool_id] = add_review(entries[tool_id], query, fitness, merge_similarity)
        await reviews.replace_index_entries(conn, touched, _index_rows(entries))
    return result


def _index_rows(entries: dict[int, list[Entry]]) -> list[reviews.IndexRow]:
    return [(tool_id, e.centroid, e.fitness, e.reviews) for tool_id, es in entries.items() for e in es]


async def compact_review_index(pool: asyncpg.Pool, clusters: int, seed: int = 0) -> Compaction:
    """Rebuild the whole review index from the review log, at most ``clusters`` entries per tool (k-means),
    in one transaction that online updates wait for; report its size before and after."""
    async with pool.acquire() as conn, conn.transaction():
        before = await reviews.lock_index(conn)
        tools = await reviews.reviewed_tools(conn)
        entries: dict[int, list[Entry]] = {}
        for tool_id in tools:
            points, fitness = await reviews.tool_reviews(conn, tool_id)
            entries[tool_id] = compact(points, fitness, clusters, seed)
        await reviews.replace_index(conn, _index_rows(entries))
        after = await reviews.index_size(conn)
    return Compaction(before=before, after=after, tools=len(tools))
