"""The client's one error family: every failure a caller of ``ToolselClient`` meets is a ``ToolselError``, of the
subclass that says what to do about it, with the field or the fix in its one-line message. A service's error
reply keeps its code and field in ``detail``; a failure found on this side (bad arguments, no stack, no answer, a
call the identity may not make) gets a ``detail`` of the code it would have had."""

from typing import Final, Self

import nats.errors
from pydantic import ValidationError

from toolsel.contracts import ErrorCode, ErrorDetail

NO_STACK_FIX: Final = "start one with `toolsel up`, or set TOOLSEL_NATS_URL to a running stack"


class ToolselError(Exception):
    """Any failure of a toolsel call; ``detail`` carries its code, message and the field to blame."""

    def __init__(self, detail: ErrorDetail):
        where = f" ({detail.field})" if detail.field else ""
        super().__init__(f"{detail.code.value}: {detail.message}{where}")
        self.detail = detail

    @classmethod
    def saying(cls, message: str, field: str | None = None) -> Self:
        """An error found on this side, with the code a service would have given it."""
        return cls(ErrorDetail(code=CODES[cls], message=message, field=field))


class InvalidRequest(ToolselError):
    """The request does not validate (here or at the service): fix the field it names."""


class NotPermitted(ToolselError):
    """The caller's identity may not do this: a wrong or missing token or credential, another tenant, an admin
    call without the operator's NATS user."""


class TooManyAttempts(NotPermitted):
    """``rate_limited``: refused for now, whatever the request says. The caller failed to sign in too often lately
    (a wrong admin or MCP bearer token, HTTP 429), or its tenant already has as many selects waiting at a
    selector as it may (``TOOLSEL_SELECT_WAITING_PER_TENANT``). Back off, then retry: the message says for how long
    where a wait is known; for selects, once some of the tenant's others are answered."""


class NotFound(ToolselError):
    """What the request names does not exist."""


class Conflict(ToolselError):
    """The request clashes with what exists (a tool registered twice, a release of a tool not quarantined)."""


class NoStack(ToolselError):
    """No toolsel to ask: NATS cannot be reached, or no service answers the subject."""


class Timeout(ToolselError):
    """The service did not answer in time."""


class ServiceFailed(ToolselError):
    """The service failed on its own (its log says why)."""


class SyncTooLarge(InvalidRequest, ValueError):
    """A sync over ``TOOLSEL_SYNC_MAX_BYTES``: refused before anything is sent."""


CODES: Final[dict[type[ToolselError], ErrorCode]] = {
    ToolselError: ErrorCode.INTERNAL,
    InvalidRequest: ErrorCode.INVALID_REQUEST,
    SyncTooLarge: ErrorCode.INVALID_REQUEST,
    NotPermitted: ErrorCode.FORBIDDEN,
    TooManyAttempts: ErrorCode.RATE_LIMITED,
    NotFound: ErrorCode.NOT_FOUND,
    Conflict: ErrorCode.CONFLICT,
    NoStack: ErrorCode.UNAVAILABLE,
    Timeout: ErrorCode.UNAVAILABLE,
    ServiceFailed: ErrorCode.INTERNAL,
}
BY_CODE: Final[dict[ErrorCode, type[ToolselError]]] = {
    ErrorCode.INVALID_REQUEST: InvalidRequest,
    ErrorCode.UNAUTHORIZED: NotPermitted,
    ErrorCode.FORBIDDEN: NotPermitted,
    ErrorCode.NOT_FOUND: NotFound,
    ErrorCode.CONFLICT: Conflict,
    ErrorCode.UNAVAILABLE: NoStack,
    ErrorCode.RATE_LIMITED: TooManyAttempts,
    ErrorCode.INTERNAL: ServiceFailed,
}


def from_reply(detail: ErrorDetail) -> ToolselError:
    """A service's error reply as the subclass of its code."""
    return BY_CODE[detail.code](detail)


def first_problem(error: ValidationError) -> tuple[str, str]:
    """The first offending field of a validation error (dotted, "" for the whole) and why, with how many more."""
    problems = error.errors()
    first = problems[0]
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    return ".".join(str(part) for part in first["loc"]), f"{first['msg'].removeprefix('Value error, ')}{more}"


def invalid(error: ValidationError) -> InvalidRequest:
    """Arguments that do not make a valid message, as one line naming the field."""
    field, why = first_problem(error)
    return InvalidRequest.saying(why, field or None)


def from_nats(error: Exception, subject: str, url: str, timeout_s: float | None = None) -> ToolselError | None:
    """What a nats-py failure means to the caller, with the fix; None for one that is not about reaching toolsel."""
    if isinstance(error, nats.errors.NoRespondersError):
        return NoStack.saying(f"no service answers {subject}: is every service up? (`toolsel status`)")
    if isinstance(error, nats.errors.TimeoutError):
        waited = f" within {timeout_s:g} s" if timeout_s else ""
        return Timeout.saying(f"no answer to {subject}{waited}: see `toolsel status` and the services' logs")
    if isinstance(error, nats.errors.NoServersError | nats.errors.ConnectionClosedError | OSError):
        return NoStack.saying(f"cannot reach NATS at {url}: {NO_STACK_FIX}")
    return None
