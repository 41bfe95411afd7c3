"""Usage memory: the query examples each tool learnt from use, per scope (a tenant, or '*' when shared), the
vectors computed from them (tool_usage_examples, tool_usage_vectors), and the sum of the queries each scope's
reviews ranked (usage_query_totals).

The only module that writes these tables. An example is keyed by (tool, scope, event, polarity), so an event
applied twice adds nothing. A tool's examples and vector change under a per-tool advisory lock; a commit's
vectors carry one version, taken under a lock held until commit, so versions become visible in order and a
selector that fetches ``version > its watermark`` misses none.
"""

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import NamedTuple
from uuid import UUID

import asyncpg
import numpy as np
import numpy.typing as npt

from toolsel.store.pool import vector_array

Vector = npt.NDArray[np.float32]
ExampleRow = tuple[int, str, UUID, int, int, UUID]
"""tool id, scope, event id, polarity (+1, -1), row of its query (see ``add_examples``), selection id."""


class VectorRow(NamedTuple):
    """One (tool, scope)'s usage vector as ``write_vectors`` stores it."""

    tool_id: int
    scope: str
    centroid: Vector
    """Unit centroid of the positives."""
    negative_centroid: Vector | None
    """Unit centroid of the negatives (None: none)."""
    positives: int
    negatives: int
    words: Sequence[str]
    """Learnt words: the newest positives' texts that have them."""
    residual: Vector | None
    """None: left as stored."""


Found = tuple[int, Vector, str | None]
"""An example read back: polarity, query vector, words."""

TOOL_LOCK = 7_433_003
"""Advisory lock class of one tool's usage memory (key: the tool id)."""
VERSION_LOCK = 7_433_004
"""Advisory lock held from taking a version to commit."""

FORGET_TOOLS = (
    "DELETE FROM tool_usage_vectors WHERE tool_id = ANY($1::bigint[])",
    "DELETE FROM tool_usage_examples WHERE tool_id = ANY($1::bigint[])",
)
EXAMPLE_TEXTS = """
SELECT x.id, COALESCE(x.words, (
    SELECT COALESCE(NULLIF(offered ->> 'sub_query', ''), s.query)
    FROM selection_events s CROSS JOIN jsonb_array_elements(s.tools) offered JOIN tools t ON t.id = x.tool_id
    WHERE s.selection_id = COALESCE(x.selection_id, o.selection_id, r.selection_id)
      AND offered ->> 'plugin_id' = t.plugin_id AND offered ->> 'name' = t.name
    LIMIT 1
)) AS query
FROM tool_usage_examples x
LEFT JOIN outcomes o ON o.event_id = x.event_id
LEFT JOIN reviews r ON r.event_id = x.event_id
ORDER BY x.id
"""
"""Each example's text: its words (a positive's), else the part of its selection's query the tool was offered for
(``outcomes.taught_with``), the selection found by the example's, else its event's; NULL when it is not stored."""
SET_EXAMPLE_VECTORS = """
UPDATE tool_usage_examples x SET query_vector = u.vector
FROM unnest($1::bigint[], $2::vector[]) AS u(id, vector) WHERE x.id = u.id
"""
DROP_EXAMPLES = "DELETE FROM tool_usage_examples WHERE id = ANY($1::bigint[])"
LEARNT = "SELECT DISTINCT tool_id, scope FROM tool_usage_examples ORDER BY tool_id, scope"
FORGET_VECTORS = "DELETE FROM tool_usage_vectors; DELETE FROM usage_query_totals"

