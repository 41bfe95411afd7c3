"""The indexer app: plugin syncs by request/reply or as durable JetStream events."""

import asyncio
import functools
import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import asyncpg
from faststream.nats import NatsMessage, PullSub
from faststream.nats.annotations import NatsMessage as RequestMessage
from pydantic import ValidationError

from contracts import (
    AdminRequest,
    DriftReport,
    DriftRequest,
    PluginSync,
    RecomputeReport,
    RecomputeRequest,
    RegistryChanged,
    RollbackReport,
    RollbackRequest,
    SyncReport,
    ToolDetail,
    ToolKey,
    ToolList,
    ToolQuery,
    ToolVersions,
    subjects,
)
from contracts.admin import (
    AccuracyTrend,
    AnalyticsQuery,
    CategoryQuery,
    CategoryTree,
    FeedbackList,
    FeedbackQuery,
    Heatmap,
    PageCategories,
    PageMapping,
    PageMappingList,
    PageMappingQuery,
    PageMappingWrite,
    PageQuery,
    QualityList,
    QualityQuery,
    QuarantineList,
    QuarantineQuery,
    RuleCreate,
    RuleKey,
    RuleList,
    RuleQuery,
    RuleUpdate,
    SelectionMetrics,
    ToolRegister,
    ToolUpdate,
    ToolWriteReport,
    VisibilityRule,
)
from services.indexer import admin, admin_learning, admin_registry, analytics
from services.indexer.auth import authorise
from services.indexer.registry import apply_sync, embed_pending
from toolsel.analytics import replies
from toolsel.embedder import Embedder
from toolsel.messaging import (
    RequestError,
    add_health,
    check_admin,
    dead_letter,
    events_stream,
    validation_reply,
)
from toolsel.service import load_model, make_service, open_store
from toolsel.settings import get_settings

log = logging.getLogger("toolsel.indexer")
settings = get_settings()
service = make_service(
    "indexer",
    "Keeps the tool registry true to what plugins declare; embeds what changed.",
    settings,
)
broker, rpc, asyncapi, app = service.broker, service.rpc, service.asyncapi, service.app

EVENTS = events_stream()
state: dict[str, Any] = {"syncs": 0}
registry_changed = broker.publisher(subjects.REGISTRY_CHANGED, title="registry-changed", schema=RegistryChanged)
sync_reports = broker.publisher(subjects.SYNC_REPORTS, stream=EVENTS, title="sync-report", schema=SyncReport)


def _pool() -> asyncpg.Pool:
    pool: asyncpg.Pool = state["pool"]
    return pool


def _embedder() -> Embedder:
    embedder: Embedder = state["embedder"]
    return embedder


async def _embed() -> int:
    """One embedding pass at a time: syncs, rollbacks and recomputes all end with one."""
    async with state["embed_lock"]:
        embedded: int = await embed_pending(_pool(), _embedder())
    return embedded


async def run_sync(sync: PluginSync, payload: Mapping[str, Any]) -> SyncReport:
    """Authorise (against the payload as received, which is what a plugin signs), write, embed, and tell the
    selectors when anything changed. A refusal is logged and writes nothing."""
    try:
        authorise(
            sync,
            settings.plugin_secrets,
            payload=payload,
            signed_plugins=settings.signed_plugins,
            require_credentials=settings.require_plugin_credentials,
        )
    except RequestError as refused:
        log.warning("refused sync %s of plugin %s: %s", sync.event_id, sync.plugin_id, refused.detail.message)
        raise
    report = await apply_sync(_pool(), sync, flagged_selectable=settings.flagged_tools_selectable)
    embedded = await _embed()
    report = report.model_copy(update={"embedded": embedded})
    state["syncs"] += 1
    if report.inserted or report.updated or report.deleted or embedded:
        await registry_changed.publish(RegistryChanged(plugin_id=sync.plugin_id, reason="sync"))
    log.info("sync %s: %s", sync.plugin_id, report.model_dump(exclude={"schema_version"}))
    return report


@rpc.subscriber(
    subjects.SYNC,
    queue=subjects.INDEXER_QUEUE,
    title="sync",
    description="Sync a plugin's declaration and reply with the report (or a typed error).",
)
async def sync_request(sync: PluginSync, msg: RequestMessage) -> SyncReport:
    return await run_sync(sync, json.loads(msg.body))


@broker.subscriber(
    subjects.SYNC_EVENTS,
    stream=EVENTS,
    durable=subjects.INDEXER_DURABLE,
    pull_sub=PullSub(batch_size=1, timeout=1.0),
    title="sync-events",
    description="Syncs published as durable events; the report goes to the sync-report subject.",
)
async def sync_event(msg: NatsMessage) -> None:
    try:
        report = await run_sync(PluginSync.model_validate_json(msg.body), json.loads(msg.body))
    except ValidationError as invalid:
        await dead_letter(broker, "sync", msg.body, validation_reply(invalid).error.message)
        return
    except RequestError as refused:
        await dead_letter(broker, "sync", msg.body, refused.detail.message)
        return
    await sync_reports.publish(report)


