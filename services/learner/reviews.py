"""Reviews (seed 002) into the append-only review log and, online, the review index; and its compaction."""

import json
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
from services.learner.store import tool_ids

Embed = Callable[[Sequence[str]], Awaitable[npt.NDArray[np.float32]]]
"""Unit query embeddings, one row per query (the learner embeds a selection's query itself)."""
INDEX_LOCK = 7_433_002
"""Advisory lock class of one tool's review-index entries (key: the tool id)."""


def vector_text(vector: npt.NDArray[np.float32]) -> str:
    """pgvector's text form: arrays of vectors have no binary codec, so a batch sends them as text."""
    return "[" + ",".join(f"{x:.9g}" for x in vector.tolist()) + "]"


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
    pool: asyncpg.Pool, events: Sequence[ReviewEvent], embed: Embed, multipliers: Multipliers, merge_similarity: float
) -> ReviewResult:
    """Log each suggested tool's verdict with the selection's query embedding and fold it into the index, in
    one transaction; a review already stored changes nothing, one of an unknown selection is left out."""
    result = ReviewResult()
    unique = list({e.event_id: e for e in events}.values())
    selections = {
        r["selection_id"]: r
        for r in await pool.fetch(
            "SELECT selection_id, query, tools FROM selection_events WHERE selection_id = ANY($1::uuid[])",
            [e.selection_id for e in unique],
        )
    }
    known = [e for e in unique if e.selection_id in selections]
    result.unknown_selection = [e.event_id for e in unique if e.selection_id not in selections]
    if not known:
        return result
    queries = sorted({selections[e.selection_id]["query"] for e in known})
    vectors = dict(zip(queries, await embed(queries), strict=True))
    async with pool.acquire() as conn, conn.transaction():
        inserted = {
            r["event_id"]
            for r in await conn.fetch(
                """INSERT INTO reviews (event_id, selection_id, occurred_at, reviews, none_of_these)
                   SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::timestamptz[], $4::jsonb[], $5::bool[])
                   ON CONFLICT (event_id) DO NOTHING RETURNING event_id""",
                [e.event_id for e in known],
                [e.selection_id for e in known],
                [e.occurred_at for e in known],
                [json.dumps([r.model_dump(mode="json") for r in e.reviews]) for e in known],
                [e.none_of_these for e in known],
            )
        }
        fresh = [e for e in known if e.event_id in inserted]
        result.applied = [e.event_id for e in fresh]
        result.duplicates = [e.event_id for e in known if e.event_id not in inserted]
        logged = []  # (event id, tool key, verdict, fitness, query)
        for event in fresh:
            row = selections[event.selection_id]
            suggested = [f"{t['plugin_id']}/{t['name']}" for t in json.loads(row["tools"])]
            for key, verdict in verdicts(suggested, event.reviews, event.none_of_these).items():
                logged.append((event.event_id, key, verdict.value, multipliers.of(verdict), row["query"]))
        ids = await tool_ids(conn, [key for _, key, _, _, _ in logged])
        logged = [entry for entry in logged if entry[1] in ids]
        if not logged:
            return result
        await conn.execute(
            """INSERT INTO review_log (event_id, tool_id, query_embedding, verdict, fitness)
               SELECT u.event_id, u.tool_id, u.query::vector, u.verdict, u.fitness
               FROM unnest($1::uuid[], $2::bigint[], $3::text[], $4::text[], $5::float8[])
                    AS u(event_id, tool_id, query, verdict, fitness)
               ON CONFLICT (event_id, tool_id) DO NOTHING""",
            [e for e, _, _, _, _ in logged],
            [ids[k] for _, k, _, _, _ in logged],
            [vector_text(vectors[q]) for _, _, _, _, q in logged],
            [v for _, _, v, _, _ in logged],
            [f for _, _, _, f, _ in logged],
        )
        result.logged = len(logged)
        touched = sorted({ids[k] for _, k, _, _, _ in logged})
        for tool_id in touched:  # one at a time, in id order: concurrent learners queue per tool
            await conn.execute("SELECT pg_advisory_xact_lock($1, $2)", INDEX_LOCK, tool_id)
        entries = await _index_entries(conn, touched)
        for _, key, _, fitness, query in logged:
            entries[ids[key]] = add_review(entries[ids[key]], vectors[query], fitness, merge_similarity)
        await _replace_entries(conn, entries)
    return result


async def _index_entries(conn: asyncpg.Connection, tools: Sequence[int]) -> dict[int, list[Entry]]:
    entries: dict[int, list[Entry]] = {t: [] for t in tools}
    for r in await conn.fetch(
        "SELECT tool_id, centroid, fitness, reviews FROM review_index WHERE tool_id = ANY($1::bigint[]) ORDER BY id",
        list(tools),
    ):
        entries[r["tool_id"]].append(Entry(r["centroid"].to_numpy(), r["fitness"], r["reviews"]))
    return entries


async def _replace_entries(conn: asyncpg.Connection, entries: dict[int, list[Entry]]) -> None:
    """Swap these tools' index entries for the given ones."""
    await conn.execute("DELETE FROM review_index WHERE tool_id = ANY($1::bigint[])", list(entries))
    rows = [(tool_id, vector_text(e.centroid), e.fitness, e.reviews) for tool_id, es in entries.items() for e in es]
    if rows:
        await conn.execute(
            """INSERT INTO review_index (tool_id, centroid, fitness, reviews)
               SELECT u.tool_id, u.centroid::vector, u.fitness, u.reviews
               FROM unnest($1::bigint[], $2::text[], $3::float8[], $4::int[])
                    AS u(tool_id, centroid, fitness, reviews)""",
            *map(list, zip(*rows, strict=True)),
        )


async def compact_review_index(pool: asyncpg.Pool, clusters: int, seed: int = 0) -> Compaction:
    """Rebuild the whole review index from the review log, at most ``clusters`` entries per tool (k-means),
    in one transaction that online updates wait for; report its size before and after."""
    async with pool.acquire() as conn, conn.transaction():
        await conn.execute("LOCK TABLE review_index IN SHARE ROW EXCLUSIVE MODE")
        before = await conn.fetchval("SELECT count(*) FROM review_index")
        tools = [r["tool_id"] for r in await conn.fetch("SELECT DISTINCT tool_id FROM review_log ORDER BY tool_id")]
        entries: dict[int, list[Entry]] = {}
        for tool_id in tools:
            rows = await conn.fetch(
                "SELECT query_embedding, fitness FROM review_log WHERE tool_id = $1 ORDER BY id", tool_id
            )
            points = np.array([r["query_embedding"].to_numpy() for r in rows], dtype=np.float32)
            fitness = np.array([r["fitness"] for r in rows], dtype=np.float64)
            entries[tool_id] = compact(points, fitness, clusters, seed)
        await conn.execute("DELETE FROM review_index")
        await _replace_entries(conn, entries)
        after = await conn.fetchval("SELECT count(*) FROM review_index")
    return Compaction(before=before, after=after, tools=len(tools))
