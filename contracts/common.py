"""Pieces shared by every message: the schema version, tool references and the typed error reply."""

import math
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Any, Final, Literal

from pydantic import AfterValidator, AwareDatetime, BaseModel, ConfigDict, Field, StringConstraints

SCHEMA_VERSION: Final = 1
SHARED_TENANT: Final = "*"
"""Tenant id of tools that every tenant may see."""
DEFAULT_TENANT: Final = "default"
"""The tenant of a request, event or pin that names none (``toolsel up`` makes its agents' identity)."""
DEFAULT_TIER: Final = "free"
"""The user's plan when a select request names none."""

# What PostgreSQL (and the arithmetic on it) can hold: the wire types refuse the rest at the edge, so nothing
# that passed validation can fail later in the store and hold back the events batched with it.
INT32_MAX: Final = 2**31 - 1
EARLIEST: Final = datetime(1970, 1, 1, tzinfo=UTC)
LATEST: Final = datetime(3000, 1, 1, tzinfo=UTC)
MAX_JSON_DEPTH: Final = 32
"""How deep a free-form JSON value (tool parameters, rule conditions) may nest."""
MAX_DOCUMENT_DEPTH: Final = 64
"""How deep a whole JSON document from a client (a file, a command-line value, an MCP message) may nest: a
message's own nesting plus its free-form values', checked before any recursive parser sees it."""

_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
_JSON_TOKENS = re.compile(r'"(?:[^"\\]++|\\.)*+"|[\[\]{}]')
"""A JSON string (skipped whole: brackets in it do not nest) or a bracket. Possessive: a string never closed is
given up in one pass, not by trying every split of its characters (time doubling with each one)."""


def json_depth(text: str) -> int:
    """How deep the JSON in ``text`` nests, found without parsing it (and without recursion), so a document of
    100,000 brackets is measured, not a stack overflow. On text that is not JSON the figure is approximate."""
    depth = deepest = 0
    for token in _JSON_TOKENS.finditer(text):
        bracket = token.group()
        if bracket in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif bracket in "]}":
            depth = max(depth - 1, 0)
    return deepest


def too_deep(text: str, limit: int = MAX_DOCUMENT_DEPTH) -> str | None:
    """Why ``text`` may not be parsed, when it nests deeper than ``limit``; else None."""
    depth = json_depth(text)
    return f"JSON nested {depth} levels deep, more than the {limit} allowed" if depth > limit else None


def no_control(value: str) -> str:
    """Names are shown in terminals, tables and CSV: a control character (ESC, BEL, ...) in one is refused."""
    found = _CONTROL.search(value)
    if found is not None:
        raise ValueError(f"control character U+{ord(found.group()):04X} at {found.start()} is not allowed in a name")
    return value


def not_a_dot_segment(value: str) -> str:
    """A tool's name is a segment of the dashboard's and the API's paths (``/catalog/<plugin>/<name>``), where a
    browser takes ``.`` and ``..`` for "here" and "up": a tool so named could be neither shown nor acted on."""
    if value in {".", ".."}:
        raise ValueError(f"{value!r} is not allowed as a name")
    return value


def storable_text(value: str) -> str:
    """PostgreSQL text holds neither NUL nor a lone surrogate (no UTF-8 for it): refuse both."""
    if not value.isascii() or "\x00" in value:
        found = _UNSTORABLE.search(value)
        if found is not None:
            raise ValueError(f"character U+{ord(found.group()):04X} at {found.start()} cannot be stored")
    return value


def in_range(value: datetime) -> datetime:
    """In UTC, between 1970 and 3000: later offsets could overflow Python's year 9999 in any arithmetic."""
    out_of_range = ValueError(f"timestamp out of range ({EARLIEST.year}-{LATEST.year} UTC)")
    try:
        utc = value.astimezone(UTC)
    except OverflowError:
        raise out_of_range from None
    if not EARLIEST <= utc < LATEST:
        raise out_of_range
    return utc


