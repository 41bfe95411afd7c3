"""NATS plumbing every service shares: the broker, the streams, typed error replies, health."""

import asyncio
import hmac
import logging
import re
import socket
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextvars import ContextVar
from dataclasses import replace
from typing import Any, TypeVar

import asyncpg
import nats
import nats.errors
from faststream.message import StreamMessage
from faststream.middlewares import BaseMiddleware, ExceptionMiddleware
from faststream.nats import JStream, NatsBroker, NatsRouter
from nats.aio.client import DEFAULT_MAX_PAYLOAD_SIZE, Client
from nats.aio.msg import Msg
from nats.js.api import ConsumerInfo, DiscardPolicy, StreamConfig
from nats.js.client import JetStreamContext
from nats.js.errors import BadRequestError, NotFoundError
from pydantic import ValidationError

from toolsel import __version__
from toolsel.contracts import ErrorCode, ErrorDetail, ErrorReply, HealthReply, subjects
from toolsel.log_budget import LogBudget
from toolsel.settings import Settings

R = TypeVar("R")
log = logging.getLogger(__name__)

TOO_DEEP = "the JSON is nested too deep"
DEAD_LETTER_LINES = 20
"""Dead letters of one kind logged a minute at most (each is on the dead-letter stream, with its reason)."""
_dead_letter_log = LogBudget(log, DEAD_LETTER_LINES, 60.0)


class Unavailable(Exception):
    """Something a service needs, other than a server, fails whatever it is given (the learner's embedding model out
    of memory, or broken): not an event's fault, so it is transient (``transient``)."""


_OUTAGES = (
    Unavailable,
    OSError,
    asyncpg.PostgresConnectionError,
    asyncpg.exceptions.OperatorInterventionError,
    asyncpg.exceptions.InsufficientResourcesError,
    asyncpg.exceptions.TransactionRollbackError,
    nats.errors.ConnectionClosedError,
    nats.errors.ConnectionDrainingError,
    nats.errors.ConnectionReconnectingError,
    nats.errors.NoServersError,
    nats.errors.StaleConnectionError,
)


def events_stream() -> JStream:
    """The events stream as subscribers name it; ``ensure_streams`` creates it (FastStream must not, or it
    would add each subscriber's subject to the stream's and overlap the wildcard)."""
    return JStream(name=subjects.EVENTS_STREAM, declare=False)


def stream_configs(settings: Settings) -> tuple[StreamConfig, StreamConfig]:
    """The events and dead-letter streams, each bounded by age and by size (the oldest messages go first)."""
    return (
        _bounded(
            subjects.EVENTS_STREAM,
            subjects.EVENTS_STREAM_SUBJECTS,
            settings.events_max_age_days,
            settings.events_max_bytes,
        ),
        _bounded(
            subjects.DLQ_STREAM,
            subjects.DLQ_STREAM_SUBJECTS,
            settings.dead_letters_max_age_days,
            settings.dead_letters_max_bytes,
        ),
    )


def _bounded(name: str, captured: Sequence[str], max_age_days: float, max_bytes: int) -> StreamConfig:
    """A stream of these subjects keeping messages for ``max_age_days`` and ``max_bytes`` (0: no size bound)."""
    return StreamConfig(
        name=name,
        subjects=list(captured),
        max_age=max_age_days * 24 * 3600,
        max_bytes=max_bytes or -1,
        discard=DiscardPolicy.OLD,
    )


async def ensure_streams(url: str, settings: Settings) -> None:
    """Create or update the events and dead-letter streams before any consumer binds to them."""
    connection = await nats.connect(url)
    try:
        js = connection.jetstream()
        for config in stream_configs(settings):
            try:
                await js.add_stream(config)
            except BadRequestError:
                await js.update_stream(config)
        await _rescope_consumers(connection)
    finally:
        await connection.close()


SCOPED_DURABLES = (
    *(subjects.learner_durable(kind) for kind in ("outcome", "review", "feedback")),
    subjects.INDEXER_DURABLE,
)
"""The durable consumers of what clients send under their scopes."""


async def _consumers(js: JetStreamContext, durables: Sequence[str]) -> AsyncIterator[ConsumerInfo]:
    """The events stream's durable consumers of these names that exist."""
    for durable in durables:
        try:
            yield await js.consumer_info(subjects.EVENTS_STREAM, durable)
        except NotFoundError:
            continue


async def _rescope_consumers(connection: Client) -> None:
    """A durable consumer made before senders' scopes reads its kind's bare root, where no one publishes now:
    have it read every scope of it instead (what it was bound to stays)."""
    js = connection.jetstream()
    async for info in _consumers(js, SCOPED_DURABLES):
        if info.config.filter_subject in subjects.SCOPED_ROOTS:
            config = replace(info.config, filter_subject=subjects.any_scope(info.config.filter_subject))
            await js.add_consumer(subjects.EVENTS_STREAM, config=config)


