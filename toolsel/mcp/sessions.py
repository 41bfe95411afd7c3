"""Server-side sessions of the MCP server: in-process, bounded by count (least recently used goes first), by idle
time and, over HTTP, across every identity of the server (``SessionPool``). A session remembers the tools it
rejected (never offered again) and what each page of each query offered (asking again pages past them), so the
agent need not resend either.

A session keeps what attribution and paging read, compactly: per answer its selection, a digest of its query,
its page and its tools as interned strings (``plugin/name`` and the name the agent saw), shared with every other
session offered the same tool. No query text and no ``ToolRef`` is kept; refs are made when a request needs them."""

import hashlib
import secrets
import sys
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from uuid import UUID

from toolsel.contracts import ToolRef
from toolsel.settings import Settings
from toolsel.tool_shapes import function_name

MAX_EXCLUDE = 200
"""What one select request may exclude (``SelectFilters.exclude``): rejections first, then the newest offers."""


class UnknownSession(ValueError):
    """A session id that is not (or no longer) live."""


def query_key(query: str) -> str:
    """The same need asked with other spacing or case is the same query for paging."""
    return " ".join(query.lower().split())


def query_digest(query: str) -> bytes:
    """What an offer keeps of its query: 16 bytes that tell the same query (``query_key``) again, whatever its
    length (paging only compares queries)."""
    return hashlib.blake2b(query_key(query).encode(), digest_size=16).digest()


def tool_ref(key: str) -> ToolRef:
    """The tool of a key (``plugin/name``: neither part holds a ``/``)."""
    plugin_id, _, name = key.partition("/")
    return ToolRef(plugin_id=plugin_id, name=name)


@dataclass(frozen=True, slots=True)
class Offer:
    """One ``search_tools`` answer: which selection, for which query (its digest) and page, offered which tools
    (their keys, and beside each the name the agent saw it by: ``function_name``)."""

    selection_id: UUID
    query: bytes
    page: int
    tools: tuple[str, ...]
    names: tuple[str, ...]

    def refs(self) -> list[ToolRef]:
        """The tools offered, as a request names them."""
        return [tool_ref(key) for key in self.tools]


def offer(selection_id: UUID, query: str, page: int, tools: Iterable[ToolRef]) -> Offer:
    """An answer as a session keeps it: the tools' strings interned, so that sessions offered the same tool share
    them (tools come from the selector's replies: the tenant's catalog, never an agent's text)."""
    listed = list(tools)
    return Offer(
        selection_id,
        query_digest(query),
        page,
        tuple(sys.intern(t.key) for t in listed),
        tuple(sys.intern(function_name(t)) for t in listed),
    )


@dataclass
class Session:
    id: str
    touched: float
    max_offers: int
    rejected: dict[str, None] = field(default_factory=dict)
    """Keys of the tools rejected, in order; only the first ``MAX_EXCLUDE`` are kept, since only they are ever
    excluded."""
    offers: list[Offer] = field(default_factory=list)

    def earlier(self, query: str, page: int) -> list[str]:
        """The keys of what earlier pages of this query offered in this session (newest first)."""
        digest = query_digest(query)
        out: dict[str, None] = {}
        for kept in reversed(self.offers):
            if kept.query == digest and kept.page < page:
                out.update((key, None) for key in kept.tools)
        return list(out)

    def exclude_for(self, query: str, page: int) -> list[ToolRef]:
        """Rejected tools, then whatever earlier pages of this query offered (newest first), within the cap."""
        out = dict(self.rejected)
        out.update((key, None) for key in self.earlier(query, page))
        return [tool_ref(key) for key in list(out)[:MAX_EXCLUDE]]

    def record(self, selection_id: UUID, query: str, page: int, tools: Iterable[ToolRef]) -> Offer:
        """Remember an answer (replacing an earlier answer to the same query and page); past ``max_offers`` the
        oldest is forgotten."""
        made = offer(selection_id, query, page, tools)
        kept = [o for o in self.offers if (o.query, o.page) != (made.query, made.page)]
        self.offers = [*kept[max(0, len(kept) - self.max_offers + 1) :], made]
        return made

    def resolve(self, name: str) -> ToolRef | None:
        """A tool this session was offered, by the name the agent saw or by ``plugin/name`` (the two never meet:
        a function name holds no ``/``)."""
        for kept in reversed(self.offers):
            for key, seen in zip(kept.tools, kept.names, strict=True):
                if name in (seen, key):
                    return tool_ref(key)
        return None

    def selection_of(self, ref: ToolRef) -> UUID | None:
        """The latest selection that offered the tool: the one a review or outcome of it belongs to."""
        key = ref.key
        return next((o.selection_id for o in reversed(self.offers) if key in o.tools), None)

    def reject(self, refs: Iterable[ToolRef]) -> None:
        for ref in refs:
            if len(self.rejected) >= MAX_EXCLUDE:
                return
            self.rejected.setdefault(sys.intern(ref.key), None)

    @property
    def last(self) -> Offer | None:
        return self.offers[-1] if self.offers else None


class Sessions:
    """The live sessions of one identity, keyed by a random id."""

    def __init__(
        self,
        max_sessions: int,
        ttl_s: float,
        max_offers: int = Settings.model_fields["mcp_session_offers"].default,
        clock: Callable[[], float] = time.monotonic,
        pool: "SessionPool | None" = None,
    ):
        self.max_sessions = max_sessions
        self.ttl_s = ttl_s
        self.max_offers = max_offers
        self.clock = clock
        self.pool = pool
        self._live: OrderedDict[str, Session] = OrderedDict()
        if pool is not None:
            pool.members.append(self)

    def __len__(self) -> int:
        return len(self._live)

    def find(self, session_id: str) -> Session | None:
        """A live session (now the most recently used), or None if unknown or idle past the TTL."""
        self.expire()
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
            self.drop_oldest()
        if self.pool is not None:
            self.pool.admit()
        return session

    def drop_oldest(self) -> None:
        """Forget the least recently used session."""
        self._live.popitem(last=False)

    def expire(self) -> None:
        """Forget the sessions idle past the TTL."""
        horizon = self.clock() - self.ttl_s
        while self._live and next(iter(self._live.values())).touched < horizon:
            self.drop_oldest()


class SessionPool:
    """The sessions of every identity one server serves (each identity's ``Sessions``), bounded together: past
    ``limit``, idle ones end first, then the least recently used session of the identity that holds the most, so
    that one identity's flood pushes out its own sessions rather than another's."""

    def __init__(self, limit: int):
        self.limit = limit
        self.members: list[Sessions] = []

    def __len__(self) -> int:
        return sum(len(member) for member in self.members)

    def admit(self) -> None:
        """Bring the sessions back within the limit (after one was opened)."""
        if len(self) <= self.limit:
            return
        for member in self.members:
            member.expire()
        while len(self) > self.limit:
            max(self.members, key=len).drop_oldest()