def storable_json(value: Any) -> Any:
    """A free-form JSON value jsonb can hold and code can walk: bounded depth, storable text, finite numbers.
    Walked with a list of what is left to see, not recursion: no depth overflows Python's stack."""
    waiting: list[tuple[Any, int]] = [(value, 0)]
    while waiting:
        item, depth = waiting.pop()
        if depth > MAX_JSON_DEPTH:
            raise ValueError(f"JSON nested deeper than {MAX_JSON_DEPTH} levels")
        if isinstance(item, str):
            storable_text(item)
        elif isinstance(item, float) and not math.isfinite(item):
            raise ValueError("JSON numbers must be finite")
        elif isinstance(item, Mapping):
            for key, inner in item.items():
                storable_text(str(key))
                waiting.append((inner, depth + 1))
        elif isinstance(item, list | tuple):
            waiting.extend((inner, depth + 1) for inner in item)
    return value


Storable = AfterValidator(storable_text)
"""Put last in a text type's annotations (after its constraints): the text as it will be stored is checked. Put
before them, a length constraint would be checked on a value of unknown type, and its error counts "items"."""
Text = Annotated[str, Storable]
"""Text bound for the store, of any length: where a length is bound, write
``Annotated[str, StringConstraints(...), Storable]`` (the constraints first, see ``Storable``)."""
Nameable = AfterValidator(no_control)
Identifier = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")]
"""Ids a stranger can send: tenants, users, sessions, plugins."""
TenantScope = Annotated[str, StringConstraints(pattern=r"^(\*|[A-Za-z0-9][A-Za-z0-9_.:-]{0,127})$")]
"""A tenant, or ``*`` (``SHARED_TENANT``) for every tenant: one type, so a bad one is refused naming its field
alone (a union would add its branches to the error's path)."""
ToolName = Annotated[
    str,
    StringConstraints(min_length=1, max_length=128, pattern=r"^[^\s/][^/]{0,127}$"),
    Storable,
    Nameable,
    AfterValidator(not_a_dot_segment),
]
ShortText = Annotated[str, StringConstraints(max_length=256), Storable]
DisplayName = Annotated[str, StringConstraints(max_length=256), Storable, Nameable]
Timestamp = Annotated[AwareDatetime, AfterValidator(in_range)]
"""A moment with its offset (a naive one is ambiguous), stored in UTC."""
Count = Annotated[int, Field(ge=0, le=INT32_MAX)]
"""A non-negative integer a PostgreSQL ``int`` column holds."""
Finite = Annotated[float, Field(allow_inf_nan=False)]
JsonObject = Annotated[dict[str, Any], AfterValidator(storable_json)]


class Message(BaseModel):
    """Base of every message: strict about unknown fields so a typo is an error, not a silent default."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    schema_version: Literal[1] = SCHEMA_VERSION


class Frozen(BaseModel):
    """Base of the parts of a message (list entries, nested records): as strict and immutable as a message."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class AdminRequest(Message):
    """Base of every admin request: it carries the operator's credential (``TOOLSEL_ADMIN_TOKEN``)."""

    admin_token: Annotated[str, StringConstraints(max_length=512), Storable] | None = Field(default=None, repr=False)


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
    FORBIDDEN = "forbidden"
    """The sender is known but may not do this: a tenant it is not, a selection another identity made."""
    NOT_FOUND = "not_found"
    CONFLICT = "conflict"
    UNAVAILABLE = "unavailable"
    """Busy, not refused: MCP over HTTP has as many new bearer tokens waiting to be checked as it may (HTTP 503,
    ``Retry-After``). Send again after the wait."""
    RATE_LIMITED = "rate_limited"
    """Refused for now, not for what the request says: a caller past its failed sign-ins or wrong MCP bearer tokens
    (HTTP 429), or a tenant with as many selects waiting at a selector as it may have. Back off (as long as the
    message or ``Retry-After`` says, if it does), then send it again."""
    INTERNAL = "internal"


class ErrorDetail(BaseModel):
    code: ErrorCode
    message: str
    field: str | None = None
    """Dotted path of the offending field, when one is to blame."""


class ErrorReply(Message):
    """Every request gets a reply; a bad one gets this instead of a timeout."""

    error: ErrorDetail