def _admin(subject: str, description: str) -> Callable[[Callable[..., Awaitable[Any]]], Any]:
    """Register an admin handler (its request parameter is named ``request``) behind the admin-token check."""

    def register(handler: Callable[..., Awaitable[Any]]) -> Any:
        @functools.wraps(handler)
        async def checked(request: AdminRequest, **kwargs: Any) -> Any:
            check_admin(request.admin_token, settings.admin_token)
            return await handler(request, **kwargs)

        return rpc.subscriber(
            subject,
            queue=subjects.INDEXER_QUEUE,
            title=subject.removeprefix(f"{subjects.RPC_PREFIX}."),
            description=description,
        )(checked)

    return register


@_admin(subjects.ADMIN_TOOLS_LIST, "List tools, filtered by plugin, status and review flag.")
async def tools_list(request: ToolQuery) -> ToolList:
    return await admin.list_tools(_pool(), request)


@_admin(subjects.ADMIN_TOOLS_SHOW, "One tool's record and declared spec (not_found for an unknown tool).")
async def tools_show(request: ToolKey) -> ToolDetail:
    return await admin.show_tool(_pool(), request)


@_admin(subjects.ADMIN_TOOLS_VERSIONS, "A tool's version history, each entry with its diff from the one before.")
async def tools_versions(request: ToolKey) -> ToolVersions:
    return await admin.tool_versions(_pool(), request)


@_admin(subjects.ADMIN_TOOLS_APPROVE, "Approve a tool: clears its review flag and brings a held-back tool back.")
async def tools_approve(request: ToolKey) -> ToolDetail:
    detail = await admin.approve(_pool(), request)
    await registry_changed.publish(
        RegistryChanged(plugin_id=request.plugin_id, reason="approved", changed=[request.name])
    )
    return detail


@_admin(subjects.ADMIN_TOOLS_ROLLBACK, "Restore a tool to a version (a new version entry), re-embed, notify selectors.")
async def tools_rollback(request: RollbackRequest) -> RollbackReport:
    report = await admin.rollback(_pool(), request)
    if not report.changed_fields:
        return report
    embedded = await _embed()
    await registry_changed.publish(
        RegistryChanged(plugin_id=request.plugin_id, reason=f"rollback to v{request.version}", changed=[request.name])
    )
    tool = (await admin.show_tool(_pool(), ToolKey(plugin_id=request.plugin_id, name=request.name))).tool
    log.info("rollback %s/%s to v%d as v%d", request.plugin_id, request.name, request.version, report.new_version)
    return report.model_copy(update={"embedded": embedded, "tool": tool})


@_admin(subjects.ADMIN_EMBEDDINGS_RECOMPUTE, "Re-embed missing, stale and drifted tools (all in scope with force).")
async def embeddings_recompute(request: RecomputeRequest) -> RecomputeReport:
    started = time.perf_counter()
    marked = await admin.mark_for_recompute(_pool(), request, settings.drift_days)
    embedded = await _embed()
    if embedded:
        await registry_changed.publish(RegistryChanged(plugin_id=request.plugin_id or "*", reason="recompute"))
    return RecomputeReport(marked=marked, embedded=embedded, duration_ms=(time.perf_counter() - started) * 1000)


@_admin(subjects.ADMIN_DRIFT, "Tools whose vector is missing, stale or older than drift_days.")
async def drift(request: DriftRequest) -> DriftReport:
    return await admin.drift_report(_pool(), request, settings.drift_days)


async def _changed(plugin_id: str, reason: str, changed: list[str] | None = None) -> None:
    await registry_changed.publish(RegistryChanged(plugin_id=plugin_id, reason=reason, changed=changed or []))


async def _tool_written(report: ToolWriteReport, reason: str) -> ToolWriteReport:
    """After an operator's tool write, as after a sync: embed what changed and tell the selectors."""
    embedded = await _embed()
    await _changed(report.tool.plugin_id, reason, [report.tool.name])
    tool = (await admin.show_tool(_pool(), ToolKey(plugin_id=report.tool.plugin_id, name=report.tool.name))).tool
    return report.model_copy(update={"embedded": embedded, "tool": tool})


@_admin(subjects.ADMIN_TOOLS_REGISTER, "Register a tool as a sync would (hash, version, embedding); conflict if live.")
async def tools_register(request: ToolRegister) -> ToolWriteReport:
    report = await admin_registry.register_tool(_pool(), request, settings.flagged_tools_selectable)
    return await _tool_written(report, "admin register")


@_admin(subjects.ADMIN_TOOLS_UPDATE, "Change fields of a tool's spec: a new version, re-embedded when needed.")
async def tools_update(request: ToolUpdate) -> ToolWriteReport:
    report = await admin_registry.update_tool(_pool(), request, settings.flagged_tools_selectable)
    return await _tool_written(report, "admin update") if report.changed_fields else report