async def refit_consumers(url: str, durables: Sequence[str], ack_wait_s: float, max_ack_pending: int) -> list[str]:
    """Give the events stream's durable consumers that exist this ack wait and bound of pending acks; returns those
    changed. A consumer keeps the settings it was made with (nats-py binds to it as it is), so a learner restarted
    with others told the server it was in progress on its own schedule while the server redelivered on the old one:
    events were delivered several times, and their growing delivery counts dead-lettered them early."""
    connection = await nats.connect(url)
    changed = []
    try:
        js = connection.jetstream()
        async for info in _consumers(js, durables):
            was = (info.config.ack_wait, info.config.max_ack_pending)
            if was != (ack_wait_s, max_ack_pending):
                log.warning(
                    "consumer %s: ack wait, pending acks %s -> %s", info.name, was, (ack_wait_s, max_ack_pending)
                )
                config = replace(info.config, ack_wait=ack_wait_s, max_ack_pending=max_ack_pending)
                await js.add_consumer(subjects.EVENTS_STREAM, config=config)
                changed.append(info.name)
    finally:
        await connection.close()
    return changed


async def in_progress_while(msg: Msg, work: "asyncio.Future[R]", every_s: float) -> R:
    """Await ``work``, telling the server every ``every_s`` seconds that the message is still being worked on
    (its ack-wait restarts): an event is redelivered only when its consumer is gone, not because it is slow."""
    while True:
        done, _ = await asyncio.wait({work}, timeout=every_s)
        if done:
            return work.result()
        await msg.in_progress()


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


def transient(error: BaseException) -> bool:
    """A server away, busy or restarting, a transaction lost to a concurrent one, or something else the service
    needs failing whatever it is given (``Unavailable``): not the event's fault, so its batch is retried as it is.
    Anything else may be one event's fault: its batch is split to find it."""
    client_side = isinstance(error, asyncpg.InterfaceError) and not isinstance(error, ValueError)
    return client_side or isinstance(error, _OUTAGES)


def gives_up(error: BaseException, delivered: int, attempts: int) -> bool:
    """Whether an event that failed alone with ``error`` on its ``delivered``-th delivery is dead-lettered:
    never during an outage (it passes), after ``attempts`` deliveries otherwise."""
    return not transient(error) and delivered >= attempts


def failure(error: BaseException) -> str:
    """The dead-letter reason of an event that failed when applied."""
    return f"failed: {type(error).__name__}: {error}"


def undecoded(msg: StreamMessage[Any]) -> bytes:
    """The body as received, for a handler that validates it itself with pydantic's depth-limited parser:
    FastStream's default ``json.loads`` raises RecursionError on deep JSON, before any handler could refuse it."""
    return msg.body


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


async def _decoded_or_raw(msg: StreamMessage[Any], original: Callable[[StreamMessage[Any]], Awaitable[Any]]) -> Any:
    """The body decoded as its content type says, or as received when it cannot be (not UTF-8, not JSON, an
    integer too long): the handler's validation then refuses it as ``invalid_request``, as it does the same body
    sent without a content type. FastStream passes such a body on undecoded only when no content type is set;
    with one (its clients set ``application/json``) it raises, and ``_rpc_errors`` would answer ``internal``.
    Only decoding runs here, so no ValueError of a handler's is taken for a bad body."""
    try:
        return await original(msg)
    except ValueError:  # UnicodeDecodeError, json.JSONDecodeError (orjson's too), int digits over the limit
        return msg.body


def _rpc_errors() -> ExceptionMiddleware:
    """Each failure as its typed error reply. The handlers are coroutines: FastStream runs a plain function's in its
    thread pool, so a burst's ``rate_limited`` refusals each cost a thread hop (docs/results.md, Fair selects)."""
    handlers = ExceptionMiddleware()

    @handlers.add_handler(ValidationError, publish=True)
    async def _invalid(exc: ValidationError) -> ErrorReply:
        return validation_reply(exc)

    @handlers.add_handler(RequestError, publish=True)
    async def _refused(exc: RequestError) -> ErrorReply:
        return ErrorReply(error=exc.detail)

    @handlers.add_handler(RecursionError, publish=True)
    async def _too_deep(exc: RecursionError) -> ErrorReply:
        return ErrorReply(error=ErrorDetail(code=ErrorCode.INVALID_REQUEST, message=TOO_DEEP))

    @handlers.add_handler(Exception, publish=True)
    async def _internal(exc: Exception) -> ErrorReply:
        log.error("request failed", exc_info=exc)
        return ErrorReply(error=ErrorDetail(code=ErrorCode.INTERNAL, message=type(exc).__name__))

    return handlers


HEADERS_ROOM = 4096
"""Bytes of a message kept for its headers (the correlation id and content type FastStream adds)."""


def room(max_payload: object) -> int:
    """The bytes a message's body may take on a connection whose server reports ``max_payload`` (nats-py's
    default, NATS's own, where it reports none: not connected to a server, as under FastStream's test broker)."""
    limit = max_payload if isinstance(max_payload, int) and max_payload > 0 else DEFAULT_MAX_PAYLOAD_SIZE
    return limit - HEADERS_ROOM


