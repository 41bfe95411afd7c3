"""The review log (append-only: every verdict with its query embedding) and the review index built from it.

The only module that writes these tables. The index of one tool is replaced as a whole under an advisory lock
per tool, so concurrent learners queue per tool; a compaction holds the whole index.
"""

from collections.abc import Iterable, Sequence
from typing import Any

import asyncpg
import numpy as np
import numpy.typing as npt

from toolsel.store.pool import vector_array

Vector = npt.NDArray[np.float32]
Owner = tuple[int, str]
"""Whose index entries: a tool id and the scope (tenant, or '*' when shared) its reviews came from."""
IndexRow = tuple[int, str, Vector, float, int]
"""One index entry: tool id, scope, unit centroid, fitness, number of reviews."""
StoredRow = tuple[int, int, str, Vector, float, int]
"""One stored index entry: its id, then an ``IndexRow``."""
Change = tuple[int, Vector, float, int]
"""A stored entry's new centroid, fitness and number of reviews, by id."""

INDEX_LOCK = 7_433_002
"""Advisory lock class of one tool's review-index entries (key: the tool id)."""

INSERT_LOG = """
INSERT INTO review_log (event_id, tool_id, scope, query_embedding, verdict, fitness)
SELECT u.event_id, u.tool_id, u.scope, u.query, u.verdict, u.fitness
FROM unnest($1::uuid[], $2::bigint[], $3::text[], $4::vector[], $5::text[], $6::float8[])
     AS u(event_id, tool_id, scope, query, verdict, fitness)
ON CONFLICT (event_id, tool_id) DO NOTHING
"""
LOCK_TOOL_INDEX = "SELECT pg_advisory_xact_lock($1, $2)"
LOG_TEXTS = """
SELECT l.id, l.tool_id, l.scope, l.fitness, s.query
FROM review_log l LEFT JOIN reviews r ON r.event_id = l.event_id
LEFT JOIN selection_events s ON s.selection_id = r.selection_id
ORDER BY l.id
"""
"""Each logged verdict in log order with its selection's query (NULL when the selection is not stored)."""
SET_LOG_VECTORS = """
UPDATE review_log l SET query_embedding = u.vector
FROM unnest($1::bigint[], $2::vector[]) AS u(id, vector) WHERE l.id = u.id
"""
DROP_LOG = "DELETE FROM review_log WHERE id = ANY($1::bigint[])"
NEAREST_ENTRIES = """
SELECT DISTINCT ON (r.id) r.id, r.tool_id, r.scope, r.centroid, r.fitness, r.reviews
FROM unnest($1::bigint[], $2::text[], $3::vector[]) AS q(tool_id, scope, query)
CROSS JOIN LATERAL (
    SELECT * FROM review_index i WHERE i.tool_id = q.tool_id AND i.scope = q.scope
    ORDER BY i.centroid <=> q.query, i.id LIMIT 1
) r
ORDER BY r.id
"""
INSERT_INDEX = """
INSERT INTO review_index (tool_id, scope, centroid, fitness, reviews)
SELECT u.tool_id, u.scope, u.centroid, u.fitness, u.reviews
FROM unnest($1::bigint[], $2::text[], $3::vector[], $4::float8[], $5::int[])
     AS u(tool_id, scope, centroid, fitness, reviews)
"""
UPDATE_INDEX = """
UPDATE review_index r SET centroid = u.centroid, fitness = u.fitness, reviews = u.reviews
FROM unnest($1::bigint[], $2::vector[], $3::float8[], $4::int[]) AS u(id, centroid, fitness, reviews)
WHERE r.id = u.id
"""
LOCK_INDEX = "LOCK TABLE review_index IN SHARE ROW EXCLUSIVE MODE"
LOCK_INDEX_ROWS = "LOCK TABLE review_index IN ROW EXCLUSIVE MODE"
COUNT_INDEX = "SELECT count(*) FROM review_index"
DELETE_INDEX = "DELETE FROM review_index"
REVIEWED = "SELECT DISTINCT tool_id, scope FROM review_log ORDER BY tool_id, scope"
OWNER_LOG = "SELECT query_embedding, fitness FROM review_log WHERE tool_id = $1 AND scope = $2 ORDER BY id"


async def log_reviews(conn: asyncpg.Connection, rows: Sequence[tuple[Any, int, str, Vector, str, float]]) -> None:
    """Append (event id, tool id, scope, query embedding, verdict, fitness) rows; one already logged is kept.
    Vectors travel as binary ``vector[]`` (pgvector's codec), as everywhere in this store."""
    if rows:
        await conn.execute(
            INSERT_LOG,
            [e for e, _, _, _, _, _ in rows],
            [t for _, t, _, _, _, _ in rows],
            [o for _, _, o, _, _, _ in rows],
            vector_array(q for _, _, _, q, _, _ in rows),
            [v for _, _, _, _, v, _ in rows],
            [f for _, _, _, _, _, f in rows],
        )