@_admin(subjects.ADMIN_TOOLS_DELETE, "Soft-delete a tool (a plugin's next sync that declares it revives it).")
async def tools_delete(request: ToolKey) -> ToolWriteReport:
    report = await admin_registry.delete_tool(_pool(), request)
    await _changed(request.plugin_id, "admin delete", [request.name])
    return report


@_admin(subjects.ADMIN_CATEGORIES_LIST, "Categories as a tree (sub-categories under their parents).")
async def categories_list(request: CategoryQuery) -> CategoryTree:
    return await admin_registry.list_categories(_pool(), request)


@_admin(subjects.ADMIN_CATEGORIES_FOR_PAGE, "The categories a page brings in: mapped ones, then their sub-categories.")
async def categories_for_page(request: PageQuery) -> PageCategories:
    return await admin_registry.page_categories(_pool(), request)


@_admin(subjects.ADMIN_PAGE_MAPPINGS_LIST, "Page-to-category mappings, highest priority first.")
async def page_mappings_list(request: PageMappingQuery) -> PageMappingList:
    return await admin_registry.list_page_mappings(_pool(), request)


@_admin(subjects.ADMIN_PAGE_MAPPINGS_CREATE, "Map a page pattern to a category of a plugin.")
async def page_mappings_create(request: PageMappingWrite) -> PageMapping:
    mapping = await admin_registry.create_page_mapping(_pool(), request)
    await _changed(request.plugin_id, "page mapping created")
    return mapping


@_admin(subjects.ADMIN_PAGE_MAPPINGS_DELETE, "Delete a page mapping (not_found when there is none).")
async def page_mappings_delete(request: PageMappingWrite) -> PageMapping:
    mapping = await admin_registry.delete_page_mapping(_pool(), request)
    await _changed(request.plugin_id, "page mapping deleted")
    return mapping


@_admin(subjects.ADMIN_RULES_LIST, "Visibility rules, highest priority first (active ones unless asked).")
async def rules_list(request: RuleQuery) -> RuleList:
    return await admin_registry.list_rules(_pool(), request)


@_admin(subjects.ADMIN_RULES_CREATE, "Create a visibility rule.")
async def rules_create(request: RuleCreate) -> VisibilityRule:
    rule = await admin_registry.create_rule(_pool(), request.rule)
    await _changed("*", "visibility rule created")
    return rule


@_admin(subjects.ADMIN_RULES_UPDATE, "Replace a visibility rule's fields.")
async def rules_update(request: RuleUpdate) -> VisibilityRule:
    rule = await admin_registry.update_rule(_pool(), request.id, request.rule)
    await _changed("*", "visibility rule updated")
    return rule


@_admin(subjects.ADMIN_RULES_DELETE, "Delete a visibility rule.")
async def rules_delete(request: RuleKey) -> VisibilityRule:
    rule = await admin_registry.delete_rule(_pool(), request.id)
    await _changed("*", "visibility rule deleted")
    return rule


@_admin(subjects.ADMIN_QUARANTINE_LIST, "Quarantined tools (and released ones when asked); the learner releases.")
async def quarantine_list(request: QuarantineQuery) -> QuarantineList:
    return await admin_learning.quarantine(_pool(), request)


@_admin(subjects.ADMIN_FEEDBACK_LIST, "A tool's most recent feedback from people.")
async def feedback_list(request: FeedbackQuery) -> FeedbackList:
    return await admin_learning.feedback(_pool(), request)


@_admin(subjects.ADMIN_QUALITY, "One tool's quality metrics, or every tool that is not healthy.")
async def quality(request: QualityQuery) -> QualityList:
    return await admin_learning.quality(_pool(), request)


@_admin(subjects.ADMIN_ANALYTICS_METRICS, "Selection metrics over a window of the event history.")
async def analytics_metrics(request: AnalyticsQuery) -> SelectionMetrics:
    return await analytics.answer(_pool(), request, replies.metrics_reply)


@_admin(subjects.ADMIN_ANALYTICS_HEATMAP, "Tool x page selection counts over a window.")
async def analytics_heatmap(request: AnalyticsQuery) -> Heatmap:
    return await analytics.answer(_pool(), request, replies.heatmap_reply)


@_admin(subjects.ADMIN_ANALYTICS_ACCURACY, "Daily retrieval accuracy: outcomes whose called tools were selected.")
async def analytics_accuracy(request: AnalyticsQuery) -> AccuracyTrend:
    return await analytics.answer(_pool(), request, replies.accuracy_reply)


add_health(rpc, "indexer", lambda: {"syncs": state["syncs"]})
broker.include_router(rpc)


@app.on_startup
async def _start() -> None:
    state["pool"] = await open_store(settings)
    state["embedder"] = await load_model(settings, cache=False)
    state["embed_lock"] = asyncio.Lock()


@app.on_shutdown
async def _stop() -> None:
    await _pool().close()