class ReplyTooLarge(BaseMiddleware):
    """A reply NATS refuses to carry (over the server's ``max_payload``) is replaced by a typed error saying so, so
    the requester gets an answer rather than a timeout. The selector cuts its replies to fit before this
    (``toolsel.services.selector.fit``); an admin listing asked for too much is answered with this."""

    async def publish_scope(self, call_next: Callable[[Any], Awaitable[Any]], cmd: Any) -> Any:
        try:
            return await call_next(cmd)
        except nats.errors.MaxPayloadError as error:
            message = f"the reply is too large for one message ({error}): ask for less (a lower limit)"
            cmd.body = ErrorReply(error=ErrorDetail(code=ErrorCode.INVALID_REQUEST, message=message))
            return await call_next(cmd)


def rpc_router() -> NatsRouter:
    """A router for request/reply handlers: every failure becomes a typed error reply, never a timeout, and so
    does a reply too large to send (``ReplyTooLarge``); a body that cannot be decoded is an invalid request
    whatever its content type (``_decoded_or_raw``).

    Kept apart from JetStream subscribers, whose reply subject is the ack and must not get an error body.
    """
    return NatsRouter(middlewares=[_rpc_errors(), ReplyTooLarge], decoder=_decoded_or_raw)


def backlog(info: ConsumerInfo) -> int:
    """Events a consumer has still to deliver, or has delivered and waits to have acknowledged."""
    return int(info.num_pending or 0) + int(info.num_ack_pending or 0)


async def consumer_backlog(client: Client, durable: str, stream: str = subjects.EVENTS_STREAM) -> int:
    """``backlog`` of a consumer, asked of the server."""
    return backlog(await client.jetstream().consumer_info(stream, durable))


async def consumer_settled(client: Client, durable: str, stream: str = subjects.EVENTS_STREAM) -> bool:
    """Whether a consumer has delivered the last event stored on its subject and has none left. The server counts
    a consumer's pending events a moment after it acknowledges their publication, so a backlog of 0 alone may
    come before the events it will count."""
    js = client.jetstream()
    info = await js.consumer_info(stream, durable)
    if backlog(info):
        return False
    subject = info.config.filter_subject
    if not subject:
        return True
    try:
        last = int((await js.get_last_msg(stream, subject)).seq or 0)
    except NotFoundError:  # nothing stored on the subject
        return True
    return (int(info.delivered.stream_seq or 0) if info.delivered else 0) >= last


def make_broker(url: str, name: str, graceful_timeout: float | None = None) -> NatsBroker:
    """A service's broker; on stop its handlers in hand get ``graceful_timeout`` seconds to finish."""
    return NatsBroker(
        url,
        name=f"toolsel-{name}",
        max_reconnect_attempts=-1,
        specification_url="nats://localhost:4222",
        log_level=logging.DEBUG,
        graceful_timeout=graceful_timeout,
    )


DOCUMENTED_INSTANCE: ContextVar[str | None] = ContextVar("DOCUMENTED_INSTANCE", default=None)
"""Set while ``toolsel asyncapi`` builds the apps: the instance their health subjects name instead of this host's
(``subjects.INSTANCE``), so the documents are the same on every machine."""


def this_instance() -> str:
    """This process's instance in its service's health subjects: its host's name, in a container the container's
    (its id, unless compose names it), which a health check run in the same container reads too."""
    return subjects.instance_name(socket.gethostname())


def add_health(
    router: NatsRouter, service: str, details: Callable[[], dict[str, Any]], instance: str | None = None
) -> None:
    """Answer ``toolsel.rpc.health.<service>`` (one copy of the service, through a queue group) so ``toolsel
    status`` can ask, and ``toolsel.rpc.health.<service>.<instance>`` (this copy, ``this_instance`` unless given) so
    a container's health check (``toolsel <service> --health``) asks its own process."""
    instance = instance or DOCUMENTED_INSTANCE.get() or this_instance()

    async def health() -> HealthReply:
        return HealthReply(service=service, version=__version__, details=details())

    router.subscriber(subjects.health(service), queue=f"toolsel-{service}-health", title=f"{service}-health")(health)
    router.subscriber(
        subjects.instance_health(service, instance),
        title=f"{service}-health-instance",
        description=f"The health of one copy of the {service}: the one whose host (container) is {{instance}}.",
    )(health)


async def dead_letter(broker: NatsBroker, kind: str, body: bytes, reason: str) -> None:
    """Keep an event that cannot be applied, with the reason, on the dead-letter stream."""
    reason = _one_line(reason)[:1000]
    _dead_letter_log.warning(f"dead-letter {kind}", "dead-letter %s: %s", kind, reason)
    await broker.publish(
        body, subjects.dead_letter(kind), stream=subjects.DLQ_STREAM, headers={"toolsel-reason": reason}
    )


def _one_line(text: str) -> str:
    """A header holds one line of UTF-8: an error's text may hold line breaks, NUL or lone surrogates."""
    return re.sub(r"[\x00-\x1f\x7f]+", " ", text).encode("utf-8", "replace").decode()
