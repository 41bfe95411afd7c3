"""The registry area of the admin API (the indexer serves it): tool records, history, rollback and approval,
embeddings, operators' tool writes, categories, page mappings and visibility rules."""

from datetime import datetime
from typing import Annotated, Any, Final, Literal, get_args

from pydantic import AfterValidator, Field, StringConstraints, model_validator

from toolsel.contracts.common import (
    INT32_MAX,
    SHARED_TENANT,
    AdminRequest,
    Frozen,
    JsonObject,
    Message,
    Storable,
    TenantScope,
    Text,
    ToolName,
)
from toolsel.contracts.registry import PageMappingSpec, SemVer, Slug, ToolSpec

# tool records

ToolStatus = Literal["draft", "active", "deprecated", "retired"]
EmbeddingStatus = Literal["pending", "current", "stale"]


class ToolKey(AdminRequest):
    """One tool, by its plugin and name."""

    plugin_id: Slug
    name: ToolName


class ToolQuery(AdminRequest):
    """Filters of the admin tool list, and the page of it to return (``offset`` tools skipped, ``limit`` kept)."""

    plugin_id: Slug | None = None
    status: ToolStatus | None = None
    flagged: bool | None = None
    include_deleted: bool = False
    search: Annotated[str, StringConstraints(min_length=1, max_length=128), Storable] | None = None
    """Keep the tools whose ``plugin/name`` contains it (case ignored)."""
    limit: int = Field(default=200, ge=1, le=5000)
    offset: int = Field(default=0, ge=0, le=INT32_MAX)


class ToolSummary(Frozen):
    plugin_id: str
    name: str
    tenant_id: str
    plugin_version: str
    status: ToolStatus
    schema_version: str
    embedding_status: EmbeddingStatus
    last_embedded_at: datetime | None
    review_flag: bool
    approved: bool
    updated_at: datetime
    deleted_at: datetime | None


class ToolList(Message):
    tools: list[ToolSummary]
    total: int | None = None
    """How many tools the filters keep, over every page (None from an indexer that does not count them)."""


class PluginQuery(AdminRequest):
    """Every plugin that has tools, with what its tools say of it."""


class PluginSummary(Frozen):
    plugin_id: str
    plugin_version: str
    """The highest version recorded with its tools."""
    tools: int
    """Live tools."""
    flagged: int
    """Live tools whose last change waits for an operator's approval."""
    deleted: int
    tenants: list[str]


class PluginList(Message):
    plugins: list[PluginSummary]


class ToolDetail(Message):
    tool: ToolSummary
    spec: dict[str, Any]
    content_hash: str
    versions: int


class FieldChange(Frozen):
    before: Any = None
    after: Any = None


class ToolVersion(Frozen):
    """One entry of a tool's history, with what changed from the entry before it."""

    version: int
    created_at: datetime
    reason: str
    changed_fields: list[str]
    content_hash: str
    diff: dict[str, FieldChange]


class ToolVersions(Message):
    plugin_id: str
    name: str
    versions: list[ToolVersion]


class RollbackRequest(AdminRequest):
    plugin_id: Slug
    name: ToolName
    version: int = Field(ge=1, le=INT32_MAX)


class RollbackReport(Message):
    """``new_version`` is the entry the rollback wrote (the current one when nothing differed)."""

    tool: ToolSummary
    restored_version: int
    new_version: int
    changed_fields: list[str]
    embedded: int = 0


class RecomputeRequest(AdminRequest):
    plugin_id: Slug | None = None
    force: bool = False
    """Re-embed every live tool in scope, not only the missing, stale and drifted ones."""


class RecomputeReport(Message):
    marked: int
    embedded: int
    duration_ms: float


class DriftRequest(AdminRequest):
    plugin_id: Slug | None = None
    days: float | None = Field(default=None, gt=0, le=36_500)
    """Embedding age counted as drift; the indexer's ``drift_days`` when unset."""


class DriftEntry(Frozen):
    plugin_id: str
    name: str
    embedding_status: EmbeddingStatus
    last_embedded_at: datetime | None
    days_since_embed: float | None
    reason: Literal["missing", "stale", "old"]


class DriftReport(Message):
    days: float
    tools: list[DriftEntry]


# tool writes


class ToolRegister(AdminRequest):
    """A tool added by an operator (written like a synced one: hash, version 1, embedding, registry-changed)."""

    plugin_id: Slug
    tenant_id: TenantScope = SHARED_TENANT
    plugin_version: SemVer | None = None
    """The plugin's version recorded with the tool; the plugin's current one (or 0.0.0) when unset."""
    tool: ToolSpec


class ToolUpdate(AdminRequest):
    """Fields of the tool's spec to replace; the merged spec is validated as a ``ToolSpec``."""

    plugin_id: Slug
    name: ToolName
    changes: JsonObject = Field(min_length=1, max_length=32)

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


class CategoryNode(Frozen):
    plugin_id: str
    name: str
    description: str
    workflow_hint: str
    children: list["CategoryNode"] = Field(default_factory=list)


class CategoryTree(Message):
    """Root categories (no parent, or a parent that is not declared), each with its sub-categories."""

    categories: list[CategoryNode]


class PageQuery(AdminRequest):
    page: Annotated[str, StringConstraints(min_length=1, max_length=512), Storable]


class PageCategory(Frozen):
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
    """Create (or re-prioritise) one mapping of a plugin's category; ``priority`` is ignored by a delete, and an
    existing mapping keeps its priority when none is given (a new one gets 0). A plugin's next sync replaces its
    mappings with what it declares."""

    plugin_id: Slug
    priority: int | None = Field(default=None, ge=-1000, le=1000)  # type: ignore[assignment]


