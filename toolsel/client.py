"""A small async client for toolsel over NATS: what agents, plugins, the CLI and the tests call."""

import asyncio
import base64
import hashlib
import json
import logging
import os
import re
import threading
from collections.abc import Awaitable, Coroutine, Sequence
from copy import copy
from types import TracebackType
from typing import Any, Self, TypeVar
from urllib.parse import urlsplit
from uuid import uuid4

import nats
from nats.aio.client import Client
from pydantic import BaseModel
from pydantic_core import from_json

from toolsel.client_methods import AsyncMethods, Request, SyncMethods
from toolsel.contracts import (
    SHARED_TENANT,
    AdminRequest,
    ErrorReply,
    FeedbackEvent,
    HealthReply,
    OutcomeEvent,
    PluginSync,
    ReviewEvent,
    SyncPartReceived,
    SyncReport,
    SyncUpload,
    payload_signature,
    subjects,
)
from toolsel.contracts.identity import Scope, scope_of_user
from toolsel.embedded import EmbeddedError, local_nats_url, redacted
from toolsel.errors import NoStack, NotPermitted, SyncTooLarge, ToolselError, from_nats, from_reply
from toolsel.nats_permissions import DEFAULT_AGENT
from toolsel.settings import Settings

R = TypeVar("R", bound=BaseModel)
T = TypeVar("T")
ADMIN_TIMEOUT_S = 300.0
"""An admin request's wait: a listing, a recompute or a rollback takes longer than a select."""
SYNC_TIMEOUT_S = 1800.0
"""A sync replies once its tools are embedded: a catalog of thousands takes minutes on a busy small machine."""
PART_ENVELOPE_BYTES = 1024
"""Room a ``SyncPart`` leaves in a NATS message for its JSON around the base64 data."""
EVENT_SUBJECTS: dict[type[BaseModel], str] = {
    OutcomeEvent: subjects.OUTCOME_ROOT,
    ReviewEvent: subjects.REVIEW_ROOT,
    FeedbackEvent: subjects.FEEDBACK_ROOT,
}


def wire(message: BaseModel) -> bytes:
    """The message as sent: a tenant it does not name is left out, for the service to take from the sender (a
    tenant's identity acts for its own; naming another is refused)."""
    unnamed = {"tenant_id"} - message.model_fields_set if "tenant_id" in type(message).model_fields else set()
    return message.model_dump_json(exclude=unnamed).encode()


log = logging.getLogger(__name__)


__all__ = ["SyncTooLarge", "SyncToolselClient", "ToolselClient", "ToolselError"]


REFUSED_CREDENTIALS = "authorization violation"
"""How NATS says, in its error line, that it refused the connection's user or password."""


def refused_credentials(error: Exception) -> bool:
    return REFUSED_CREDENTIALS in str(error).lower()


REFUSED_PUBLISH = re.compile(r'permissions violation for publish to "([^"]+)"', re.IGNORECASE)
"""How NATS says, in an error line of its own, that it dropped a publish the connection's user may not make."""


def refused_publish(error: Exception) -> str | None:
    """The subject of a publish NATS refused this connection, if ``error`` says so."""
    found = REFUSED_PUBLISH.search(str(error))
    return found[1] if found else None


REMOVED_VERSION = "0.0.0"
"""The plugin version recorded with a plugin's removal (a declaration needs one)."""


def plugin_removal(plugin_id: str, tenant_id: str = SHARED_TENANT, credential: str | None = None) -> PluginSync:
    """The declaration that removes ``plugin_id``: no tools, categories or page mappings. Its tools are
    soft-deleted (history and versions kept); a later sync of it brings them back."""
    return PluginSync(
        plugin_id=plugin_id, plugin_version=REMOVED_VERSION, tenant_id=tenant_id, tools=[], credential=credential
    )


