"""The review log (append-only: every verdict with its query embedding) and the review index built from it.

The only module that writes these tables. The index of one tool is replaced as a whole under an advisory lock
per tool, so concurrent learners queue per tool; a compaction holds the whole index.
"""

from collections.abc import Iterable, Sequence
from typing import Any

import asyncpg
import numpy as np
import numpy.typing as npt

Vector = npt.NDArray[np.float32]
IndexRow = tuple[int, Vector, float, int]
"""One index entry: tool id, unit centroid, fitness, number of reviews."""

INDEX_LOCK = 7_433_002
"""Advisory lock class of one tool's review-index entries (key: the tool id)."""

INSERT_LOG = """
INSERT INTO review_log (event_id, tool_id, query_embedding, verdict, fitness)
SELECT u.event_id, u.tool_id, u.query::vector, u.verdict, u.fitness
FROM unnest($1::uuid[], $2::bigint[], $3::text[], $4::text[], $5::float8[])
     AS u(event_id, tool_id, query, verdict, fitness)
ON CONFLICT (event_id, tool_id) DO NOTHING
"""
LOCK_TOOL_INDEX = "SELECT pg_advisory_xact_lock($1, $2)"
INDEX_OF = "SELECT tool_id, centroid, fitness, reviews FROM review_index WHERE tool_id = ANY($1::bigint[]) ORDER BY id"
DELETE_INDEX_OF = "DELETE FROM review_index WHERE tool_id = ANY($1::bigint[])"
INSERT_INDEX = """
INSERT INTO review_index (tool_id, centroid, fitness, reviews)
SELECT u.tool_id, u.centroid::vector, u.fitness, u.reviews
FROM unnest($1::bigint[], $2::text[], $3::float8[], $4::int[]) AS u(tool_id, centroid, fitness, reviews)
"""
LOCK_INDEX = "LOCK TABLE review_index IN SHARE ROW EXCLUSIVE MODE"
COUNT_INDEX = "SELECT count(*) FROM review_index"
DELETE_INDEX = "DELETE FROM review_index"
REVIEWED_TOOLS = "SELECT DISTINCT tool_id FROM review_log ORDER BY tool_id"
TOOL_LOG = "SELECT query_embedding, fitness FROM review_log WHERE tool_id = $1 ORDER BY id"


def vector_text(vector: Vector) -> str:
    """pgvector's text form: arrays of vectors have no binary codec, so a batch sends them as text."""
    return "[" + ",".join(f"{x:.9g}" for x in vector.tolist()) + "]"


async def log_reviews(conn: asyncpg.Connection, rows: Sequence[tuple[Any, int, Vector, str, float]]) -> None:
    """Append (event id, tool id, query embedding, verdict, fitness) rows; one already logged is kept as is."""
    if rows:
        await conn.execute(
            INSERT_LOG,
            [e for e, _, _, _, _ in rows],
            [t for _, t, _, _, _ in rows],
            [vector_text(q) for _, _, q, _, _ in rows],
            [v for _, _, _, v, _ in rows],
            [f for _, _, _, _, f in rows],
        )


async def lock_tool_indexes(conn: asyncpg.Connection, tool_ids: Iterable[int]) -> None:
    """Hold these tools' index entries until commit, one at a time in id order (no deadlock)."""
    for tool_id in sorted(tool_ids):
        await conn.execute(LOCK_TOOL_INDEX, INDEX_LOCK, tool_id)


async def index_entries(conn: asyncpg.Connection, tool_ids: Sequence[int]) -> list[IndexRow]:
    """These tools' index entries, in the order they were written."""
    return [
        (r["tool_id"], r["centroid"].to_numpy(), r["fitness"], r["reviews"])
        for r in await conn.fetch(INDEX_OF, list(tool_ids))
    ]


async def replace_index_entries(conn: asyncpg.Connection, tool_ids: Sequence[int], rows: Sequence[IndexRow]) -> None:
    """Swap these tools' index entries for the given ones."""
    await conn.execute(DELETE_INDEX_OF, list(tool_ids))
    await _insert_entries(conn, rows)


async def _insert_entries(conn: asyncpg.Connection, rows: Sequence[IndexRow]) -> None:
    if rows:
        await conn.execute(
            INSERT_INDEX,
            [t for t, _, _, _ in rows],
            [vector_text(c) for _, c, _, _ in rows],
            [f for _, _, f, _ in rows],
            [n for _, _, _, n in rows],
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


async def reviewed_tools(conn: asyncpg.Connection) -> list[int]:
    """Every tool with a logged review, in id order."""
    return [r["tool_id"] for r in await conn.fetch(REVIEWED_TOOLS)]


async def tool_reviews(
    conn: asyncpg.Connection, tool_id: int
) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float64]]:
    """One tool's logged query embeddings (a row each) and their fitness, in log order."""
    rows = await conn.fetch(TOOL_LOG, tool_id)
    points = np.array([r["query_embedding"].to_numpy() for r in rows], dtype=np.float32)
    return points, np.array([r["fitness"] for r in rows], dtype=np.float64)
