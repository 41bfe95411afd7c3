"""The event history: selection events, outcomes, reviews (the processed-review ids) and tool feedback.

The only module that writes these tables (the learner stores what it consumes). Inserts are idempotent by
event id: a redelivered event is recognised here and changes nothing.
"""

import json
from collections.abc import AsyncIterator, Iterable, Sequence
from typing import TypeAlias
from uuid import UUID

import asyncpg
from pydantic import TypeAdapter

from toolsel.contracts import FeedbackEvent, OutcomeEvent, ReviewEvent, SelectionEvent, ToolCall, ToolReview

Conn: TypeAlias = asyncpg.Connection | asyncpg.Pool

INSERT_SELECTIONS = """
INSERT INTO selection_events (selection_id, occurred_at, tenant_id, user_id, session_id, query, page, tier, role,
    context_key, method, tools, candidate_count, latency_ms, tokens_selected, tokens_catalog, owner, intent)
SELECT * FROM unnest($1::uuid[], $2::timestamptz[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
    $8::text[], $9::text[], $10::text[], $11::text[], $12::jsonb[], $13::int[], $14::float8[], $15::int[], $16::int[],
    $17::text[], $18::text[])
ON CONFLICT (selection_id) DO NOTHING RETURNING selection_id
"""

SELECTION_KEYS = """
SELECT selection_id, occurred_at AS asked_at, tenant_id, owner, user_id, session_id, query, context_key,
       ARRAY(SELECT t ->> 'plugin_id' || '/' || (t ->> 'name') FROM jsonb_array_elements(tools) t) AS keys,
       ARRAY(SELECT t ->> 'sub_query' FROM jsonb_array_elements(tools) t) AS needs,
       ARRAY(SELECT (t ->> 'similarity')::float8 FROM jsonb_array_elements(tools) t) AS similarities
FROM selection_events"""
"""A stored selection: when (by the selector's clock), who asked (tenant, the owner's scope, user, session), its
query and context, its tools'
``plugin/name`` keys in rank order and beside them the part of the query each was offered for (NULL: the whole
query) and its recorded cosine (NULL: not recorded), unpacked by the database."""

SELECTIONS_OF = SELECTION_KEYS + " WHERE selection_id = ANY($1::uuid[])"

INSERT_OUTCOMES = """
INSERT INTO outcomes (event_id, selection_id, occurred_at, calls, sender)
SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::timestamptz[], $4::jsonb[], $5::text[])
ON CONFLICT (event_id) DO NOTHING RETURNING event_id
"""

OUTCOMES_LOCK = 7_433_005
"""Advisory lock class of one selection's outcomes (key: a hash of its id)."""
REVIEWS_LOCK = 7_433_006
"""Advisory lock class of one selection's reviews (key: a hash of its id)."""
LOCK_SELECTIONS = """
SELECT pg_advisory_xact_lock($1, k) FROM (SELECT DISTINCT hashtext(s::text) AS k FROM unnest($2::uuid[]) s ORDER BY k) h
"""
STORED_ABOUT = {
    OUTCOMES_LOCK: "SELECT event_id, selection_id, sender FROM outcomes WHERE selection_id = ANY($1::uuid[])",
    REVIEWS_LOCK: "SELECT event_id, selection_id, sender FROM reviews WHERE selection_id = ANY($1::uuid[])",
}
"""What is stored about some selections, by the lock class that holds them."""

OUTCOME_HISTORY = f"""
SELECT o.event_id, o.occurred_at, o.calls, s.*
FROM outcomes o JOIN ({SELECTION_KEYS}) s USING (selection_id)
ORDER BY o.applied_order NULLS FIRST, o.applied_at, o.event_id
"""
"""Every stored outcome with its selection (``SELECTION_KEYS``), in the order they were applied (``applied_order``;
a batch's outcomes in event-id order, as the learner applies them)."""
MARK_APPLIED = """
UPDATE outcomes SET applied_order = n.next FROM (SELECT nextval('outcome_apply_order') AS next) n
WHERE event_id = ANY($1::uuid[])
"""

REVIEW_HISTORY = f"""
SELECT r.event_id, r.reviews, r.none_of_these, s.*
FROM reviews r JOIN ({SELECTION_KEYS}) s USING (selection_id)
ORDER BY r.applied_at, r.event_id
"""
"""Every stored review with its selection (``SELECTION_KEYS``), in the order they were applied."""

