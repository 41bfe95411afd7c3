"""People's ratings (seed 004's tool feedback): stored once each, added to the tool's average rating for the
rating's tenant.

A rating counts only for a tool its tenant may see (the tool's own tenant's or a shared one); one on another
tenant's tool is refused and changes nothing."""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from uuid import UUID

import asyncpg

from toolsel.contracts import SHARED_TENANT, FeedbackEvent
from toolsel.services.learner.outcomes import split_inserted
from toolsel.store import events, learning
from toolsel.store.learning import QualityKey


@dataclass
class FeedbackResult:
    applied: list[UUID] = field(default_factory=list)
    duplicates: list[UUID] = field(default_factory=list)
    unknown_tool: list[UUID] = field(default_factory=list)
    refused: list[FeedbackEvent] = field(default_factory=list)
    """Feedback on a tool its tenant may not see: to dead-letter, never to apply."""


def rating_totals(ratings: Mapping[UUID, tuple[int, str, float]]) -> dict[QualityKey, tuple[float, int]]:
    """(sum of ratings, number of ratings) per (tool id, tenant), from (tool id, tenant, rating) per feedback
    event: a tenant's ratings move that tenant's view of the tool alone."""
    totals: dict[QualityKey, tuple[float, int]] = {}
    for tool_id, tenant, rating in ratings.values():
        total, n = totals.get((tool_id, tenant), (0.0, 0))
        totals[tool_id, tenant] = (total + rating, n + 1)
    return totals


def visible(event: FeedbackEvent, tool: learning.Registered) -> bool:
    return tool.tenant_id in (event.tenant_id, SHARED_TENANT)


async def apply_feedback(pool: asyncpg.Pool, batch: Sequence[FeedbackEvent]) -> FeedbackResult:
    """Store new feedback and add it to the tools' ratings in one transaction; a repeat changes nothing."""
    result = FeedbackResult()
    unique = list({e.event_id: e for e in batch}.values())
    tools = await learning.registered(pool, [e.key for e in unique])
    result.refused = [e for e in unique if e.key in tools and not visible(e, tools[e.key])]
    allowed = [e for e in unique if e.key not in tools or visible(e, tools[e.key])]
    async with pool.acquire() as conn, conn.transaction():
        inserted = await events.insert_feedback(conn, allowed)
        known = await events.stored_feedback(conn, [e.event_id for e in allowed])
        fresh, others = split_inserted(allowed, inserted)
        result.applied = [e.event_id for e in fresh]
        result.duplicates = [e.event_id for e in others if e.event_id in known]
        result.unknown_tool = [e.event_id for e in others if e.event_id not in known]
        await learning.add_ratings(conn, rating_totals(inserted))
    return result
