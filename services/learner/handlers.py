"""The learner's event table: each kind of event, its model and the function that applies a batch of it.

Applying is the learning modules' work (``outcomes``, ``reviews``, ``feedback``) plus what the process does
around it: count, broadcast new posteriors, usage versions and tool-state changes to the selectors (after
commit; one that fails is logged, never raised: ``broadcast``), dead-letter what is refused.
"""

from collections.abc import Callable, Sequence
from typing import Any, TypeVar
from uuid import UUID

from pydantic import BaseModel

from toolsel.contracts import (
    FeedbackEvent,
    OutcomeEvent,
    ReviewEvent,
    SelectionEvent,
    subjects,
)
from toolsel.messaging import dead_letter
from toolsel.services.learner.broadcast import announce, publish_posteriors, publish_usage
from toolsel.services.learner.consumers import EventKind
from toolsel.services.learner.feedback import apply_feedback
from toolsel.services.learner.outcomes import apply_outcomes, not_owner, past_limit
from toolsel.services.learner.reviews import apply_reviews
from toolsel.services.learner.state import Applied, LearnerState
from toolsel.store import events

E = TypeVar("E", bound=BaseModel)


def _applied(batch: Sequence[OutcomeEvent | ReviewEvent | FeedbackEvent], unknown: Sequence[UUID]) -> list[Applied]:
    left_out = set(unknown)
    return ["unknown" if e.event_id in left_out else "applied" for e in batch]


async def refuse(state: LearnerState, kind: str, refused: Sequence[E], why: Callable[[E], str]) -> None:
    """Keep refused events aside with their reason (acknowledged as handled: never retried)."""
    for event in refused:
        await dead_letter(state.broker, kind, event.model_dump_json().encode(), why(event))
    state.counters.dead_letters += len(refused)


async def selections(state: LearnerState, batch: Sequence[SelectionEvent]) -> list[Applied]:
    await events.insert_selections(state.pool, batch)
    return ["applied"] * len(batch)


async def outcomes(state: LearnerState, batch: Sequence[OutcomeEvent]) -> list[Applied]:
    result = await apply_outcomes(state.pool, batch, state.rules, state.policy, state.embed)
    state.counters.applied += len(result.applied)
    state.counters.duplicates += len(result.duplicates)
    await publish_posteriors(state, result.posteriors)
    await publish_usage(state, result.usage)
    await announce(state, result.transitions)
    await refuse(state, "outcome", result.refused, not_owner)
    limit = state.rules.per_selection
    await refuse(state, "outcome", result.over_limit, lambda e: past_limit(e, "outcomes", limit))
    return _applied(batch, result.unknown_selection)


async def reviews(state: LearnerState, batch: Sequence[ReviewEvent]) -> list[Applied]:
    s = state.settings
    limit = s.reviews_per_selection_max
    result = await apply_reviews(
        state.pool,
        batch,
        state.embed,
        state.multipliers,
        s.review_merge_similarity,
        state.rules.usage,
        per_selection=limit,
    )
    state.counters.reviews += len(result.applied)
    state.counters.duplicates += len(result.duplicates)
    await publish_usage(state, result.usage)
    await refuse(state, "review", result.refused, not_owner)
    await refuse(state, "review", result.over_limit, lambda e: past_limit(e, "reviews", limit))
    return _applied(batch, result.unknown_selection)


async def feedback(state: LearnerState, batch: Sequence[FeedbackEvent]) -> list[Applied]:
    result = await apply_feedback(state.pool, batch, state.settings.feedback_kept_per_sender)
    state.counters.feedback += len(result.applied)
    state.counters.duplicates += len(result.duplicates)
    await refuse(state, "feedback", result.refused, lambda e: f"tool {e.key} is not visible to tenant {e.tenant_id}")
    return _applied(batch, result.unknown_tool)


def _unknown_selection(event: SelectionEvent | OutcomeEvent | ReviewEvent) -> str:
    return f"unknown selection {event.selection_id}"


EVENT_KINDS: tuple[EventKind[Any], ...] = (
    EventKind("selection", subjects.SELECTION_EVENTS, SelectionEvent, selections, _unknown_selection),
    EventKind(
        "outcome", subjects.OUTCOME_ROOT, OutcomeEvent, outcomes, _unknown_selection, scoped=True, awaits="selection"
    ),
    EventKind(
        "review", subjects.REVIEW_ROOT, ReviewEvent, reviews, _unknown_selection, scoped=True, awaits="selection"
    ),
    EventKind(
        "feedback",
        subjects.FEEDBACK_ROOT,
        FeedbackEvent,
        feedback,
        lambda e: f"unknown or removed tool {e.key}",
        scoped=True,
    ),
)
"""kind -> subject -> model -> apply: the one place that says which events the learner consumes."""