INSERT_REVIEWS = """
INSERT INTO reviews (event_id, selection_id, occurred_at, reviews, none_of_these, sender)
SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::timestamptz[], $4::jsonb[], $5::bool[], $6::text[])
ON CONFLICT (event_id) DO NOTHING RETURNING event_id
"""

INSERT_FEEDBACK = """
INSERT INTO tool_feedback (event_id, tool_id, tenant_id, rating, comment, author, occurred_at, sender)
SELECT u.event_id, t.id, u.tenant, u.rating, u.comment, u.author, u.at, u.sender
FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::float8[], $6::text[], $7::text[], $8::timestamptz[],
            $9::text[])
     AS u(event_id, plugin_id, name, tenant, rating, comment, author, at, sender)
JOIN tools t ON t.plugin_id = u.plugin_id AND t.name = u.name AND t.tenant_id IN (u.tenant, '*')
             AND t.deleted_at IS NULL
ON CONFLICT (event_id) DO NOTHING RETURNING event_id, tool_id, tenant_id, rating
"""

STORED_FEEDBACK = "SELECT event_id FROM tool_feedback WHERE event_id = ANY($1::uuid[])"

EVICT_FEEDBACK = """
WITH ranked AS (
    SELECT f.ctid AS tid, row_number() OVER (
        PARTITION BY f.tool_id, f.tenant_id, f.sender ORDER BY f.occurred_at DESC, f.event_id DESC) AS n
    FROM tool_feedback f
    JOIN (SELECT DISTINCT * FROM unnest($1::bigint[], $2::text[], $3::text[])) AS u(tool_id, tenant_id, sender)
      ON f.tool_id = u.tool_id AND f.tenant_id = u.tenant_id AND f.sender = u.sender
)
DELETE FROM tool_feedback WHERE ctid = ANY(ARRAY(SELECT tid FROM ranked WHERE n > $4))
RETURNING event_id, tool_id, tenant_id, rating
"""
"""Each (tool, tenant, sender)'s feedback beyond its latest ``$4`` (by when it happened, then id), deleted."""

FEEDBACK_TOTALS = """
SELECT tool_id, tenant_id, sum(rating) AS total, count(*) AS n FROM tool_feedback GROUP BY tool_id, tenant_id
"""

REVIEW_LIST = TypeAdapter(list[ToolReview])
CALL_LIST = TypeAdapter(list[ToolCall])
"""One serialisation of a whole call list (in pydantic's core) instead of a model per call: the hot path."""


async def insert_selections(conn: Conn, events: Sequence[SelectionEvent]) -> int:
    """Record selection events; a repeated one changes nothing. Returns how many were new."""
    if not events:
        return 0
    rows = [
        (
            e.selection_id,
            e.occurred_at,
            e.tenant_id,
            e.user_id,
            e.session_id,
            e.query,
            e.page,
            e.tier,
            e.role,
            e.context_key,
            e.method,
            json.dumps([t.model_dump(mode="json") for t in e.tools]),
            e.candidate_count,
            e.latency_ms,
            e.tokens_selected,
            e.tokens_catalog,
            e.owner,
            e.intent,
        )
        for e in events
    ]
    return len(await conn.fetch(INSERT_SELECTIONS, *map(list, zip(*rows, strict=True))))


async def selection_keys(conn: Conn, selection_ids: Sequence[UUID]) -> dict[UUID, asyncpg.Record]:
    """The stored selections among these ids (``SELECTION_KEYS``)."""
    return {r["selection_id"]: r for r in await conn.fetch(SELECTIONS_OF, list(selection_ids))}


async def lock_selections(conn: asyncpg.Connection, lock: int, selection_ids: Sequence[UUID]) -> None:
    """Hold these selections' outcomes (``OUTCOMES_LOCK``) or reviews (``REVIEWS_LOCK``) until commit, in one
    order (no deadlock): what is counted about one is not added to meanwhile."""
    await conn.execute(LOCK_SELECTIONS, lock, list(selection_ids))


async def stored_about(
    conn: asyncpg.Connection, lock: int, selection_ids: Sequence[UUID]
) -> list[tuple[UUID, UUID, str | None]]:
    """(event id, selection id, sender) of every outcome (``OUTCOMES_LOCK``) or review (``REVIEWS_LOCK``) stored
    about these selections."""
    rows = await conn.fetch(STORED_ABOUT[lock], list(selection_ids))
    return [(r["event_id"], r["selection_id"], r["sender"]) for r in rows]


