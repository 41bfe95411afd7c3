"""The tenant a message speaks for comes from who sent it (the scope its subject carries, which NATS permissions
tie to the connection), never from its payload: a payload that names another tenant is refused."""

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
