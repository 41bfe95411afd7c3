"""Pieces shared by every message: the schema version, tool references and the typed error reply."""

from enum import StrEnum
from typing import Annotated, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

SCHEMA_VERSION: Final = 1
SHARED_TENANT: Final = "*"
"""Tenant id of tools that every tenant may see."""

Identifier = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")]
"""Ids a stranger can send: tenants, users, sessions, plugins."""
ToolName = Annotated[str, StringConstraints(min_length=1, max_length=128, pattern=r"^[^\s/][^/]{0,127}$")]
ShortText = Annotated[str, StringConstraints(max_length=256)]


class Message(BaseModel):
    """Base of every message: strict about unknown fields so a typo is an error, not a silent default."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    schema_version: Literal[1] = SCHEMA_VERSION


class Frozen(BaseModel):
    """Base of the parts of a message (list entries, nested records): as strict and immutable as a message."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class AdminRequest(Message):
    """Base of every admin request: it carries the operator's credential (``TOOLSEL_ADMIN_TOKEN``)."""

    admin_token: str | None = Field(default=None, max_length=512, repr=False)


class ToolRef(BaseModel):
    """A tool is identified by its plugin and its name; names may repeat across plugins."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    plugin_id: Identifier
    name: ToolName

    @property
    def key(self) -> str:
        """``plugin/name``: the one string form of a tool's identity."""
        return f"{self.plugin_id}/{self.name}"


class ErrorCode(StrEnum):
    """What went wrong, for a caller's code to branch on."""

    INVALID_REQUEST = "invalid_request"
    UNAUTHORIZED = "unauthorized"
    NOT_FOUND = "not_found"
    CONFLICT = "conflict"
    UNAVAILABLE = "unavailable"
    INTERNAL = "internal"


class ErrorDetail(BaseModel):
    code: ErrorCode
    message: str
    field: str | None = None
    """Dotted path of the offending field, when one is to blame."""


class ErrorReply(Message):
    """Every request gets a reply; a bad one gets this instead of a timeout."""

    error: ErrorDetail
