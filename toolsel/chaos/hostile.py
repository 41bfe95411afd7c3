"""Hostile input, from one vocabulary: the edge cases fault injection found (NUL, lone surrogates, huge numbers,
dates at the edge of the calendar, JSON nested past any parser's depth) and random text, values and bytes.

``Hostile`` draws from it with a seeded ``random.Random``, so ``toolsel chaos`` needs no test library and a run is
repeated by its seed; the fuzz tests build their hypothesis strategies from the same lists."""

import json
import random
from typing import Any, Final
from uuid import UUID, uuid4

from toolsel.contracts import FeedbackEvent, OutcomeEvent, ReviewEvent, SelectionEvent, ToolCall, ToolReview, Verdict

HOSTILE_TEXTS: Final = ("\x00", "a\x00b", "\ud800", "x" * 5000, "", " ", "é", "*", "../")
"""Strings that broke something once: NUL (PostgreSQL refuses it), a lone surrogate (not UTF-8), a huge one."""
EDGE_STRINGS: Final = ("9999-12-31T23:59:59-14:00", "2024-05-01T12:00:00", "0001-01-01T00:00:00Z")
"""Dates past year 9999 in UTC, naive, and at year 1."""
FIELDS: Final = (
    "query", "tenant_id", "page", "k", "plugin_id", "name", "tools", "limit", "version", "id", "days", "since",
    "rule", "changes", "plugin_version", "filters", "seed", "admin_token", "tool", "schema_version", "page_pattern",
    "action",
)  # fmt: skip
"""Field names the requests and events use, so a hostile object reaches past "unknown field"."""
REFERENCES: Final = frozenset({"selection_id", "plugin_id", "name"})
"""Kept from an event's template: an event referring to nothing stored is retried until ``orphan_timeout_s``,
by design, so a hostile event keeps what it refers to."""
MAX_DEPTH: Final = 1200
"""Deepest JSON nesting drawn: past the services' parser limit."""
INTEGER_BOUND: Final = 2**70
TEXT_MAX: Final = 20
COLLECTION_MAX: Final = 3
OBJECT_MAX: Final = 5
BINARY_MAX: Final = 64


def encode(value: Any) -> bytes:
    """``value`` as JSON bytes, lone surrogates and NaN included (neither is valid JSON: that is the point)."""
    return json.dumps(value).encode("utf-8", "surrogatepass")


def deep(depth: int) -> bytes:
    """A select request whose query is a list nested ``depth`` deep."""
    return b'{"query": ' + b"[" * depth + b"]" * depth + b"}"


ID_FIELDS: Final = {"selection": "selection_id"}
"""An event's own id, where it is not ``event_id``."""


def id_field(kind: str) -> str:
    return ID_FIELDS.get(kind, "event_id")


def event_body(kind: str, template: dict[str, Any], fields: dict[str, Any]) -> bytes:
    """A valid event of ``kind`` with hostile ``fields`` over it (its references kept), under a fresh id so it is
    not taken for a repeat."""
    kept = {k: v for k, v in fields.items() if k not in REFERENCES}
    return encode(template | {id_field(kind): str(uuid4())} | kept)


def event_templates(selection: SelectionEvent, tenant: str, plugin: str, name: str) -> dict[str, dict[str, Any]]:
    """A valid event of each learner kind, referring to the stored ``selection`` and the tool ``plugin/name``."""
    ref = {"plugin_id": plugin, "name": name}
    events = {
        "selection": selection,
        "outcome": OutcomeEvent(selection_id=selection.selection_id, calls=[ToolCall(**ref, success=True)]),
        "review": ReviewEvent(
            selection_id=selection.selection_id, reviews=[ToolReview(**ref, verdict=Verdict.PERFECT)]
        ),
        "feedback": FeedbackEvent(**ref, tenant_id=tenant, rating=0.5),
    }
    return {kind: json.loads(event.model_dump_json()) for kind, event in events.items()}


class Hostile:
    """Seeded draws of hostile text, values, objects and request or event bodies."""

    def __init__(self, seed: int):
        self.rng = random.Random(seed)

    def text(self) -> str:
        if self.rng.random() < 0.5:
            return self.rng.choice(HOSTILE_TEXTS)
        return "".join(self._character() for _ in range(self.rng.randint(0, TEXT_MAX)))

    def _character(self) -> str:
        """Any code point, surrogates and controls included, the low ones more often."""
        bound = self.rng.choice((0x7F, 0xFFFF, 0x10FFFF))
        return chr(self.rng.randint(0, bound))

    def scalar(self) -> Any:
        match self.rng.randrange(7):
            case 0:
                return None
            case 1:
                return self.rng.random() < 0.5
            case 2:
                return self.rng.choice(
                    (0, -1, 2**31, 2**63, -(2**63) - 1, self.rng.randint(-INTEGER_BOUND, INTEGER_BOUND))
                )
            case 3:
                return self.rng.choice((float("nan"), float("inf"), -0.0, 1e308, self.rng.uniform(-1e9, 1e9)))
            case 4:
                return self.rng.choice((*EDGE_STRINGS, str(UUID(int=self.rng.getrandbits(128)))))
            case _:
                return self.text()

    def value(self, depth: int = 2) -> Any:
        """A scalar, or a short list or object of values (at most ``depth`` levels)."""
        shape = self.rng.randrange(4) if depth > 0 else 0
        if shape == 1:
            return [self.value(depth - 1) for _ in range(self.rng.randint(0, COLLECTION_MAX))]
        if shape == 2:
            return {self.text(): self.value(depth - 1) for _ in range(self.rng.randint(0, COLLECTION_MAX))}
        return self.scalar()

    def object(self) -> dict[str, Any]:
        """Up to ``OBJECT_MAX`` fields, their names mostly ones the messages use."""
        size = self.rng.randint(0, OBJECT_MAX)
        return {self._field(): self.value() for _ in range(size)}

    def _field(self) -> str:
        return self.rng.choice(FIELDS) if self.rng.random() < 0.8 else self.text()

    def body(self, token: str | None = None) -> bytes:
        """A request body: a hostile object (carrying ``token`` as its admin token half the time, so it gets past
        the token check), random bytes, or JSON nested too deep."""
        match self.rng.randrange(6):
            case 0:
                return self.rng.randbytes(self.rng.randint(0, BINARY_MAX))
            case 1:
                return deep(self.rng.randint(1, MAX_DEPTH))
            case _:
                fields = self.object()
                if token is not None and self.rng.random() < 0.5:
                    fields["admin_token"] = token
                return encode(fields)

    def event(self, kind: str, template: dict[str, Any]) -> bytes:
        """An event body: half of them valid events of ``kind`` with hostile fields over them, half hostile
        bodies."""
        return event_body(kind, template, self.object()) if self.rng.random() < 0.5 else self.body()
