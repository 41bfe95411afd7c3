"""Plugin sync: what a plugin declares about its tools and what the indexer reports back."""

import hashlib
import hmac
import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Annotated, Any, Final, Literal
from uuid import UUID, uuid4

from pydantic import (
    AfterValidator,
    Base64Bytes,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationInfo,
    field_validator,
    model_validator,
)

from toolsel.contracts.common import (
    SHARED_TENANT,
    DisplayName,
    JsonObject,
    Message,
    ShortText,
    Storable,
    TenantScope,
    Timestamp,
    ToolName,
)
from toolsel.contracts.execution import mcp_server
from toolsel.contracts.names import first_lookalikes, skeleton, visible
from toolsel.contracts.schemas import checked_schema

Slug = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9_.-]{0,63}$")]
Tag = Annotated[str, StringConstraints(min_length=1, max_length=64), Storable]
ExampleQuery = Annotated[str, StringConstraints(min_length=1, max_length=1000), Storable]
SemVer = Annotated[str, StringConstraints(pattern=r"^\d+\.\d+\.\d+([-+][0-9A-Za-z.-]+)?$")]
LongText = Annotated[str, StringConstraints(max_length=8000), Storable]
Hint = Annotated[str, StringConstraints(max_length=2000), Storable]
Summary = Annotated[str, StringConstraints(max_length=1000), Storable]


MAX_SCHEMA_BYTES: Final = 65_536
"""The most a tool's ``parameters`` (or ``return_schema``) may take as compact JSON: a select reply carries up to
50 schemas in one NATS message (1 MB by default), and a schema is for a model to read, not a document."""


def _now() -> datetime:
    return datetime.now(UTC)


def schema_size(schema: Any) -> Any:
    """Refuse a schema larger than ``MAX_SCHEMA_BYTES`` as compact JSON, saying how large it is."""
    size = len(json.dumps(schema, separators=(",", ":"), ensure_ascii=False).encode())
    if size > MAX_SCHEMA_BYTES:
        raise ValueError(f"the schema takes {size:,} bytes as JSON, more than the {MAX_SCHEMA_BYTES:,} allowed")
    return schema


Schema = Annotated[JsonObject, AfterValidator(schema_size), AfterValidator(checked_schema)]
"""A declared JSON Schema: bounded, in today's forms and valid (``toolsel.contracts.schemas``)."""


