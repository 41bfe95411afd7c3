"""The tenant a message speaks for comes from who sent it (the scope its subject carries, which NATS permissions
tie to the connection), never from its payload: a payload that names another tenant is refused."""

from collections.abc import Mapping
from typing import Any

from toolsel.contracts import ErrorCode
from toolsel.contracts.identity import Scope, parse_scope
from toolsel.contracts.subjects import scope_of
from toolsel.messaging import RequestError


def sender(subject: str, root: str) -> Scope:
    """Who published ``subject`` (one of ``root``'s scopes); refused when the subject names no sender."""
    scope = parse_scope(scope_of(subject, root))
    if scope is None:
        raise RequestError(ErrorCode.FORBIDDEN, f"{subject} names no sender: publish on {root}.<scope>")
    return scope


def tenant_for(scope: Scope, claimed: str, named: bool) -> str:
    """The tenant a message of ``scope`` acts for: the identity's own, or for the operator the one the payload
    names (``claimed``). A tenant's identity whose payload ``named`` another tenant is refused (forbidden,
    field ``tenant_id``)."""
    if scope.tenant is None:
        return claimed
    if named and claimed != scope.tenant:
        raise RequestError(
            ErrorCode.FORBIDDEN, f"tenant_id {claimed!r} is not the sender's tenant {scope.tenant!r}", "tenant_id"
        )
    return scope.tenant


def actor(selection: Mapping[str, Any], window_s: float = 0.0) -> str:
    """Who a selection's outcomes and reviews speak for, as learning credits count them, and in which window of
    ``window_s`` seconds of selections (its credits refill with each; 0: one window for good): its session, else
    its user, else the selection alone. ``selection`` holds its ``selection_id``, ``session_id``, ``user_id`` and
    ``asked_at`` (when the selector answered it)."""
    if selection["session_id"]:
        who = f"session:{selection['session_id']}"
    elif selection["user_id"]:
        who = f"user:{selection['user_id']}"
    else:
        return f"selection:{selection['selection_id']}"
    return f"{who}@{int(selection['asked_at'].timestamp() // window_s)}" if window_s > 0 else who
