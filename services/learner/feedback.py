"""People's ratings (seed 004's tool feedback): stored once each, added to the tool's average rating."""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from uuid import UUID

import asyncpg

from contracts import FeedbackEvent

ADD_RATINGS = """
INSERT INTO tool_quality AS q (tool_id, rating_sum, rating_count)
SELECT * FROM unnest($1::bigint[], $2::float8[], $3::bigint[])
ON CONFLICT (tool_id) DO UPDATE SET rating_sum = q.rating_sum + excluded.rating_sum,
    rating_count = q.rating_count + excluded.rating_count, updated_at = now()
"""


@dataclass
class FeedbackResult:
    applied: list[UUID] = field(default_factory=list)
    duplicates: list[UUID] = field(default_factory=list)
    unknown_tool: list[UUID] = field(default_factory=list)


async def add_ratings(conn: asyncpg.Connection, totals: Mapping[int, tuple[float, int]]) -> None:
    """Add (sum of ratings, number of ratings) per tool id to the tools' quality, in id order."""
    if totals:
        ordered = sorted(totals.items())
        await conn.execute(
            ADD_RATINGS, [t for t, _ in ordered], [s for _, (s, _) in ordered], [n for _, (_, n) in ordered]
        )


async def apply_feedback(pool: asyncpg.Pool, events: Sequence[FeedbackEvent]) -> FeedbackResult:
    """Store new feedback and add it to the tools' ratings in one transaction; a repeat changes nothing."""
    result = FeedbackResult()
    unique = list({e.event_id: e for e in events}.values())
    async with pool.acquire() as conn, conn.transaction():
        inserted = {
            r["event_id"]: (r["tool_id"], r["rating"])
            for r in await conn.fetch(
                """INSERT INTO tool_feedback (event_id, tool_id, tenant_id, rating, comment, author, occurred_at)
                   SELECT u.event_id, t.id, u.tenant, u.rating, u.comment, u.author, u.at
                   FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::float8[], $6::text[], $7::text[],
                               $8::timestamptz[]) AS u(event_id, plugin_id, name, tenant, rating, comment, author, at)
                   JOIN tools t ON t.plugin_id = u.plugin_id AND t.name = u.name
                   ON CONFLICT (event_id) DO NOTHING RETURNING event_id, tool_id, rating""",
                [e.event_id for e in unique],
                [e.plugin_id for e in unique],
                [e.name for e in unique],
                [e.tenant_id for e in unique],
                [e.rating for e in unique],
                [e.comment for e in unique],
                [e.author for e in unique],
                [e.occurred_at for e in unique],
            )
        }
        known = {
            r["event_id"]
            for r in await conn.fetch(
                "SELECT event_id FROM tool_feedback WHERE event_id = ANY($1::uuid[])",
                list({e.event_id for e in unique}),
            )
        }
        result.applied = [e.event_id for e in unique if e.event_id in inserted]
        result.duplicates = [e.event_id for e in unique if e.event_id in known - set(inserted)]
        result.unknown_tool = [e.event_id for e in unique if e.event_id not in known]
        totals: dict[int, tuple[float, int]] = {}
        for tool_id, rating in inserted.values():
            total, n = totals.get(tool_id, (0.0, 0))
            totals[tool_id] = (total + rating, n + 1)
        await add_ratings(conn, totals)
    return result