LOCK_TOOLS = "SELECT pg_advisory_xact_lock($1, t) FROM (SELECT DISTINCT unnest($2::int[]) AS t ORDER BY t) ids"
INSERT_EXAMPLES = """
INSERT INTO tool_usage_examples (tool_id, scope, event_id, polarity, query_vector, words, selection_id)
SELECT u.tool_id, u.scope, u.event_id, u.polarity, ($6::vector[])[u.query + 1],
       CASE WHEN u.polarity = 1 THEN ($7::text[])[u.query + 1] END, u.selection_id
FROM unnest($1::bigint[], $2::text[], $3::uuid[], $4::smallint[], $5::int[], $8::uuid[])
     AS u(tool_id, scope, event_id, polarity, query, selection_id)
WHERE NOT EXISTS (
    SELECT 1 FROM tool_usage_examples x
    WHERE x.selection_id = u.selection_id AND x.tool_id = u.tool_id AND x.scope = u.scope AND x.polarity = u.polarity
)
ON CONFLICT (tool_id, scope, event_id, polarity) DO NOTHING
RETURNING tool_id, scope
"""
TRIM_EXAMPLES = """
DELETE FROM tool_usage_examples e USING (
    SELECT x.id, row_number() OVER (PARTITION BY x.tool_id, x.scope, x.polarity ORDER BY x.id DESC) AS newer
    FROM tool_usage_examples x JOIN unnest($1::bigint[], $2::text[]) AS u(tool_id, scope)
         ON x.tool_id = u.tool_id AND x.scope = u.scope
) ranked
WHERE e.id = ranked.id AND ranked.newer > $3
"""
TAUGHT_BY = """
SELECT DISTINCT x.tool_id, x.scope
FROM tool_usage_examples x JOIN unnest($1::uuid[], $2::text[]) AS u(selection_id, scope)
     ON x.selection_id = u.selection_id AND x.scope = u.scope
WHERE x.polarity = 1
"""
EXAMPLES_OF = """
SELECT x.tool_id, x.scope, x.polarity, x.query_vector,
       CASE WHEN NOT EXISTS (
           SELECT 1 FROM tool_usage_examples o
           WHERE o.selection_id = x.selection_id AND o.scope = x.scope AND o.polarity = 1 AND o.tool_id <> x.tool_id
             AND o.words = x.words
       ) THEN x.words END AS words
FROM tool_usage_examples x JOIN unnest($1::bigint[], $2::text[]) AS u(tool_id, scope)
     ON x.tool_id = u.tool_id AND x.scope = u.scope
ORDER BY x.tool_id, x.scope, x.id DESC
"""
NEXT_VERSION = "SELECT pg_advisory_xact_lock($1), nextval('tool_usage_version') AS version"
UPSERT_VECTORS = """
INSERT INTO tool_usage_vectors AS v
    (tool_id, scope, centroid, negative_centroid, positives, negatives, words, residual, version)
SELECT u.tool_id, u.scope, u.centroid, u.negative, u.positives, u.negatives,
       ARRAY(SELECT jsonb_array_elements_text(u.words)), u.residual, $9
FROM unnest($1::bigint[], $2::text[], $3::vector[], $4::vector[], $5::int[], $6::int[], $7::jsonb[], $8::vector[])
     AS u(tool_id, scope, centroid, negative, positives, negatives, words, residual)
ON CONFLICT (tool_id, scope) DO UPDATE SET centroid = excluded.centroid,
    negative_centroid = excluded.negative_centroid, positives = excluded.positives,
    negatives = excluded.negatives, words = excluded.words, residual = COALESCE(excluded.residual, v.residual),
    version = excluded.version, updated_at = now()
"""
RESIDUALS_OF = """
SELECT v.tool_id, v.scope, v.residual
FROM tool_usage_vectors v JOIN unnest($1::bigint[], $2::text[]) AS u(tool_id, scope)
     ON v.tool_id = u.tool_id AND v.scope = u.scope
WHERE v.residual IS NOT NULL
"""
QUERY_TOTALS_OF = "SELECT scope, total, queries FROM usage_query_totals WHERE scope = ANY($1::text[])"
ADD_QUERY_TOTALS = """
INSERT INTO usage_query_totals AS t (scope, total, queries)
SELECT * FROM unnest($1::text[], $2::vector[], $3::bigint[])
ON CONFLICT (scope) DO UPDATE SET total = t.total + excluded.total, queries = t.queries + excluded.queries
"""


async def lock_tools(conn: asyncpg.Connection, tool_ids: Iterable[int]) -> None:
    """Hold these tools' usage memory until commit, taken one at a time in id order (no deadlock)."""
    await conn.execute(LOCK_TOOLS, TOOL_LOCK, sorted(set(tool_ids)))


async def add_examples(
    conn: asyncpg.Connection, rows: Sequence[ExampleRow], queries: npt.NDArray[np.float32], texts: Sequence[str]
) -> list[tuple[int, str]]:
    """Add examples, each naming its query's row in ``queries`` and ``texts`` (a positive one keeps the text as
    its words); one already stored, or of the same selection, tool, scope and polarity (an outcome and a review
    of one selection are one query), is not added. Returns the (tool id, scope) pairs that gained one. The vectors
    travel as one binary ``vector[]``."""
    if not rows:
        return []
    found = await conn.fetch(
        INSERT_EXAMPLES,
        [r[0] for r in rows],
        [r[1] for r in rows],
        [r[2] for r in rows],
        [r[3] for r in rows],
        [r[4] for r in rows],
        vector_array(queries),
        list(texts),
        [r[5] for r in rows],
    )
    return sorted({(r["tool_id"], r["scope"]) for r in found})


async def taught_by(conn: asyncpg.Connection, selections: Sequence[tuple[UUID, str]]) -> list[tuple[int, str]]:
    """The (tool id, scope) pairs these (selection, scope) pairs already taught positively."""
    rows = await conn.fetch(TAUGHT_BY, [s for s, _ in selections], [scope for _, scope in selections])
    return sorted({(r["tool_id"], r["scope"]) for r in rows})