async def insert_outcomes(conn: asyncpg.Connection, events: Sequence[OutcomeEvent]) -> set[UUID]:
    """Store outcomes with their senders; returns the event ids that were new (the others were stored before)."""
    rows = await conn.fetch(
        INSERT_OUTCOMES,
        [e.event_id for e in events],
        [e.selection_id for e in events],
        [e.occurred_at for e in events],
        [CALL_LIST.dump_json(e.calls, exclude_none=True).decode() for e in events],
        [e.sender.token for e in events],
    )
    return {r["event_id"] for r in rows}


async def outcome_history(conn: asyncpg.Connection, chunk: int) -> AsyncIterator[list[asyncpg.Record]]:
    """Every stored outcome (``OUTCOME_HISTORY``), ``chunk`` rows at a time; only inside a transaction."""
    cursor = await conn.cursor(OUTCOME_HISTORY)
    while rows := await cursor.fetch(chunk):
        yield rows


async def mark_applied(conn: Conn, event_ids: Sequence[UUID]) -> None:
    """Number a batch of outcomes in the order batches were applied: called once the batch holds every lock it
    writes under, so a batch on the same tools that waited for it gets a later number (``OUTCOME_HISTORY``)."""
    await conn.execute(MARK_APPLIED, list(event_ids))


def history_events(rows: Sequence[asyncpg.Record]) -> list[OutcomeEvent]:
    """Outcome events again, from rows of ``outcome_history``."""
    return [
        OutcomeEvent(
            event_id=r["event_id"],
            selection_id=r["selection_id"],
            occurred_at=r["occurred_at"],
            calls=CALL_LIST.validate_json(r["calls"]),
        )
        for r in rows
    ]


async def insert_reviews(conn: asyncpg.Connection, events: Sequence[ReviewEvent]) -> set[UUID]:
    """Store reviews with their senders by event id; returns the ids that were new."""
    rows = await conn.fetch(
        INSERT_REVIEWS,
        [e.event_id for e in events],
        [e.selection_id for e in events],
        [e.occurred_at for e in events],
        [json.dumps([r.model_dump(mode="json") for r in e.reviews]) for e in events],
        [e.none_of_these for e in events],
        [e.sender.token for e in events],
    )
    return {r["event_id"] for r in rows}


async def review_history(conn: Conn) -> list[tuple[asyncpg.Record, list[ToolReview]]]:
    """Every stored review (``REVIEW_HISTORY``) with its verdicts read back."""
    return [(r, REVIEW_LIST.validate_json(r["reviews"])) for r in await conn.fetch(REVIEW_HISTORY)]


async def insert_feedback(
    conn: asyncpg.Connection, events: Sequence[FeedbackEvent]
) -> dict[UUID, tuple[int, str, float]]:
    """Store feedback, with its sender, on live (not removed) tools its tenant may see; returns (tool id, tenant,
    rating) of each new event."""
    rows = await conn.fetch(
        INSERT_FEEDBACK,
        [e.event_id for e in events],
        [e.plugin_id for e in events],
        [e.name for e in events],
        [e.tenant_id for e in events],
        [e.rating for e in events],
        [e.comment for e in events],
        [e.author for e in events],
        [e.occurred_at for e in events],
        [e.sender.token for e in events],
    )
    return {r["event_id"]: (r["tool_id"], r["tenant_id"], r["rating"]) for r in rows}


async def evict_feedback(
    conn: asyncpg.Connection, owners: Iterable[tuple[int, str, str]], kept: int
) -> dict[UUID, tuple[int, str, float]]:
    """Drop each (tool id, tenant, sender)'s feedback beyond its latest ``kept``; returns (tool id, tenant, rating)
    of each dropped event."""
    rows = sorted(set(owners))
    if not rows:
        return {}
    dropped = await conn.fetch(EVICT_FEEDBACK, *map(list, zip(*rows, strict=True)), kept)
    return {r["event_id"]: (r["tool_id"], r["tenant_id"], r["rating"]) for r in dropped}


async def stored_feedback(conn: asyncpg.Connection, event_ids: Sequence[UUID]) -> set[UUID]:
    """Which of these feedback events are stored (new or from before)."""
    return {r["event_id"] for r in await conn.fetch(STORED_FEEDBACK, list(event_ids))}


async def feedback_totals(conn: asyncpg.Connection) -> dict[tuple[int, str], tuple[float, int]]:
    """(sum of ratings, number of ratings) of every tool with stored feedback."""
    return {(r["tool_id"], r["tenant_id"]): (r["total"], r["n"]) for r in await conn.fetch(FEEDBACK_TOTALS)}
