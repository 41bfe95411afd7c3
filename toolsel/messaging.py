"""NATS plumbing every service shares: the broker, the streams, typed error replies, health."""

import hmac
import logging
from collections.abc import Callable
from typing import Any

import nats
from faststream.middlewares import ExceptionMiddleware
from faststream.nats import JStream, NatsBroker, NatsRouter
from nats.js.api import StreamConfig
from nats.js.errors import BadRequestError
from pydantic import ValidationError

from contracts import ErrorCode, ErrorDetail, ErrorReply, HealthReply, subjects
from toolsel import __version__

log = logging.getLogger(__name__)

EVENTS_MAX_AGE_S = 30 * 24 * 3600


def events_stream() -> JStream:
    """The events stream as subscribers name it; ``ensure_streams`` creates it (FastStream must not, or it
    would add each subscriber's subject to the stream's and overlap the wildcard)."""
    return JStream(name=subjects.EVENTS_STREAM, declare=False)


async def ensure_streams(url: str) -> None:
    """Create or update the events and dead-letter streams before any consumer binds to them."""
    connection = await nats.connect(url)
    try:
        js = connection.jetstream()
        for config in (
            StreamConfig(
                name=subjects.EVENTS_STREAM, subjects=list(subjects.EVENTS_STREAM_SUBJECTS), max_age=EVENTS_MAX_AGE_S
            ),
            StreamConfig(name=subjects.DLQ_STREAM, subjects=list(subjects.DLQ_STREAM_SUBJECTS)),
        ):
            try:
                await js.add_stream(config)
            except BadRequestError:
                await js.update_stream(config)
    finally:
        await connection.close()


class RequestError(Exception):
    """Raised by a request handler to answer with a typed error reply."""

    def __init__(self, code: ErrorCode, message: str, field: str | None = None):
        super().__init__(message)
        self.detail = ErrorDetail(code=code, message=message, field=field)


def check_admin(given: str | None, expected: str | None) -> None:
    """Refuse (``unauthorized``, field ``admin_token``) unless the request carries the configured admin token;
    with no token configured the admin API is off."""
    if not expected:
        raise RequestError(ErrorCode.UNAUTHORIZED, "admin API disabled: set TOOLSEL_ADMIN_TOKEN", "admin_token")
    if given is None or not hmac.compare_digest(given.encode(), expected.encode()):
        raise RequestError(ErrorCode.UNAUTHORIZED, "missing or wrong admin token", "admin_token")


def validation_reply(exc: ValidationError) -> ErrorReply:
    """The first validation error as a reply naming the field (without the handler's parameter name)."""
    first = exc.errors()[0]
    loc = [str(part) for part in first["loc"]]
    if loc and loc[0] in {"body", "request", "sync", "req"}:
        loc = loc[1:]
    message = first["msg"]
    if first.get("type") == "model_type":
        message = "the request body must be a JSON object"
    return ErrorReply(error=ErrorDetail(code=ErrorCode.INVALID_REQUEST, message=message, field=".".join(loc) or None))


def _rpc_errors() -> ExceptionMiddleware:
    handlers = ExceptionMiddleware()

    @handlers.add_handler(ValidationError, publish=True)
    def _invalid(exc: ValidationError) -> ErrorReply:
        return validation_reply(exc)

    @handlers.add_handler(RequestError, publish=True)
    def _refused(exc: RequestError) -> ErrorReply:
        return ErrorReply(error=exc.detail)

    @handlers.add_handler(Exception, publish=True)
    def _internal(exc: Exception) -> ErrorReply:
        log.error("request failed", exc_info=exc)
        return ErrorReply(error=ErrorDetail(code=ErrorCode.INTERNAL, message=type(exc).__name__))

    return handlers


def rpc_router() -> NatsRouter:
    """A router for request/reply handlers: every failure becomes a typed error reply, never a timeout.

    Kept apart from JetStream subscribers, whose reply subject is the ack and must not get an error body.
    """
    return NatsRouter(middlewares=[_rpc_errors()])


def make_broker(url: str, name: str) -> NatsBroker:
    return NatsBroker(
        url,
        name=f"toolsel-{name}",
        max_reconnect_attempts=-1,
        specification_url="nats://localhost:4222",
        log_level=logging.DEBUG,
    )


def add_health(router: NatsRouter, service: str, details: Callable[[], dict[str, Any]]) -> None:
    """Answer ``toolsel.rpc.health.<service>`` so ``toolsel status`` and health checks can ask."""

    @router.subscriber(subjects.health(service), queue=f"toolsel-{service}-health", title=f"{service}-health")
    async def health() -> HealthReply:
        return HealthReply(service=service, version=__version__, details=details())


async def dead_letter(broker: NatsBroker, kind: str, body: bytes, reason: str) -> None:
    """Keep an event that cannot be applied, with the reason, on the dead-letter stream."""
    log.warning("dead-letter %s: %s", kind, reason)
    await broker.publish(
        body, subjects.dead_letter(kind), stream=subjects.DLQ_STREAM, headers={"toolsel-reason": reason[:1000]}
    )
