"""The learning area of the admin API (the learner serves it): quality, quarantine and people's feedback."""

from datetime import datetime

from pydantic import Field, model_validator

from toolsel.contracts.common import AdminRequest, Frozen, Identifier, Message, TenantScope, ToolName, ToolRef
from toolsel.contracts.events import ToolStateChanged
from toolsel.contracts.registry import Slug


class QuarantineRelease(ToolRef, AdminRequest):
    """An operator's request to put a quarantined tool back on probation; the reply is QuarantineReleased."""

    tenant_id: TenantScope | None = None
    """The tenant it is quarantined for; None: every tenant it is quarantined for."""
    released_by: Identifier = "operator"


class QuarantineReleased(Message):
    """What an operator's release did: one change per tenant the tool was quarantined for."""

    changes: list[ToolStateChanged]


class QuarantineQuery(AdminRequest):
    include_released: bool = False


class QuarantineEntry(Frozen):
    plugin_id: str
    name: str
    tenant_id: str
    """The tenant it is quarantined for (its calls tripped it)."""
    reason: str
    since: datetime
    released_at: datetime | None
    released_by: str | None
    state: str


class QuarantineList(Message):
    entries: list[QuarantineEntry]


class FeedbackQuery(AdminRequest):
    plugin_id: Slug
    name: ToolName
    limit: int = Field(default=20, ge=1, le=1000)


class FeedbackEntry(Frozen):
    event_id: str
    tenant_id: str
    rating: float
    comment: str
    author: str | None
    occurred_at: datetime


class FeedbackList(Message):
    plugin_id: str
    name: str
    feedback: list[FeedbackEntry]


class QualityQuery(AdminRequest):
    """One tool's quality (``plugin_id`` and ``name``), or every tool not healthy (``degraded``)."""

    plugin_id: Slug | None = None
    name: ToolName | None = None
    degraded: bool = False

    @model_validator(mode="after")
    def _one_scope(self) -> "QualityQuery":
        if self.degraded == (self.name is not None) or (self.name is not None and self.plugin_id is None):
            raise ValueError("name: ask for one tool (plugin_id and name) or for the degraded ones, not both")
        return self


class ToolQuality(Frozen):
    """A tool's quality and health for one tenant: the calls its selections served."""

    plugin_id: str
    name: str
    tenant_id: str
    calls: int
    successes: int
    failures: int
    success_rate: float | None
    average_rating: float | None
    ratings: int
    latency_p50_ms: float | None
    latency_p99_ms: float | None
    quality: float | None
    rolling_score: float | None
    state: str
    degraded_since: datetime | None


class QualityList(Message):
    tools: list[ToolQuality]
