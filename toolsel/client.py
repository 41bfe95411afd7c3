"""A small async client for toolsel over NATS: what agents, plugins, the CLI and the tests call."""

import json
import os
from collections.abc import Sequence
from types import TracebackType
from typing import Any, Self, TypeVar

import nats
from nats.aio.client import Client
from pydantic import BaseModel

from contracts import (
    AdminRequest,
    DriftReport,
    DriftRequest,
    ErrorDetail,
    ErrorReply,
    FeedbackEvent,
    HealthReply,
    OutcomeEvent,
    PluginSync,
    RecomputeReport,
    RecomputeRequest,
    ReviewEvent,
    RollbackReport,
    RollbackRequest,
    SelectReply,
    SelectRequest,
    SyncReport,
    ToolDetail,
    ToolKey,
    ToolList,
    ToolQuery,
    ToolVersions,
    payload_signature,
    subjects,
)

R = TypeVar("R", bound=BaseModel)
EVENT_SUBJECTS: dict[type[BaseModel], str] = {
    OutcomeEvent: subjects.OUTCOME_EVENTS,
    ReviewEvent: subjects.REVIEW_EVENTS,
    FeedbackEvent: subjects.FEEDBACK_EVENTS,
}


class ToolselError(Exception):
    """A typed error reply from a service."""

    def __init__(self, detail: ErrorDetail):
        where = f" ({detail.field})" if detail.field else ""
        super().__init__(f"{detail.code.value}: {detail.message}{where}")
        self.detail = detail


class ToolselClient:
    """``async with ToolselClient(url) as client: reply = await client.select(query="...")``.

    Admin requests carry ``admin_token`` (default: the ``TOOLSEL_ADMIN_TOKEN`` environment variable)."""

    def __init__(self, url: str, *, timeout_s: float = 10.0, admin_token: str | None = None):
        self.url = url
        self.timeout_s = timeout_s
        self.admin_token = admin_token or os.environ.get("TOOLSEL_ADMIN_TOKEN")
        self._nc: Client | None = None

    async def __aenter__(self) -> Self:
        self._nc = await nats.connect(self.url, name="toolsel-client", connect_timeout=2, max_reconnect_attempts=3)
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if self._nc is not None:
            await self._nc.drain()

    @property
    def nc(self) -> Client:
        if self._nc is None:
            raise RuntimeError("use the client inside 'async with'")
        return self._nc

    async def request(self, subject: str, payload: bytes, reply_type: type[R], timeout_s: float | None = None) -> R:
        """Send raw bytes; decode the reply as ``reply_type`` or raise the typed error it carries."""
        msg = await self.nc.request(subject, payload, timeout=timeout_s or self.timeout_s)
        body = json.loads(msg.data)
        if isinstance(body, dict) and "error" in body:
            raise ToolselError(ErrorReply.model_validate(body).error)
        return reply_type.model_validate(body)

    async def select(self, request: SelectRequest | None = None, **fields: Any) -> SelectReply:
        request = request or SelectRequest(**fields)
        return await self.request(subjects.SELECT, request.model_dump_json().encode(), SelectReply)

    async def sync(self, sync: PluginSync, *, signing_key: str | None = None) -> SyncReport:
        """Sync a declaration; with ``signing_key`` the credential is the payload's HMAC-SHA256 signature."""
        payload = sync.model_dump(mode="json")
        if signing_key is not None:
            payload["credential"] = payload_signature(payload, signing_key)
        return await self.request(subjects.SYNC, json.dumps(payload).encode(), SyncReport, timeout_s=300)

    async def admin(self, subject: str, request: AdminRequest, reply_type: type[R]) -> R:
        """One admin request (``contracts.subjects.ADMIN_*``), with the client's admin token unless it has one."""
        if request.admin_token is None and self.admin_token:
            request = request.model_copy(update={"admin_token": self.admin_token})
        return await self.request(subject, request.model_dump_json().encode(), reply_type, timeout_s=300)

    async def list_tools(self, **filters: Any) -> ToolList:
        return await self.admin(subjects.ADMIN_TOOLS_LIST, ToolQuery(**filters), ToolList)

    async def show_tool(self, plugin_id: str, name: str) -> ToolDetail:
        return await self.admin(subjects.ADMIN_TOOLS_SHOW, ToolKey(plugin_id=plugin_id, name=name), ToolDetail)

    async def tool_versions(self, plugin_id: str, name: str) -> ToolVersions:
        return await self.admin(subjects.ADMIN_TOOLS_VERSIONS, ToolKey(plugin_id=plugin_id, name=name), ToolVersions)

    async def approve_tool(self, plugin_id: str, name: str) -> ToolDetail:
        return await self.admin(subjects.ADMIN_TOOLS_APPROVE, ToolKey(plugin_id=plugin_id, name=name), ToolDetail)

    async def rollback_tool(self, plugin_id: str, name: str, version: int) -> RollbackReport:
        request = RollbackRequest(plugin_id=plugin_id, name=name, version=version)
        return await self.admin(subjects.ADMIN_TOOLS_ROLLBACK, request, RollbackReport)

    async def recompute_embeddings(self, plugin_id: str | None = None, *, force: bool = False) -> RecomputeReport:
        request = RecomputeRequest(plugin_id=plugin_id, force=force)
        return await self.admin(subjects.ADMIN_EMBEDDINGS_RECOMPUTE, request, RecomputeReport)

    async def drift(self, plugin_id: str | None = None, days: float | None = None) -> DriftReport:
        return await self.admin(subjects.ADMIN_DRIFT, DriftRequest(plugin_id=plugin_id, days=days), DriftReport)

    async def health(self, service: str, timeout_s: float = 2.0) -> HealthReply:
        return await self.request(subjects.health(service), b"{}", HealthReply, timeout_s=timeout_s)

    async def report(self, events: Sequence[OutcomeEvent | ReviewEvent | FeedbackEvent]) -> None:
        """Publish outcomes, reviews or people's feedback durably (JetStream acks each)."""
        js = self.nc.jetstream()
        for event in events:
            subject = EVENT_SUBJECTS[type(event)]
            await js.publish(subject, event.model_dump_json().encode(), headers={"Nats-Msg-Id": str(event.event_id)})
