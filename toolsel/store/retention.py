"""What is past keeping, deleted: the event history older than the retention window, tool versions beyond the
newest kept, and the last-sync records of plugins with no live tools left (migration 022's indexes).

Every statement deletes at most ``batch`` rows and commits alone, so a backlog goes in short statements that hold
their locks briefly, and takes one table's write lock only (no order to keep with a relearning's, which locks the
review tables together); rows another transaction holds are skipped until the next pass. The history is walked
oldest first in (time, key) order from a cursor, so the old rows that stay are read once a pass.

What stays keeps the history whole and every event applied once:

- a selection goes once it and every outcome and review of it are older than the window, and no usage example
  was learnt from it (a model switch embeds that example's text again from it: ``usage.example_texts``);
- its outcomes and reviews go only after it, and a review's logged verdicts after the review: neither is ever
  applied without its selection, so a copy delivered again later is refused as an unknown selection, and one
  delivered while the selection stays finds its own row (a duplicate). A pass cut short leaves them for the next;
- feedback goes once older than the window (its row recognises a copy delivered again, hence the window is never
  below the events stream's age: ``Settings.history_retention_days``).

A rebuild or relearning afterwards derives from what is kept: the window's outcomes and feedback, reviews and
verdicts, and every kept example (docs/operators.md, What is kept, and for how long).
"""

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, NamedTuple, TypeAlias
from uuid import UUID

import asyncpg

Conn: TypeAlias = asyncpg.Connection | asyncpg.Pool

CUTOFF = "SELECT now() - $1::float8 * interval '1 day'"
FIRST_TIME = datetime.min.replace(tzinfo=UTC)
"""Before every row: where a walk starts."""


class Walk(NamedTuple):
    """One history table's deletion: a statement over a batch from a cursor, and the key the cursor starts at."""

    statement: str
    first_key: Any


def _walk(table: str, at: str, key: str, first_key: UUID | int, goes: str) -> Walk:
    """Delete the rows of ``table`` (alias ``t``) older than ``$1`` for which ``goes`` holds, ``$2`` at most, from
    the cursor (``$3``, ``$4``) on in (``at``, ``key``) order; returns how many went, whether a batch was full
    (``more``) and the cursor after it (``cursor_at``, ``cursor_key``). The rows walked are deleted by their
    locked addresses (a TID scan: joined on their key, a hash join read the whole table). The names are this
    module's, never a caller's."""
    key_type = "uuid" if isinstance(first_key, UUID) else "bigint"
    return Walk(
        f"""
WITH scanned AS (
    SELECT ctid AS tid, {at} AS cursor_at, {key} AS cursor_key FROM {table}
    WHERE {at} < $1 AND ({at}, {key}) > ($3::timestamptz, $4::{key_type})
    ORDER BY {at}, {key} LIMIT $2 FOR UPDATE SKIP LOCKED
), gone AS (
    DELETE FROM {table} t WHERE t.ctid = ANY(ARRAY(SELECT tid FROM scanned)) AND {goes} RETURNING 1
)
SELECT (SELECT count(*) FROM gone) AS deleted, (SELECT count(*) FROM scanned) = $2 AS more, tail.*
FROM (SELECT 1) one LEFT JOIN LATERAL (
    SELECT cursor_at, cursor_key FROM scanned ORDER BY cursor_at DESC, cursor_key DESC LIMIT 1
) tail ON true
""",
        first_key,
    )


NO_UUID = UUID(int=0)
HISTORY = {
    "selections": _walk(
        "selection_events",
        "occurred_at",
        "selection_id",
        NO_UUID,
        """NOT EXISTS (SELECT 1 FROM outcomes o WHERE o.selection_id = t.selection_id AND o.applied_at >= $1)
    AND NOT EXISTS (SELECT 1 FROM reviews r WHERE r.selection_id = t.selection_id AND r.applied_at >= $1)
    AND NOT EXISTS (SELECT 1 FROM tool_usage_examples x WHERE x.selection_id = t.selection_id)
    AND NOT EXISTS (
        SELECT 1 FROM tool_usage_examples x
        WHERE x.selection_id IS NULL AND x.event_id IN (
            SELECT event_id FROM outcomes WHERE selection_id = t.selection_id
            UNION ALL SELECT event_id FROM reviews WHERE selection_id = t.selection_id))""",
    ),
    "outcomes": _walk(
        "outcomes",
        "applied_at",
        "event_id",
        NO_UUID,
        "NOT EXISTS (SELECT 1 FROM selection_events s WHERE s.selection_id = t.selection_id)",
    ),
    "reviews": _walk(
        "reviews",
        "applied_at",
        "event_id",
        NO_UUID,
        "NOT EXISTS (SELECT 1 FROM selection_events s WHERE s.selection_id = t.selection_id)",
    ),
    "verdicts": _walk(
        "review_log", "created_at", "id", 0, "NOT EXISTS (SELECT 1 FROM reviews r WHERE r.event_id = t.event_id)"
    ),
    "feedback": _walk("tool_feedback", "applied_at", "event_id", NO_UUID, "true"),
}
"""The history's tables in the order a pass deletes from them: a selection before what refers to it."""

