"""Learning signals (outcome, review, feedback) and the tool-state change the learner emits."""

from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Self
from uuid import UUID, uuid4

from pydantic import BaseModel, Field, PrivateAttr, StringConstraints, model_validator

from toolsel.contracts.common import DEFAULT_TENANT, SHARED_TENANT, Identifier, Message, Storable, Timestamp, ToolRef
from toolsel.contracts.identity import OPERATOR, Scope

Comment = Annotated[str, StringConstraints(max_length=2000), Storable]


def _now() -> datetime:
    return datetime.now(UTC)


class ToolCall(ToolRef):
    """One call the model made to a selected tool, and whether it worked."""

    success: bool
    latency_ms: float | None = Field(default=None, ge=0, le=3_600_000)
    error: Comment | None = None
    rating: float | None = Field(default=None, ge=0.0, le=1.0)
    """Optional quality rating of the result (an LLM judge or the runtime)."""


class Sent(BaseModel):
    """An event a client sends. Who sent it is read by the receiving service from the subject it came on (NATS
    permissions tie it to the connection) and kept beside the fields: it is never part of the payload."""

    _sender: Scope = PrivateAttr(default=OPERATOR)

    @property
    def sender(self) -> Scope:
        return self._sender

    def sent_by(self, scope: Scope) -> Self:
        """This event as received from ``scope``."""
        event = self.model_copy()
        event._sender = scope
        return event


class OutcomeEvent(Sent, Message):
    event_id: UUID = Field(default_factory=uuid4)
    occurred_at: Timestamp = Field(default_factory=_now)
    selection_id: UUID
    calls: list[ToolCall] = Field(default_factory=list, max_length=200)


class Verdict(StrEnum):
    PERFECT = "perfect"
    RELATED = "related"
    UNRELATED = "unrelated"
    BROKEN = "broken"


POSITIVE_VERDICTS = frozenset({Verdict.PERFECT, Verdict.RELATED})
"""The verdicts that say a tool served its query: a positive pair for ``toolsel tune`` and a good review on the
dashboard. The learner's usage memory reads 'related' as neutral (``services/learner/usage.py`` says why)."""


class ToolReview(ToolRef):
    verdict: Verdict


class ReviewEvent(Sent, Message):
    """Millwright review of a selection; ``none_of_these`` marks every suggestion unrelated."""

    event_id: UUID = Field(default_factory=uuid4)
    occurred_at: Timestamp = Field(default_factory=_now)
    selection_id: UUID
    reviews: list[ToolReview] = Field(default_factory=list, max_length=200)
    none_of_these: bool = False

    @model_validator(mode="after")
    def _something(self) -> "ReviewEvent":
        if not self.reviews and not self.none_of_these:
            raise ValueError("reviews: give at least one review or none_of_these")
        return self


class FeedbackEvent(ToolRef, Sent, Message):
    event_id: UUID = Field(default_factory=uuid4)
    occurred_at: Timestamp = Field(default_factory=_now)
    tenant_id: Identifier = DEFAULT_TENANT
    rating: float = Field(ge=0.0, le=1.0)
    comment: Comment = ""
    author: Identifier | None = None


class ToolState(StrEnum):
    HEALTHY = "healthy"
    WARNING = "warning"
    DEGRADED = "degraded"
    QUARANTINED = "quarantined"
    PROBATION = "probation"


class ToolStateChanged(ToolRef, Message):
    event_id: UUID = Field(default_factory=uuid4)
    occurred_at: Timestamp = Field(default_factory=_now)
    tenant_id: str = SHARED_TENANT
    """For whom: a tool's health is kept per tenant, from the calls its selections served (``*``: evidence from
    before that, which every tenant starts from)."""
    state: ToolState
    reason: str = ""


class PosteriorUpdate(ToolRef):
    tenant_id: str
    """Whose selections taught it: a posterior moves only its tenant's ranking."""
    context_key: str
    alpha: float
    beta: float
    last_success_at: datetime | None = None
    """The last counted success in this tenant and context (recency is learnt where it happened)."""


POSTERIOR_UPDATES_MAX = 100_000
"""Posterior updates one ``PosteriorsUpdated`` carries at most (the learner sends a larger batch's in several)."""


class PosteriorsUpdated(Message):
    """The learner's new Beta posteriors after a committed batch, so selectors need no database read."""

    updates: list[PosteriorUpdate] = Field(max_length=POSTERIOR_UPDATES_MAX)
