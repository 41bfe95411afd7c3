"""Each user's own record with each tool (seed 001's user-history factor), kept in memory from the event
stream every selector sees, so no request reads the database for it."""

from collections import OrderedDict
from collections.abc import Mapping
from uuid import UUID

import numpy as np

from toolsel.contracts import OutcomeEvent, SelectionEvent
from toolsel.contracts.identity import OPERATOR, Scope
from toolsel.services.selector.stages import Scores

User = tuple[str, str]
"""(tenant, user id): user ids are the agents' own, so two tenants may both have an "alice"; one's record must
never lift tools for the other."""


MAX_USERS = 10_000
"""Users whose record a selector keeps in memory (a few tools' counts each); the least recent is forgotten first."""
MAX_SELECTIONS = 100_000
"""Selections whose user a selector remembers, so that an outcome arriving later is counted for that user; an
outcome for an older one counts for no one's history (the learner still learns from it)."""


class UserHistory:
    """(tenant, user) -> tool key -> [successes, calls]; the oldest users and selections are forgotten first."""

    def __init__(self, max_users: int = MAX_USERS, max_selections: int = MAX_SELECTIONS) -> None:
        self._users: OrderedDict[User, dict[str, list[int]]] = OrderedDict()
        self._selections: OrderedDict[UUID, tuple[str, User]] = OrderedDict()
        """selection id -> (its owner's scope token, its user)"""
        self._max_users = max_users
        self._max_selections = max_selections

    def record_selection(self, event: SelectionEvent) -> None:
        if event.user_id is None:
            return
        self._selections[event.selection_id] = (event.owner, (event.tenant_id, event.user_id))
        if len(self._selections) > self._max_selections:
            self._selections.popitem(last=False)

    def record_outcome(self, event: OutcomeEvent, sender: Scope = OPERATOR) -> None:
        """Counted only from the identity that made the selection (or the operator)."""
        owner, user = self._selections.get(event.selection_id, ("", None))
        if user is None or not sender.owns(owner):
            return
        del self._selections[event.selection_id]
        tools = self._users.setdefault(user, {})
        self._users.move_to_end(user)
        for call in event.calls:
            counts = tools.setdefault(call.key, [0, 0])
            counts[0] += int(call.success)
            counts[1] += 1
        if len(self._users) > self._max_users:
            self._users.popitem(last=False)

    def scores(self, tenant: str, user: str | None, rows: Mapping[str, int], size: int) -> Scores:
        """The tenant's user's success rate with each catalog row's tool, 0 where they never called it."""
        out = np.zeros(size, dtype=np.float64)
        tools = self._users.get((tenant, user)) if user is not None else None
        for key, (successes, calls) in (tools or {}).items():
            row = rows.get(key)
            if row is not None and calls:
                out[row] = successes / calls
        return out