EXCESS_VERSIONS = """
WITH owners AS (SELECT id FROM tools WHERE id > $3 ORDER BY id LIMIT $2),
doomed AS (
    SELECT v.ctid AS tid FROM owners o
    CROSS JOIN LATERAL (SELECT max(version) AS latest FROM tool_versions WHERE tool_id = o.id) m
    JOIN tool_versions v ON v.tool_id = o.id AND v.version <= m.latest - $1
    ORDER BY v.tool_id, v.version LIMIT $2
), gone AS (
    DELETE FROM tool_versions WHERE ctid = ANY(ARRAY(SELECT tid FROM doomed)) RETURNING tool_id
)
SELECT (SELECT count(*) FROM gone) AS deleted,
       (SELECT count(*) FROM owners) = $2 OR (SELECT count(*) FROM gone) = $2 AS more,
       CASE WHEN (SELECT count(*) FROM gone) = $2 THEN (SELECT max(tool_id) FROM gone) - 1
            ELSE (SELECT max(id) FROM owners) END AS cursor_key
"""
"""Each tool's versions below its newest ``$1``, ``$2`` at most, of the ``$2`` tools after id ``$3``; the cursor
stays on a tool whose versions filled the batch. Versions are numbered on from the latest, which stays."""

PAST_SYNCS = """
WITH gone AS (
    DELETE FROM plugin_syncs p USING (
        SELECT plugin_id, tenant_id FROM plugin_syncs s
        WHERE s.applied_at < $1 AND NOT EXISTS (
            SELECT 1 FROM tools t
            WHERE t.plugin_id = s.plugin_id AND t.tenant_id = s.tenant_id AND t.deleted_at IS NULL
        )
        LIMIT $2 FOR UPDATE SKIP LOCKED
    ) d
    WHERE p.plugin_id = d.plugin_id AND p.tenant_id = d.tenant_id RETURNING 1
)
SELECT count(*) AS deleted, count(*) = $2 AS more FROM gone
"""
"""The last-sync records older than ``$1`` of plugins with no live tool of their tenant (removed), ``$2`` at most:
a live plugin's record orders its next sync; a removed one's only recognises a sync event delivered again, which
the stream no longer holds after the window."""


async def _drain(
    conn: Conn, statement: str, limit: Any, batch: int, cursor: Sequence[str], start: Sequence[Any]
) -> int:
    """Run ``statement`` batch after batch, from ``start`` on, the ``cursor`` columns it returns carried to the next,
    until one is not full; returns the rows deleted."""
    deleted, at = 0, list(start)
    while True:
        row = await conn.fetchrow(statement, limit, batch, *at)
        deleted += int(row["deleted"])
        if not row["more"]:
            return deleted
        at = [row[name] for name in cursor]


async def cutoff(conn: Conn, days: float) -> datetime:
    """The store's time ``days`` ago (one clock for every service)."""
    at: datetime = await conn.fetchval(CUTOFF, days)
    return at


async def prune_history(conn: Conn, days: float, batch: int) -> dict[str, int]:
    """Delete the event history older than ``days`` past keeping (``HISTORY``, in its order); returns the rows
    deleted per table."""
    before, cursor = await cutoff(conn, days), ("cursor_at", "cursor_key")
    return {
        name: await _drain(conn, walk.statement, before, batch, cursor, (FIRST_TIME, walk.first_key))
        for name, walk in HISTORY.items()
    }


async def prune_versions(conn: Conn, kept: int, batch: int) -> int:
    """Keep each tool's newest ``kept`` versions (at least 1: the current one); returns how many went."""
    return await _drain(conn, EXCESS_VERSIONS, max(kept, 1), batch, ("cursor_key",), (0,))


async def prune_sync_records(conn: Conn, days: float, batch: int) -> int:
    """Delete the last-sync records of removed plugins older than ``days`` (``PAST_SYNCS``)."""
    return await _drain(conn, PAST_SYNCS, await cutoff(conn, days), batch, (), ())
