"""People's ratings (seed 004's tool feedback): stored once each, added to the tool's average rating for the
rating's tenant.

A rating counts only for a tool its tenant may see (the tool's own tenant's or a shared one); one on another
tenant's tool is refused and changes nothing.

Each sender keeps its latest ``kept`` ratings of a tool for a tenant (by when they happened); an older one is
dropped and taken out of the average. What reads feedback needs no more: the dashboard and ``toolsel feedback
list`` show a tool's latest, the average stands for what raters think now, and analytics exports rows as they
arrive. Appended without a bound, one identity's 1,000 ratings took 3.1 MB and weighed 1,000 times in its
tenant's average. The latest, not the first: a bound on the first would deafen a sender for good (the dashboard
relays every person's rating through one identity), and an identity may change its mind. A sender dating its
ratings ahead only keeps its own longer."""

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


def rating_changes(
    added: Mapping[UUID, tuple[int, str, float]], dropped: Mapping[UUID, tuple[int, str, float]]
) -> dict[QualityKey, tuple[float, int]]:
    """What new ratings and dropped ones change in each (tool id, tenant)'s sum and number of ratings; one added
    and dropped at once (older than the kept ones: a copy delivered again of one dropped before) changes nothing."""
    totals = rating_totals({e: r for e, r in added.items() if e not in dropped})
    for key, (total, n) in rating_totals({e: r for e, r in dropped.items() if e not in added}).items():
        kept_total, kept_n = totals.get(key, (0.0, 0))
        totals[key] = (kept_total - total, kept_n - n)
    return totals


def visible(event: FeedbackEvent, tool: learning.Registered) -> bool:
    return tool.tenant_id in (event.tenant_id, SHARED_TENANT)


async def apply_feedback(pool: asyncpg.Pool, batch: Sequence[FeedbackEvent], kept: int) -> FeedbackResult:
    """Store new feedback, drop each of its senders' ratings of a tool beyond the latest ``kept``, and move the
    tools' ratings by both, in one transaction; a repeat changes nothing."""
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
        senders = {e.event_id: e.sender.token for e in fresh}
        owners = [(tool_id, tenant, senders[e]) for e, (tool_id, tenant, _) in inserted.items()]
        dropped = await events.evict_feedback(conn, owners, kept)
        await learning.add_ratings(conn, rating_changes(inserted, dropped))
    return result
