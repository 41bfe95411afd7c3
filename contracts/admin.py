"""Operator requests beyond the tool records: tool writes, categories, page mappings, visibility rules,
quarantine, feedback, quality and analytics. Each carries the admin credential (``AdminRequest``)."""

from datetime import date, datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

from contracts.common import SHARED_TENANT, AdminRequest, Identifier, Message, ToolName
from contracts.registry import PageMappingSpec, SemVer, Slug, ToolSpec, ToolSummary

RuleType = Literal["org", "user", "page", "role", "tier", "composite"]
ConditionKey = Literal["org", "user", "page", "role", "tier"]
CONDITION_KEYS: tuple[str, ...] = ("org", "user", "page", "role", "tier")
OPERATORS: tuple[str, ...] = ("eq", "ne", "in", "gt", "gte", "lt", "lte")
Pattern = Annotated[str, StringConstraints(min_length=1, max_length=256)]


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# tools


class ToolRegister(AdminRequest):
    """A tool added by an operator (written like a synced one: hash, version 1, embedding, registry-changed)."""

    plugin_id: Slug
    tenant_id: Identifier | Literal["*"] = SHARED_TENANT
    plugin_version: SemVer | None = None
    """The plugin's version recorded with the tool; the plugin's current one (or 0.0.0) when unset."""
    tool: ToolSpec


class ToolUpdate(AdminRequest):
    """Fields of the tool's spec to replace; the merged spec is validated as a ``ToolSpec``."""

    plugin_id: Slug
    name: ToolName
    changes: dict[str, Any] = Field(min_length=1, max_length=32)

    @model_validator(mode="after")
    def _keeps_name(self) -> "ToolUpdate":
        if "name" in self.changes:
            raise ValueError("changes.name: a tool cannot be renamed (register the new name, delete the old)")
        return self


class ToolWriteReport(Message):
    """A tool after an operator's write; ``version`` is the history entry written (None when nothing changed)."""

    tool: ToolSummary
    version: int | None
    changed_fields: list[str]
    embedded: int = 0


# categories and page mappings


class CategoryQuery(AdminRequest):
    plugin_id: Slug | None = None


class CategoryNode(_Frozen):
    plugin_id: str
    name: str
    description: str
    workflow_hint: str
    children: list["CategoryNode"] = Field(default_factory=list)


class CategoryTree(Message):
    """Root categories (no parent, or a parent that is not declared), each with its sub-categories."""

    categories: list[CategoryNode]


class PageQuery(AdminRequest):
    page: Annotated[str, StringConstraints(min_length=1, max_length=512)]


class PageCategory(_Frozen):
    plugin_id: str
    category: str
    via: str
    """The mapped pattern that selects it, or ``parent:<category>`` for a sub-category."""


class PageCategories(Message):
    page: str
    categories: list[PageCategory]


class PageMappingQuery(AdminRequest):
    plugin_id: Slug | None = None
    category: Slug | None = None


class PageMapping(PageMappingSpec):
    plugin_id: str


class PageMappingList(Message):
    mappings: list[PageMapping]


class PageMappingWrite(AdminRequest, PageMappingSpec):
    """Create (or re-prioritise) one mapping of a plugin's category; ``priority`` is ignored by a delete.
    A plugin's next sync replaces its mappings with what it declares."""

    plugin_id: Slug


# visibility rules

ConditionValue = str | list[str] | dict[str, Any]


def check_conditions(rule_type: str, conditions: dict[str, ConditionValue]) -> None:
    """Keys among org/user/page/role/tier (a non-composite rule only its own), operators the policy knows."""
    for key, spec in conditions.items():
        if key not in CONDITION_KEYS:
            raise ValueError(f"conditions.{key}: unknown condition (use {', '.join(CONDITION_KEYS)})")
        if rule_type != "composite" and key != rule_type:
            raise ValueError(f"conditions.{key}: a {rule_type} rule has only a {rule_type} condition")
        if isinstance(spec, dict):
            unknown = sorted(set(spec) - set(OPERATORS))
            if unknown or not spec:
                raise ValueError(f"conditions.{key}: operators are {', '.join(OPERATORS)}")
            if any(op in spec for op in ("gt", "gte", "lt", "lte")) and key != "tier":
                raise ValueError(f"conditions.{key}: ordering operators apply to tier only")
    if rule_type == "composite" and len(conditions) < 2:
        raise ValueError("conditions: a composite rule needs at least two conditions")


class RuleFields(_Frozen):
    """What a rule says; ``target`` is ``plugin/name`` (a tool) or ``plugin/category``."""

    tenant_id: Identifier | Literal["*"] = SHARED_TENANT
    rule_type: RuleType
    effect: Literal["allow", "deny"]
    target_kind: Literal["tool", "category"]
    target: Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9_.-]{0,63}/[^\s/][^/]{0,127}$")]
    conditions: dict[str, ConditionValue] = Field(default_factory=dict, max_length=5)
    priority: int = Field(default=0, ge=-1000, le=1000)
    active: bool = True

    @model_validator(mode="after")
    def _valid_conditions(self) -> "RuleFields":
        check_conditions(self.rule_type, self.conditions)
        return self


class RuleCreate(AdminRequest):
    rule: RuleFields


class RuleUpdate(AdminRequest):
    """Replace a rule's fields (send the whole rule: it is validated as one)."""

    id: int = Field(ge=1)
    rule: RuleFields


class RuleKey(AdminRequest):
    id: int = Field(ge=1)


class RuleQuery(AdminRequest):
    tenant_id: Identifier | Literal["*"] | None = None
    include_inactive: bool = False


class VisibilityRule(RuleFields):
    id: int
    created_at: datetime


class RuleList(Message):
    rules: list[VisibilityRule]


# quarantine, feedback and quality


class QuarantineQuery(AdminRequest):
    include_released: bool = False


class QuarantineEntry(_Frozen):
    plugin_id: str
    name: str
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


class FeedbackEntry(_Frozen):
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


class ToolQuality(_Frozen):
    plugin_id: str
    name: str
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


# analytics


class AnalyticsQuery(AdminRequest):
    """A window of the event history: days from ``since`` to ``until``, both included (UTC)."""

    since: date | None = None
    until: date | None = None


class SelectionMetrics(Message):
    selections: int
    latency_p50_ms: float | None
    latency_p95_ms: float | None
    latency_p99_ms: float | None
    methods: dict[str, int]
    outcomes: dict[str, int]
    """Selections by what followed: ``success``, ``failure`` (a call failed), ``not_called`` or ``no_outcome``."""
    average_tokens_saved: float | None


class HeatCell(_Frozen):
    tool: str
    page: str
    count: int


class Heatmap(Message):
    cells: list[HeatCell]


class AccuracyPoint(_Frozen):
    day: date
    outcomes: int
    hits: int
    accuracy: float


class AccuracyTrend(Message):
    points: list[AccuracyPoint]
