"""Server-side sessions of the MCP server: in-process, bounded by count (least recently used goes first) and
by idle time. A session remembers the tools it rejected (never offered again) and what each page of each
query offered (asking again pages past them), so the agent need not resend either."""

import secrets
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from uuid import UUID

from toolsel.contracts import ToolRef
from toolsel.tool_shapes import function_name

MAX_EXCLUDE = 200
"""What one select request may exclude (``SelectFilters.exclude``): rejections first, then the newest offers."""


class UnknownSession(ValueError):
    """A session id that is not (or no longer) live."""


def query_key(query: str) -> str:
    """The same need asked with other spacing or case is the same query for paging."""
    return " ".join(query.lower().split())


@dataclass(frozen=True)
class Offer:
    """One ``search_tools`` answer: which selection, for which query and page, offered which tools."""

    selection_id: UUID
    query: str
    page: int
    tools: tuple[ToolRef, ...]


@dataclass
class Session:
    id: str
    touched: float
    max_offers: int
    rejected: dict[str, ToolRef] = field(default_factory=dict)
    offers: list[Offer] = field(default_factory=list)
    names: dict[str, ToolRef] = field(default_factory=dict)
    """Function name (as the agent saw it) -> tool, for every tool this session was offered."""

    def earlier(self, query: str, page: int) -> list[ToolRef]:
        """What earlier pages of this query offered in this session (newest first)."""
        key = query_key(query)
        out: dict[str, ToolRef] = {}
        for offer in reversed(self.offers):
            if offer.query == key and offer.page < page:
                out.update((t.key, t) for t in offer.tools if t.key not in out)
        return list(out.values())

    def exclude_for(self, query: str, page: int) -> list[ToolRef]:
        """Rejected tools, then whatever earlier pages of this query offered (newest first), within the cap."""
        out = dict(self.rejected)
        out.update((t.key, t) for t in self.earlier(query, page) if t.key not in out)
        return list(out.values())[:MAX_EXCLUDE]

    def record(self, selection_id: UUID, query: str, page: int, tools: Iterable[ToolRef]) -> Offer:
        """Remember an answer (replacing an earlier answer to the same query and page)."""
        offer = Offer(
            selection_id, query_key(query), page, tuple(ToolRef(plugin_id=t.plugin_id, name=t.name) for t in tools)
        )
        self.offers = [o for o in self.offers if (o.query, o.page) != (offer.query, offer.page)][
            -(self.max_offers - 1) :
        ]
        self.offers.append(offer)
        self.names.update((function_name(t), t) for t in offer.tools)
        return offer

    def resolve(self, name: str) -> ToolRef | None:
        """A tool this session was offered, by the name the agent saw or by ``plugin/name``."""
        if (ref := self.names.get(name)) is not None:
            return ref
        return next((t for t in self.names.values() if t.key == name), None)

    def selection_of(self, ref: ToolRef) -> UUID | None:
        """The latest selection that offered the tool: the one a review or outcome of it belongs to."""
        return next((o.selection_id for o in reversed(self.offers) if ref in o.tools), None)

    def reject(self, refs: Iterable[ToolRef]) -> None:
        self.rejected.update((r.key, r) for r in refs)

    @property
    def last(self) -> Offer | None:
        return self.offers[-1] if self.offers else None


class Sessions:
    """The live sessions, keyed by a random id."""

    def __init__(
        self, max_sessions: int, ttl_s: float, max_offers: int = 100, clock: Callable[[], float] = time.monotonic
    ):
        self.max_sessions = max_sessions
        self.ttl_s = ttl_s
        self.max_offers = max_offers
        self.clock = clock
        self._live: OrderedDict[str, Session] = OrderedDict()

    def __len__(self) -> int:
        return len(self._live)

    def find(self, session_id: str) -> Session | None:
        """A live session (now the most recently used), or None if unknown or idle past the TTL."""
        self._expire()
        session = self._live.get(session_id)
        if session is not None:
            session.touched = self.clock()
            self._live.move_to_end(session_id)
        return session

    def open(self, session_id: str | None = None) -> Session:
        """The live session with this id, or a new one with a fresh id when none is given. An id that is unknown
        or expired is refused (``UnknownSession``): a new session would silently offer again what was rejected."""
        if session_id:
            found = self.find(session_id)
            if found is None:
                raise UnknownSession(
                    f"session {session_id!r} is unknown or expired: call search_tools without a session to "
                    "start a new one"
                )
            return found
        session = Session(secrets.token_hex(16), self.clock(), self.max_offers)
        self._live[session.id] = session
        while len(self._live) > self.max_sessions:
            self._live.popitem(last=False)
        return session

    def _expire(self) -> None:
        horizon = self.clock() - self.ttl_s
        while self._live and next(iter(self._live.values())).touched < horizon:
            self._live.popitem(last=False)