# visibility rules

RuleType = Literal["org", "user", "page", "role", "tier", "composite"]
RULE_TYPES: Final[tuple[str, ...]] = get_args(RuleType)
"""Kinds of rule, as the selector's policy applies them."""
RuleEffect = Literal["allow", "deny", "pin", "unpin"]
"""``allow`` and ``deny`` decide who sees a tool; ``pin`` and ``unpin`` (seed 000, 5.6: pins overridden per
organisation) make a tool join the matching requests' answers on its own, or stop a plugin's pin doing so, without
hiding it: unpinned, it is ranked like any other tool."""
RuleTargetKind = Literal["tool", "category"]
RuleTarget = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9_.-]{0,63}/[^\s/][^/]{0,127}$")]
"""``plugin/name`` (a tool) or ``plugin/category``."""
CONDITION_KEYS: Final[tuple[str, ...]] = ("org", "user", "page", "role", "tier")
OPERATORS: Final[tuple[str, ...]] = ("eq", "ne", "in", "gt", "gte", "lt", "lte")
ORDERINGS: Final[tuple[str, ...]] = ("gt", "gte", "lt", "lte")
"""Operators that compare tiers by their order."""
LIST_OPERATORS: Final[tuple[str, ...]] = ("in",)
"""Operators whose operand is an array of text; every other operator's is one text."""


def operand_fits(op: str, value: object) -> bool:
    """Whether ``value`` is what operator ``op`` compares a request's field with: an array of text for ``in``,
    one text for the others. Shared with the selector's policy, which reads rules stored before this was checked."""
    if op in LIST_OPERATORS:
        return isinstance(value, list) and all(isinstance(item, str) for item in value)
    return isinstance(value, str)


JSON_KINDS: Final[dict[type, str]] = {
    type(None): "null",
    bool: "a boolean",
    int: "a number",
    float: "a number",
    str: "text",
    list: "an array",
    dict: "an object",
}


def _json_kind(value: object) -> str:
    """What a JSON value is, in JSON's words; an array by its first item that is not text."""
    if isinstance(value, list):
        wrong = next((item for item in value if not isinstance(item, str)), None)
        return f"an array holding {JSON_KINDS.get(type(wrong), 'another value')}"
    return JSON_KINDS.get(type(value), "another value")


def typed_operands(spec: object) -> object:
    """A condition whose operators each have an operand of their type (``operand_fits``), the only kind the policy
    can compare a request's field with; it reads one stored before this check as matching no request."""
    if isinstance(spec, dict):
        for op, value in spec.items():
            if op in OPERATORS and not operand_fits(op, value):
                kind = "an array of text" if op in LIST_OPERATORS else "text"
                raise ValueError(f"operator {op!r} takes {kind}, not {_json_kind(value)}")
    return spec


StoredCondition = Text | list[Text] | JsonObject
"""A condition as stored: text (equals; a pattern for ``page``), a list of text (one of) or operators."""
ConditionValue = Annotated[StoredCondition, AfterValidator(typed_operands)]


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
            if any(op in spec for op in ORDERINGS) and key != "tier":
                raise ValueError(f"conditions.{key}: ordering operators apply to tier only")
    if rule_type == "composite" and len(conditions) < 2:
        raise ValueError("conditions: a composite rule needs at least two conditions")


class RuleFields(Frozen):
    """What a rule says; ``target`` is ``plugin/name`` (a tool) or ``plugin/category``."""

    tenant_id: TenantScope = SHARED_TENANT
    rule_type: RuleType
    effect: RuleEffect
    target_kind: RuleTargetKind
    target: RuleTarget
    conditions: dict[str, ConditionValue] = Field(default_factory=dict, max_length=5)
    priority: int = Field(default=0, ge=-1000, le=1000)
    active: bool = True

    @model_validator(mode="after")
    def _valid_conditions(self) -> "RuleFields":
        check_conditions(self.rule_type, self.conditions)
        return self


class RuleCreate(AdminRequest):
    rule: RuleFields


class RulePatch(Frozen):
    """The fields of a rule to change; a field left out (or null) keeps its value. The rule they make is
    validated as a whole."""

    tenant_id: TenantScope | None = None
    rule_type: RuleType | None = None
    effect: RuleEffect | None = None
    target_kind: RuleTargetKind | None = None
    target: RuleTarget | None = None
    conditions: dict[str, ConditionValue] | None = Field(default=None, max_length=5)
    priority: int | None = Field(default=None, ge=-1000, le=1000)
    active: bool | None = None


class RuleUpdate(AdminRequest):
    """Change the fields of a rule that ``rule`` names; the others keep their values."""

    id: int = Field(ge=1, le=INT32_MAX)
    rule: RulePatch


class RuleKey(AdminRequest):
    id: int = Field(ge=1, le=INT32_MAX)


class RuleQuery(AdminRequest):
    tenant_id: TenantScope | None = None
    include_inactive: bool = False


class VisibilityRule(RuleFields):
    """A rule as stored. Its operands are read as they are (``StoredCondition``): a rule stored before they were
    typed can still be listed, fixed and deleted (the selector's policy lets it match no request)."""

    conditions: dict[str, StoredCondition] = Field(default_factory=dict, max_length=5)
    id: int
    created_at: datetime
    origin: Literal["operator", "tenant"] = "operator"
    """``tenant``: a tenant's own pin or unpin (``toolsel.rpc.pins``), applied beneath the operator's rules."""


class RuleList(Message):
    rules: list[VisibilityRule]
