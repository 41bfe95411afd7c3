"""Each user's own record with each tool (seed 001's user-history factor), kept in memory from the event
stream every selector sees, so no request reads the database for it.

What a tenant reports may not grow every selector's memory: an outcome counts only its calls to tools its
selection offered (the learner's rule, ``offered_only``), a user's record keeps its most recently called tools
alone, and the users and the selections awaiting an outcome are each bounded in all. Those two bounds are shared
out fairly (``FairShares``): one tenant's flood of users or selections pushes out its own, never another's share."""

import sys
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from typing import Generic, NamedTuple, TypeVar
from uuid import UUID

import numpy as np

from toolsel.contracts import OutcomeEvent, SelectionEvent
from toolsel.contracts.identity import OPERATOR, Scope
from toolsel.services.selector.stages import Scores
from toolsel.settings import Settings

K = TypeVar("K")
V = TypeVar("V")


class FairShares(Generic[K, V]):
    """Entries kept per tenant, at most ``limit`` in all. Past it, the least recent entry of the tenant holding the
    most is dropped: a tenant loses entries only while it holds the most (of equals, the first to have held any).
    So a tenant that floods pushes out its own oldest, and every tenant keeps what it has up to an equal share of
    the limit (the limit over the tenants holding any), whatever the others send. Tenants are the operator's to
    create, so their number is no tenant's to grow."""

    def __init__(self, limit: int) -> None:
        self._tenants: dict[str, OrderedDict[K, V]] = {}
        self._size = 0
        self._limit = limit

    def get(self, tenant: str, key: K) -> V | None:
        held = self._tenants.get(tenant)
        return None if held is None else held.get(key)

    def put(self, tenant: str, key: K, value: V) -> None:
        """Keep ``value`` as the tenant's most recent entry."""
        held = self._tenants.setdefault(tenant, OrderedDict())
        self._size += key not in held
        held[key] = value
        held.move_to_end(key)
        while self._size > self._limit:
            self._drop_least_recent(max(self._tenants, key=lambda t: len(self._tenants[t])))

    def pop(self, tenant: str, key: K) -> V | None:
        held = self._tenants.get(tenant)
        value = None if held is None else held.pop(key, None)
        if value is not None:
            self._size -= 1
            self._forget_if_empty(tenant)
        return value

    def tenant_of(self, key: K, among: Iterable[str] | None = None) -> str | None:
        """The tenant holding ``key``, looked for among ``among`` (all when None)."""
        return next((t for t in (self._tenants if among is None else among) if key in self._tenants.get(t, ())), None)

    def _drop_least_recent(self, tenant: str) -> None:
        self._tenants[tenant].popitem(last=False)
        self._size -= 1
        self._forget_if_empty(tenant)

    def _forget_if_empty(self, tenant: str) -> None:
        if not self._tenants[tenant]:
            del self._tenants[tenant]


class Pending(NamedTuple):
    """A selection with a user, until its outcome comes."""

    owner: str
    """Its owner's scope token: only that identity, or the operator, may report its outcome."""
    user: str
    offered: tuple[str, ...]
    """The keys of the tools it offered, the only ones its outcome may count (a tuple: a few, in a fifth of a
    set's memory)."""


Counts = list[int]
"""[successes, calls] of one user with one tool."""


class UserHistory:
    """(tenant, user) -> tool key -> [successes, calls], within the bounds of its settings (the module says why)."""

    def __init__(self, settings: Settings) -> None:
        self._users: FairShares[str, dict[str, Counts]] = FairShares(settings.user_history_users)
        """tenant -> user id -> tool key -> counts, its least recently called tool first"""
        self._selections: FairShares[UUID, Pending] = FairShares(settings.user_history_selections)
        self._tools_per_user = settings.user_history_tools

    def record_selection(self, event: SelectionEvent) -> None:
        if event.user_id is None:
            return
        offered = tuple(sys.intern(tool.key) for tool in event.tools)  # each key one string for all users
        self._selections.put(event.tenant_id, event.selection_id, Pending(event.owner, event.user_id, offered))

    def record_outcome(self, event: OutcomeEvent, sender: Scope = OPERATOR) -> None:
        """Counted only from the identity that made the selection (or the operator), once, and only its calls to
        the tools the selection offered: a call to anything else counts nowhere, as in the learner."""
        among = None if sender.operator else [sender.tenant or ""]
        tenant = self._selections.tenant_of(event.selection_id, among)
        pending = None if tenant is None else self._selections.get(tenant, event.selection_id)
        if tenant is None or pending is None or not sender.owns(pending.owner):
            return
        self._selections.pop(tenant, event.selection_id)
        tools = self._users.get(tenant, pending.user) or {}
        for call in event.calls:
            key = call.key
            if key not in pending.offered:
                continue
            counts = tools.pop(key, None) or [0, 0]  # put back last: the most recently called
            counts[0] += int(call.success)
            counts[1] += 1
            tools[sys.intern(key)] = counts
        while len(tools) > self._tools_per_user:
            del tools[next(iter(tools))]
        if tools:
            self._users.put(tenant, pending.user, tools)

    def scores(self, tenant: str, user: str | None, rows: Mapping[str, int], size: int) -> Scores:
        """The tenant's user's success rate with each catalog row's tool, 0 where they never called it."""
        out = np.zeros(size, dtype=np.float64)
        tools = self._users.get(tenant, user) if user is not None else None
        for key, (successes, calls) in (tools or {}).items():
            row = rows.get(key)
            if row is not None and calls:
                out[row] = successes / calls
        return out