class PinScope(BaseModel):
    """Where a pinned tool joins answers (seed 000's pins, scoped): where any of these holds. A pin without a scope
    joins every answer."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    pages: list[Annotated[str, StringConstraints(min_length=1, max_length=256), Storable]] = Field(
        default_factory=list, max_length=50
    )
    """Page patterns (exact, ``prefix*``, ``*suffix`` or ``*contains*``) of the requests it joins."""
    categories: list[Slug] = Field(default_factory=list, max_length=50)
    """Categories whose requests it joins: the category of the tool nearest the query, or one the request's page
    maps to."""
    min_similarity: float | None = Field(default=None, ge=0.0, le=1.0)
    """It joins a request whose query its vector's cosine reaches this (a relevance floor, as
    ``ScoreBreakdown.similarity``)."""


class ToolSpec(BaseModel):
    """One tool as its plugin declares it. Everything here is hashed to detect change."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    name: Annotated[ToolName, AfterValidator(visible)]
    """No character nobody sees (``toolsel.contracts.names``); nor, within a sync, a look-alike of another tool's."""
    display_name: DisplayName = ""
    description: LongText
    parameters: Schema = Field(default_factory=lambda: {"type": "object", "properties": {}})
    return_schema: Schema | None = None
    function_summary: Summary = ""
    tags: list[Tag] = Field(default_factory=list, max_length=32)
    when_to_use: Hint = ""
    limitations: Hint = ""
    example_queries: list[ExampleQuery] = Field(default_factory=list, max_length=200)
    usage_hint: Hint = ""
    related_tools: list[ToolName] = Field(default_factory=list, max_length=32)
    category: Slug | None = None
    server: ShortText = ""
    execution_type: Literal["rest", "dispatch", "internal", "mcp"] = "internal"
    execution_config: JsonObject = Field(default_factory=dict)
    """For ``mcp``, the server that serves the tool (``toolsel.contracts.execution``); free-form otherwise."""
    pinned: bool = False
    pin_weight: int = Field(default=0, ge=0, le=1000)
    pin_scope: PinScope | None = None
    """Where the pin joins answers; None: every answer."""
    schema_version: SemVer = "1.0.0"

    @field_validator("execution_config")
    @classmethod
    def _server_declared(cls, config: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        """An ``mcp`` tool names its server as the gateway can reach it, or is refused at sync."""
        if info.data.get("execution_type") == "mcp":
            mcp_server(config)
        return config


class CategorySpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    name: Slug
    parent: Slug | None = None
    description: Summary = ""
    workflow_hint: Hint = ""


class PageMappingSpec(BaseModel):
    """Maps a page pattern (exact, ``prefix*``, ``*suffix`` or ``*contains*``) to a category."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    page_pattern: Annotated[str, StringConstraints(min_length=1, max_length=256), Storable]
    category: Slug
    priority: int = Field(default=0, ge=-1000, le=1000)


CATEGORIES_MAX = 1000
"""Categories one declaration carries at most, and one plugin holds at most."""
PAGE_MAPPINGS_MAX = 5000
"""Page mappings one declaration carries at most, and one plugin holds at most."""


class PluginSync(Message):
    """A plugin's whole declaration. Tools missing from it are soft-deleted."""

    event_id: UUID = Field(default_factory=uuid4)
    occurred_at: Timestamp = Field(default_factory=_now)
    plugin_id: Slug
    plugin_version: SemVer
    tenant_id: TenantScope = SHARED_TENANT
    credential: Annotated[str, StringConstraints(max_length=512), Storable] | None = None
    tools: list[ToolSpec] = Field(max_length=5000)
    categories: list[CategorySpec] = Field(default_factory=list, max_length=CATEGORIES_MAX)
    page_mappings: list[PageMappingSpec] = Field(default_factory=list, max_length=PAGE_MAPPINGS_MAX)

    @model_validator(mode="after")
    def _consistent(self) -> "PluginSync":
        names = [t.name for t in self.tools]
        if len(names) != len(set(names)):
            dupes = sorted({n for n in names if names.count(n) > 1})
            raise ValueError(f"tools: duplicate tool names {dupes[:5]}")
        lookalikes = first_lookalikes(names)
        if lookalikes is not None:
            first, second = lookalikes
            raise ValueError(
                f"tools.{second}.name: {names[second]!a} looks like tools.{first}.name {names[first]!a}"
                f" (both read {skeleton(names[first])!r}): an agent could not tell them apart, so rename one"
            )
        known = {c.name for c in self.categories}
        for i, tool in enumerate(self.tools):
            if tool.category is not None and tool.category not in known:
                raise ValueError(f"tools.{i}.category: unknown category {tool.category!r}")
        for i, mapping in enumerate(self.page_mappings):
            if mapping.category not in known:
                raise ValueError(f"page_mappings.{i}.category: unknown category {mapping.category!r}")
        cycle = parent_cycle({c.name: c.parent for c in self.categories})
        if cycle:
            raise ValueError(f"categories: the parents form a cycle ({' -> '.join(cycle)})")
        return self


def parent_cycle(parents: Mapping[str, str | None]) -> list[str]:
    """A cycle in the categories' parents (its names, the first one repeated last), or [] when they form a tree:
    a category in a cycle would be its own ancestor, and a walk up its parents would never end."""
    finished: set[str] = set()
    for start in parents:
        path: list[str] = []
        node: str | None = start
        while node is not None and node in parents and node not in finished:
            if node in path:
                return [*path[path.index(node) :], node]
            path.append(node)
            node = parents[node]
        finished.update(path)
    return []


class SyncReport(Message):
    event_id: UUID
    plugin_id: str
    inserted: int = 0
    updated: int = 0
    unchanged: int = 0
    deleted: int = 0
    embedded: int = 0
    flagged: int = 0
    duration_ms: float = 0.0
    """The whole sync: writing the declaration and embedding what it changed."""
    write_ms: float = 0.0
    """Of ``duration_ms``, writing the declaration (one transaction); the rest is embedding."""
    catalog_version: int = 0
    """The registry's version once this sync was written: a selector whose health reports a ``catalog_version``
    at least this one serves what the sync declared."""


MAX_SYNC_PARTS = 4096
"""Parts one sync may travel in (``SyncPart``)."""
Sha256Hex = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]


class SyncPart(Message):
    """One slice of a sync's JSON too large for one NATS message; ``ToolselClient.sync`` cuts and sends them."""

    upload_id: UUID
    part: int = Field(ge=0, lt=MAX_SYNC_PARTS)
    data: Base64Bytes


class SyncPartReceived(Message):
    upload_id: UUID
    part: int
    staged_bytes: int
    """Bytes of the upload staged so far."""


class SyncUpload(Message):
    """Apply the sync whose ``parts`` were sent: the indexer joins them in order, checks the size and SHA-256 of
    the whole, and applies it as if it had come in one message."""

    upload_id: UUID
    parts: int = Field(ge=1, le=MAX_SYNC_PARTS)
    size: int = Field(ge=1)
    sha256: Sha256Hex


class RegistryChanged(Message):
    """Published after a sync that changed anything; selectors reload their catalog on it."""

    event_id: UUID = Field(default_factory=uuid4)
    occurred_at: datetime = Field(default_factory=_now)
    plugin_id: str
    reason: str
    changed: list[str] = Field(default_factory=list)


def canonical_json(value: Any) -> str:
    """Sorted keys, no whitespace, unicode kept as is: one text per value, for hashing and signing."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def payload_signature(payload: Mapping[str, Any], key: str) -> str:
    """Hex HMAC-SHA256 of a sync payload's canonical JSON without ``credential``: a signing plugin's credential."""
    unsigned = {name: value for name, value in payload.items() if name != "credential"}
    return hmac.new(key.encode(), canonical_json(unsigned).encode(), hashlib.sha256).hexdigest()