class ToolselClient(AsyncMethods):
    """``async with ToolselClient(url) as client: reply = await client.select(query="...")``; every method of
    ``toolsel.client_methods.ClientMethods`` (select, the events, every admin subject) is here.

    The URL carries the NATS credentials (``nats://user:password@host:4222``). Without one: TOOLSEL_NATS_URL,
    else the embedded NATS of the ``toolsel up`` running in TOOLSEL_HOME, as NATS ``user`` (by default the
    default tenant's agents) with the password kept in that home. The user is who the client is: a tenant's
    identity (``<tenant>.<name>``) selects and reports for its tenant alone, under its scope, and reads its
    replies under its own inbox prefix; any other user sends as the operator. Admin requests carry
    ``admin_token`` (default: the ``TOOLSEL_ADMIN_TOKEN`` environment variable), need the operator's user, and
    wait ``admin_timeout_s`` for their answer (every other request ``timeout_s``).

    Every failure is a ``toolsel.errors.ToolselError`` (``InvalidRequest``, ``NotPermitted``, ``NoStack``,
    ``Timeout``, ...). nats-py's own log lines are silenced unless ``nats_logs`` is true."""

    def __init__(
        self,
        url: str | None = None,
        *,
        user: str = DEFAULT_AGENT.user,
        timeout_s: float = 10.0,
        admin_timeout_s: float = ADMIN_TIMEOUT_S,
        admin_token: str | None = None,
        sync_timeout_s: float = SYNC_TIMEOUT_S,
        connect_timeout_s: float = 2.0,
        reconnect_attempts: int = 3,
        stay_connected: bool = False,
        sync_max_bytes: int | None = None,
        nats_logs: bool = False,
    ):
        if not nats_logs:  # its failures reach the caller as ToolselErrors; its tracebacks would only repeat them
            logging.getLogger("nats").setLevel(logging.CRITICAL + 1)
        self.url = url or ""
        self.user = user
        self.timeout_s = timeout_s
        self.admin_timeout_s = admin_timeout_s
        self.sync_timeout_s = sync_timeout_s
        self.connect_timeout_s = connect_timeout_s
        self.reconnect_attempts = reconnect_attempts
        """-1: reconnect for as long as it takes (a client that must outlive a NATS restart)."""
        self.stay_connected = stay_connected
        """Once connected, reconnect for as long as it takes: a client a server holds for its life (the MCP server,
        the dashboard) was closed for good by an outage longer than its attempts, and answered every request after
        it with ``NoStack`` until restarted. Connecting still fails after ``reconnect_attempts``."""
        self.sync_max_bytes = sync_max_bytes or Settings().sync_max_bytes
        self.admin_token = admin_token or os.environ.get("TOOLSEL_ADMIN_TOKEN")
        self.scope = scope_of_user(urlsplit(self.url).username) if self.url else scope_of_user(user)
        """Who the client sends as (its subjects' scope)."""
        self._refusals: dict[str, set[asyncio.Future[NotPermitted]]] = {}
        """The requests and publishes awaiting an answer, by subject, each failed at once when NATS refuses it."""
        self._nc: Client | None = None
        self._closed = False
        """Closed by leaving ``async with``: a request then says so, not that NATS cannot be reached."""

    async def __aenter__(self) -> Self:
        if not self.url:
            self.url = self._local_url()
            self.scope = scope_of_user(urlsplit(self.url).username)
        nc, refused = Client(), False

        async def connection_error(error: Exception) -> None:
            """Raised to the caller (or retried): logged in a line at debug level, not printed with its traceback
            (``toolsel status`` with NATS down printed four). Credentials refused while connecting are not tried
            again: they would be refused again. A publish NATS refused fails what awaits its answer."""
            nonlocal refused
            log.debug("NATS: %s: %s", type(error).__name__, error)
            if refused_credentials(error) and not nc.is_connected:
                refused = True
                nc.options["allow_reconnect"] = False
            if (subject := refused_publish(error)) is not None:
                self._refuse(subject)

        try:
            await nc.connect(
                self.url,
                name="toolsel-client",
                connect_timeout=self.connect_timeout_s,  # type: ignore[arg-type]  # annotated int; used as a float
                max_reconnect_attempts=self.reconnect_attempts,
                error_cb=connection_error,
                inbox_prefix=self.scope.inbox_prefix,
            )
        except (nats.errors.Error, OSError) as error:
            if refused:
                user = urlsplit(self.url).username or "no user"
                raise NotPermitted.saying(
                    f"NATS at {redacted(self.url)} refused the credentials of {user}: check the URL's user and"
                    " password (a revoked identity's are refused)"
                ) from None
            raise self._failure(error, "the connection") from None
        if self.stay_connected:
            nc.options["max_reconnect_attempts"] = -1
        self._nc, self._closed = nc, False
        return self

    def _local_url(self) -> str:
        """TOOLSEL_NATS_URL, else the URL of the ``toolsel up`` running in TOOLSEL_HOME as ``user``."""
        settings = Settings()
        if settings.nats_url:
            return settings.nats_url
        try:
            return local_nats_url(settings.home, self.user)
        except EmbeddedError as error:
            raise NoStack.saying(str(error)) from None
        except KeyError:  # only the built-in users' passwords are kept in the home
            raise NotPermitted.saying(
                f"no password for NATS user {self.user} is kept in {settings.home}: pass its URL (`toolsel identity"
                " create` printed an identity's)"
            ) from None

    @property
    def _nats_user(self) -> str | None:
        """The NATS user of the client's URL (None without credentials)."""
        return urlsplit(self.url).username

    def _refuse(self, subject: str) -> None:
        """Fail at once what awaits an answer on ``subject``: NATS dropped the publish, so none will come."""
        refusal = NotPermitted.saying(
            f"NATS does not let user {self._nats_user or '(none)'} publish to {subject}: the operator's user may"
            " (`toolsel env` prints its TOOLSEL_NATS_URL), a tenant's identity only under its own scope"
        )
        for waiting in self._refusals.get(subject, ()):
            if not waiting.done():
                waiting.set_result(refusal)

    async def _refusable(self, subject: str, sending: Awaitable[T]) -> T:
        """``sending`` (a request or a publish to ``subject``), or ``NotPermitted`` as soon as NATS says it refused
        the publish: NATS drops it and tells the connection apart, so its answer would never come (an admin call
        from a service's user waited out its 300 s)."""
        refusal: asyncio.Future[NotPermitted] = asyncio.get_running_loop().create_future()
        waiting = self._refusals.setdefault(subject, set())
        waiting.add(refusal)
        task = asyncio.ensure_future(sending)
        try:
            await asyncio.wait((task, refusal), return_when=asyncio.FIRST_COMPLETED)
        finally:
            waiting.discard(refusal)
            if not waiting:
                self._refusals.pop(subject, None)
            if not task.done():
                task.cancel()
        if task.done() and not task.cancelled():
            return task.result()
        raise refusal.result()

    def _failure(self, error: Exception, subject: str, timeout_s: float | None = None) -> Exception:
        """A nats-py failure as the ``ToolselError`` it means (others as they are)."""
        return from_nats(error, subject, redacted(self.url), timeout_s) or error

    def acting_as(self, scope: Scope) -> Self:
        """This client (its connection shared) sending under ``scope``: what an operator's gateway does for the
        identity it authenticated (MCP over HTTP); NATS refuses it to any other user."""
        view = copy(self)
        view.scope = scope
        return view

    def subject(self, root: str) -> str:
        """``root`` under the client's scope if it is sent under one (``subjects.SCOPED_ROOTS``), else as is."""
        return subjects.scoped(root, self.scope.token) if root in subjects.SCOPED_ROOTS else root

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if self._nc is not None and not self._nc.is_closed:
            try:
                await self._nc.drain()
            except nats.errors.Error:  # the connection went while draining: nothing is left to flush
                await self._nc.close()
        self._closed = True

    @property
    def nc(self) -> Client:
        if self._nc is None:
            raise NoStack.saying("not connected: use the client inside 'async with'")
        if self._closed:
            raise NoStack.saying("this client was closed on leaving 'async with': use it inside one")
        return self._nc

    async def request(self, subject: str, payload: bytes, reply_type: type[R], timeout_s: float | None = None) -> R:
        """Send raw bytes; decode the reply as ``reply_type`` or raise the typed error it carries."""
        waited, sent = timeout_s or self.timeout_s, self.subject(subject)
        try:
            msg = await self._refusable(sent, self.nc.request(sent, payload, timeout=waited))
        except nats.errors.Error as error:
            raise self._failure(error, subject, waited) from None
        body = from_json(msg.data)  # pydantic's parser: a select reply's 8 KB in 60 against 86 us with validation
        if isinstance(body, dict) and "error" in body:
            raise from_reply(ErrorReply.model_validate(body).error)
        return reply_type.model_validate(body)

    async def sync(self, sync: PluginSync, *, signing_key: str | None = None) -> SyncReport:
        """Sync a declaration; with ``signing_key`` the credential is the payload's HMAC-SHA256 signature. One
        over ``sync_max_bytes`` raises ``SyncTooLarge`` before anything is sent; one larger than a NATS message
        travels in parts (``upload``)."""
        payload = sync.model_dump(mode="json")
        if signing_key is not None:
            payload["credential"] = payload_signature(payload, signing_key)
        body = json.dumps(payload).encode()
        if len(body) > self.sync_max_bytes:
            raise SyncTooLarge.saying(
                f"the sync of {sync.plugin_id} is {len(body):,} bytes, over the limit of {self.sync_max_bytes:,}"
                " (TOOLSEL_SYNC_MAX_BYTES): split the plugin, or raise the limit for the indexer and the client"
            )
        if len(body) <= self.nc.max_payload:
            return await self.request(subjects.SYNC_ROOT, body, SyncReport, timeout_s=self.sync_timeout_s)
        return await self.upload(body)

    async def upload(self, body: bytes) -> SyncReport:
        """Send a sync's JSON in parts that each fit a NATS message, then ask the indexer to apply the whole."""
        upload_id = uuid4()
        size = (self.nc.max_payload - PART_ENVELOPE_BYTES) // 4 * 3  # base64 makes 4 bytes of every 3
        parts = [body[start : start + size] for start in range(0, len(body), size)]
        for number, data in enumerate(parts):
            part = {"upload_id": str(upload_id), "part": number, "data": base64.b64encode(data).decode()}
            await self.request(subjects.SYNC_PART_ROOT, json.dumps(part).encode(), SyncPartReceived)
        whole = SyncUpload(
            upload_id=upload_id, parts=len(parts), size=len(body), sha256=hashlib.sha256(body).hexdigest()
        )
        return await self.request(
            subjects.SYNC_UPLOAD_ROOT, whole.model_dump_json().encode(), SyncReport, timeout_s=self.sync_timeout_s
        )

    async def remove_plugin(self, plugin_id: str, tenant_id: str = SHARED_TENANT) -> SyncReport:
        """Remove a plugin synced for ``tenant_id`` (``plugin_removal``)."""
        return await self.sync(plugin_removal(plugin_id, tenant_id))

    async def admin(self, subject: str, request: AdminRequest, reply_type: type[R]) -> R:
        """One admin request (``contracts.subjects.ADMIN_*``), with the client's admin token unless it has one;
        refused at once for a tenant's identity or a service's user (NATS refuses it to any user but the
        operator)."""
        if not self.scope.operator or self._nats_user in subjects.SERVICES:
            who = self._nats_user if self.scope.operator else self.scope.user
            raise NotPermitted.saying(
                f"{subject} is an admin call: it needs the operator's NATS user (`toolsel env` prints its "
                f"TOOLSEL_NATS_URL), and this client is {who}"
            )
        if request.admin_token is None and self.admin_token:
            request = request.model_copy(update={"admin_token": self.admin_token})
        return await self.request(
            subject, request.model_dump_json().encode(), reply_type, timeout_s=self.admin_timeout_s
        )

    async def health(self, service: str, timeout_s: float = 2.0) -> HealthReply:
        """A service's health reply (``selector``, ``learner``, ``indexer``)."""
        return await self.request(subjects.health(service), b"{}", HealthReply, timeout_s=timeout_s)

    async def report(self, events: Sequence[OutcomeEvent | ReviewEvent | FeedbackEvent]) -> None:
        """Publish outcomes, reviews or people's feedback durably (JetStream acks each)."""
        for event in events:
            await self.publish(EVENT_SUBJECTS[type(event)], event)

    async def send(self, request: Request[Any, R], message: BaseModel) -> R:
        """One table request (``toolsel.client_methods``): admin ones through ``admin``."""
        if request.admin and isinstance(message, AdminRequest):
            return await self.admin(request.subject, message, request.reply)
        return await self.request(request.subject, wire(message), request.reply, request.timeout_s)

    async def publish(self, subject: str, event: BaseModel) -> None:
        """Publish one event durably, within ``timeout_s`` for JetStream's ack (nats-py's own default is 5 s); its
        ``event_id`` is the JetStream de-duplication id."""
        headers = {"Nats-Msg-Id": str(event_id)} if (event_id := getattr(event, "event_id", None)) else None
        sent = self.subject(subject)
        try:
            js = self.nc.jetstream()
            await self._refusable(sent, js.publish(sent, wire(event), timeout=self.timeout_s, headers=headers))
        except nats.errors.Error as error:
            raise self._failure(error, subject, self.timeout_s) from None