async def lock_tool_indexes(conn: asyncpg.Connection, tool_ids: Iterable[int]) -> None:
    """Hold these tools' index entries until commit, one at a time in id order (no deadlock), and the index
    against a compaction (``lock_index``) meanwhile: read before a compaction replaced them, they would be merged
    into entries it deleted, and the review lost from the index; now one waits for the other."""
    await conn.execute(LOCK_INDEX_ROWS)
    for tool_id in sorted(tool_ids):
        await conn.execute(LOCK_TOOL_INDEX, INDEX_LOCK, tool_id)


async def nearest_entries(conn: asyncpg.Connection, reviews: Sequence[tuple[int, str, Vector]]) -> list[StoredRow]:
    """For each (tool, scope, query vector), the owner's stored entry nearest the query (the one a review may
    join), with its id; each entry once, in the order they were written. An owner's other entries stay put."""
    if not reviews:
        return []
    rows = await conn.fetch(
        NEAREST_ENTRIES, [t for t, _, _ in reviews], [o for _, o, _ in reviews], vector_array(q for _, _, q in reviews)
    )
    return [(r["id"], r["tool_id"], r["scope"], r["centroid"].to_numpy(), r["fitness"], r["reviews"]) for r in rows]


async def write_index_entries(conn: asyncpg.Connection, changed: Sequence[Change], new: Sequence[IndexRow]) -> None:
    """Update the stored entries that changed and add the new ones (the others are left as they are)."""
    if changed:
        await conn.execute(
            UPDATE_INDEX,
            [i for i, _, _, _ in changed],
            vector_array(c for _, c, _, _ in changed),
            [f for _, _, f, _ in changed],
            [n for _, _, _, n in changed],
        )
    await _insert_entries(conn, new)


async def _insert_entries(conn: asyncpg.Connection, rows: Sequence[IndexRow]) -> None:
    if rows:
        await conn.execute(
            INSERT_INDEX,
            [t for t, _, _, _, _ in rows],
            [o for _, o, _, _, _ in rows],
            vector_array(c for _, _, c, _, _ in rows),
            [f for _, _, _, f, _ in rows],
            [n for _, _, _, _, n in rows],
        )


async def lock_index(conn: asyncpg.Connection) -> int:
    """Hold the whole index until commit (online updates wait); returns its size."""
    await conn.execute(LOCK_INDEX)
    return await index_size(conn)


async def index_size(conn: asyncpg.Connection) -> int:
    count: int = await conn.fetchval(COUNT_INDEX)
    return count


async def replace_index(conn: asyncpg.Connection, rows: Sequence[IndexRow]) -> None:
    """The whole index becomes these entries (inside ``lock_index``'s transaction)."""
    await conn.execute(DELETE_INDEX)
    await _insert_entries(conn, rows)


async def reviewed(conn: asyncpg.Connection) -> list[Owner]:
    """Every (tool, scope) with a logged review, in order."""
    return [(r["tool_id"], r["scope"]) for r in await conn.fetch(REVIEWED)]


async def owner_reviews(
    conn: asyncpg.Connection, owner: Owner
) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float64]]:
    """One (tool, scope)'s logged query embeddings (a row each) and their fitness, in log order."""
    rows = await conn.fetch(OWNER_LOG, *owner)
    points = np.array([r["query_embedding"].to_numpy() for r in rows], dtype=np.float32)
    return points, np.array([r["fitness"] for r in rows], dtype=np.float64)


async def log_texts(conn: asyncpg.Connection) -> list[asyncpg.Record]:
    """Every logged verdict's ``id``, ``tool_id``, ``scope``, ``fitness`` and its selection's ``query`` (NULL when
    the selection is not stored), in log order: what a new model embeds."""
    rows: list[asyncpg.Record] = await conn.fetch(LOG_TEXTS)
    return rows


async def set_log_vectors(conn: asyncpg.Connection, ids: Sequence[int], vectors: Sequence[Vector]) -> None:
    """The logged verdicts' query embeddings become these (one row each, in the order of ``ids``)."""
    if ids:
        await conn.execute(SET_LOG_VECTORS, list(ids), vector_array(vectors))


async def drop_log(conn: asyncpg.Connection, ids: Sequence[int]) -> None:
    if ids:
        await conn.execute(DROP_LOG, list(ids))