async def trim_examples(conn: asyncpg.Connection, touched: Sequence[tuple[int, str]], limit: int) -> None:
    """Keep the newest ``limit`` examples per (tool, scope, polarity) of these pairs."""
    await conn.execute(TRIM_EXAMPLES, [t for t, _ in touched], [s for _, s in touched], limit)


async def examples_of(
    conn: asyncpg.Connection, touched: Sequence[tuple[int, str]]
) -> dict[tuple[int, str], list[Found]]:
    """(polarity, query vector, words) of every example of these (tool, scope) pairs, newest first."""
    rows = await conn.fetch(EXAMPLES_OF, [t for t, _ in touched], [s for _, s in touched])
    result: dict[tuple[int, str], list[Found]] = {}
    for r in rows:
        vector = np.asarray(r["query_vector"].to_numpy(), dtype=np.float32)
        result.setdefault((r["tool_id"], r["scope"]), []).append((r["polarity"], vector, r["words"]))
    return result


async def write_vectors(conn: asyncpg.Connection, rows: Sequence[VectorRow]) -> int:
    """Store these usage vectors under one new version (returned); the version lock is held until commit."""
    version: int = (await conn.fetchrow(NEXT_VERSION, VERSION_LOCK))["version"]
    await conn.execute(
        UPSERT_VECTORS,
        [r.tool_id for r in rows],
        [r.scope for r in rows],
        vector_array(r.centroid for r in rows),
        vector_array(r.negative_centroid for r in rows),
        [r.positives for r in rows],
        [r.negatives for r in rows],
        [json.dumps(list(r.words)) for r in rows],
        vector_array(r.residual for r in rows),
        version,
    )
    return version


async def residuals_of(conn: asyncpg.Connection, pairs: Sequence[tuple[int, str]]) -> dict[tuple[int, str], Vector]:
    """The stored residuals of these (tool, scope) pairs (a pair without one is left out)."""
    rows = await conn.fetch(RESIDUALS_OF, [t for t, _ in pairs], [s for _, s in pairs])
    return {(r["tool_id"], r["scope"]): np.asarray(r["residual"].to_numpy(), dtype=np.float32) for r in rows}


async def query_totals(conn: asyncpg.Connection, scopes: Sequence[str]) -> dict[str, tuple[Vector, int]]:
    """The sum and count of the queries each of these scopes' reviews ranked (a scope with none is left out)."""
    rows = await conn.fetch(QUERY_TOTALS_OF, list(scopes))
    return {r["scope"]: (np.asarray(r["total"].to_numpy(), dtype=np.float32), r["queries"]) for r in rows}


async def add_query_totals(conn: asyncpg.Connection, totals: Mapping[str, tuple[Vector, int]]) -> None:
    """Add these sums and counts to the scopes' (an addition in the statement: concurrent batches both count)."""
    if totals:
        scopes = sorted(totals)
        await conn.execute(
            ADD_QUERY_TOTALS, scopes, vector_array(totals[s][0] for s in scopes), [totals[s][1] for s in scopes]
        )


async def forget_tools(conn: asyncpg.Connection, tool_ids: Sequence[int]) -> None:
    """The query examples learnt for these tools and the vectors made of them."""
    for statement in FORGET_TOOLS:
        await conn.execute(statement, list(tool_ids))


async def example_texts(conn: asyncpg.Connection) -> list[tuple[int, str | None]]:
    """(id, text) of every example in the order they were learnt (``EXAMPLE_TEXTS``): what a new model embeds."""
    return [(r["id"], r["query"]) for r in await conn.fetch(EXAMPLE_TEXTS)]


async def set_example_vectors(conn: asyncpg.Connection, ids: Sequence[int], vectors: Sequence[Vector]) -> None:
    """The examples' query vectors become these (one row each, in the order of ``ids``)."""
    if ids:
        await conn.execute(SET_EXAMPLE_VECTORS, list(ids), vector_array(vectors))


async def drop_examples(conn: asyncpg.Connection, ids: Sequence[int]) -> None:
    if ids:
        await conn.execute(DROP_EXAMPLES, list(ids))


async def learnt(conn: asyncpg.Connection) -> list[tuple[int, str]]:
    """Every (tool id, scope) with a stored example."""
    return [(r["tool_id"], r["scope"]) for r in await conn.fetch(LEARNT)]


async def forget_vectors(conn: asyncpg.Connection) -> None:
    """Every usage vector and scope's query total (before they are written again from the examples)."""
    await conn.execute(FORGET_VECTORS)