class SyncToolselClient(SyncMethods):
    """The client for scripts: ``with SyncToolselClient() as client: client.select(query="...")``. Its own
    event loop runs on a background thread, so it also works where a loop is already running (notebooks)."""

    def __init__(self, url: str | None = None, **options: Any):
        self._client = ToolselClient(url, **options)
        self._loop: asyncio.AbstractEventLoop | None = None
        """Running on its own thread while the client is inside ``with`` (each ``with`` starts a new one)."""
        self._thread: threading.Thread | None = None

    @property
    def aio(self) -> ToolselClient:
        """The async client underneath (connected while the sync one is)."""
        return self._client

    def run(self, work: Coroutine[Any, Any, T]) -> T:
        """Run a coroutine on the client's loop and wait for it; ``NoStack`` at once outside ``with``, where no loop
        runs (waiting for one would block for ever)."""
        if self._loop is None:
            work.close()
            raise NoStack.saying("not connected: use the client inside 'with' (leaving it closes the connection)")
        return asyncio.run_coroutine_threadsafe(work, self._loop).result()

    def __enter__(self) -> Self:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="toolsel-client", daemon=True)
        self._thread.start()
        try:
            self.run(self._client.__aenter__())
        except BaseException:
            self._stop()
            raise
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        try:
            self.run(self._client.__aexit__(kind, error, trace))
        finally:
            self._stop()

    def _stop(self) -> None:
        loop, thread, self._loop, self._thread = self._loop, self._thread, None, None
        if loop is not None and thread is not None:
            loop.call_soon_threadsafe(loop.stop)
            thread.join()
            loop.close()

    def request(self, subject: str, payload: bytes, reply_type: type[R], timeout_s: float | None = None) -> R:
        """``ToolselClient.request``: raw bytes sent, the reply decoded as ``reply_type``."""
        return self.run(self._client.request(subject, payload, reply_type, timeout_s))

    def sync(self, sync: PluginSync, *, signing_key: str | None = None) -> SyncReport:
        """``ToolselClient.sync``: sync a plugin's declaration."""
        return self.run(self._client.sync(sync, signing_key=signing_key))

    def upload(self, body: bytes) -> SyncReport:
        """``ToolselClient.upload``: a sync's JSON in parts."""
        return self.run(self._client.upload(body))

    def remove_plugin(self, plugin_id: str, tenant_id: str = SHARED_TENANT) -> SyncReport:
        """``ToolselClient.remove_plugin``: remove a plugin synced for ``tenant_id``."""
        return self.run(self._client.remove_plugin(plugin_id, tenant_id))

    def admin(self, subject: str, request: AdminRequest, reply_type: type[R]) -> R:
        """``ToolselClient.admin``: one admin request."""
        return self.run(self._client.admin(subject, request, reply_type))

    def publish(self, subject: str, event: BaseModel) -> None:
        """``ToolselClient.publish``: one event, durably."""
        self.run(self._client.publish(subject, event))

    def health(self, service: str, timeout_s: float = 2.0) -> HealthReply:
        """``ToolselClient.health``: a service's health reply."""
        return self.run(self._client.health(service, timeout_s))

    def report(self, events: Sequence[OutcomeEvent | ReviewEvent | FeedbackEvent]) -> None:
        """``ToolselClient.report``: publish outcomes, reviews or feedback durably."""
        self.run(self._client.report(events))
