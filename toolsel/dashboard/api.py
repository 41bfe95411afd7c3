"""The HTTP admin API (seed 000 §8's routes, plus quality, quarantine, feedback and reviews): each route is one
admin request through the client, with the reply model as its response. Reads need an operator; writes also the
session's CSRF token (``auth.writer``). Failures are the client's typed errors (``errors``)."""

from datetime import date
from functools import cache
from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, Depends, Query, Request
from pydantic import BaseModel, Field, create_model
from pydantic.json_schema import SkipJsonSchema

from toolsel.client import ToolselClient
from toolsel.contracts import (
    AccuracyTrend,
    AnalyticsQuery,
    CategoryQuery,
    CategoryTree,
    DriftReport,
    DriftRequest,
    FeedbackEvent,
    FeedbackList,
    FeedbackQuery,
    Heatmap,
    PageCategories,
    PageMapping,
    PageMappingList,
    PageMappingQuery,
    PageMappingWrite,
    PageQuery,
    PluginList,
    PluginQuery,
    PluginSync,
    QualityList,
    QualityQuery,
    QuarantineList,
    QuarantineQuery,
    QuarantineRelease,
    QuarantineReleased,
    RecomputeReport,
    RecomputeRequest,
    ReviewTrend,
    RollbackReport,
    RollbackRequest,
    RuleCreate,
    RuleFields,
    RuleKey,
    RuleList,
    RulePatch,
    RuleQuery,
    RuleUpdate,
    SelectionMetrics,
    SelectReply,
    SelectRequest,
    SyncReport,
    ToolDetail,
    ToolKey,
    ToolList,
    ToolQuery,
    ToolRegister,
    ToolStatus,
    ToolUpdate,
    ToolVersions,
    ToolWriteReport,
    VisibilityRule,
)
from toolsel.dashboard.auth import Reader, Writer
from toolsel.errors import InvalidRequest

M = TypeVar("M", bound=BaseModel)


@cache
def body(model: type[M]) -> type[M]:
    """``model`` as a request body: its ``admin_token`` gone from the schema and refused if sent (the dashboard
    adds its own)."""
    made: type[M] = create_model(  # type: ignore[call-overload]
        model.__name__,
        __base__=model,
        admin_token=(SkipJsonSchema[None], None),  # type: ignore[misc]
    )
    return made


def sent(message: BaseModel, contract: type[M]) -> M:
    """A request body (``body(contract)``) as the contract's own message, for the client to add the token to."""
    return contract.model_validate(message.model_dump(exclude={"admin_token"}))


def client_of(request: Request) -> ToolselClient:
    client: ToolselClient = request.app.state.client
    return client


class Changes(BaseModel):
    """Fields of a tool's spec to replace (``ToolUpdate.changes``)."""

    changes: dict[str, Any] = Field(min_length=1, max_length=32)


class Version(BaseModel):
    version: int = Field(ge=1)


class Release(BaseModel):
    tenant_id: str | None = None
    """The tenant it is quarantined for; none: every tenant."""


def analytics_query(request: Request, **fields: Any) -> AnalyticsQuery:
    """The analytics request of a route's query parameters; one the route does not take is refused, not ignored
    (an ignored ``tenant_id`` counted every tenant)."""
    unknown = sorted(set(request.query_params) - set(fields))
    if unknown:
        raise InvalidRequest.saying(f"not a parameter of this route (it takes {', '.join(fields)})", unknown[0])
    return AnalyticsQuery(**fields)


def window(
    request: Request, since: date | None = None, until: date | None = None, tenant_id: str | None = None
) -> AnalyticsQuery:
    """The days of the event history an analytics route reads (UTC, both included), of one tenant or all."""
    return analytics_query(request, since=since, until=until, tenant_id=tenant_id)


def heat_window(
    request: Request,
    since: date | None = None,
    until: date | None = None,
    tenant_id: str | None = None,
    tools: int | None = None,
    pages: int | None = None,
) -> AnalyticsQuery:
    """``window``, and the heatmap's bounds: the most selected tools, and pages."""
    return analytics_query(request, since=since, until=until, tenant_id=tenant_id, tools=tools, pages=pages)


Window = Annotated[AnalyticsQuery, Depends(window)]
HeatWindow = Annotated[AnalyticsQuery, Depends(heat_window)]

router = APIRouter(prefix="/api")


# tools


@router.get("/tools", summary="List tools, filtered and paged")
async def list_tools(
    request: Request,
    caller: Reader,
    plugin_id: str | None = None,
    status: ToolStatus | None = None,
    flagged: bool | None = None,
    search: str | None = None,
    include_deleted: bool = False,
    limit: Annotated[int, Query(ge=1, le=5000)] = 200,
    offset: Annotated[int, Query(ge=0)] = 0,
) -> ToolList:
    query = ToolQuery(
        plugin_id=plugin_id,
        status=status,
        flagged=flagged,
        search=search or None,
        include_deleted=include_deleted,
        limit=limit,
        offset=offset,
    )
    return await client_of(request).list_tools(query)


@router.post("/tools", summary="Register a tool")
async def register_tool(request: Request, caller: Writer, tool: body(ToolRegister)) -> ToolWriteReport:  # type: ignore[valid-type]
    return await client_of(request).register_tool(sent(tool, ToolRegister))


@router.get("/tools/{plugin_id}/{name}", summary="A tool's record and spec")
async def show_tool(request: Request, caller: Reader, plugin_id: str, name: str) -> ToolDetail:
    return await client_of(request).show_tool(plugin_id, name)


@router.put("/tools/{plugin_id}/{name}", summary="Update a tool (a new version)")
async def update_tool(request: Request, caller: Writer, plugin_id: str, name: str, update: Changes) -> ToolWriteReport:
    return await client_of(request).update_tool(ToolUpdate(plugin_id=plugin_id, name=name, changes=update.changes))


@router.delete("/tools/{plugin_id}/{name}", summary="Soft-delete a tool")
async def delete_tool(request: Request, caller: Writer, plugin_id: str, name: str) -> ToolWriteReport:
    return await client_of(request).delete_tool(plugin_id, name)


@router.get("/tools/{plugin_id}/{name}/versions", summary="A tool's versions, each with its diff")
async def tool_versions(request: Request, caller: Reader, plugin_id: str, name: str) -> ToolVersions:
    return await client_of(request).tool_versions(plugin_id, name)


@router.post("/tools/{plugin_id}/{name}/rollback", summary="Roll a tool back to a version")
async def rollback_tool(request: Request, caller: Writer, plugin_id: str, name: str, to: Version) -> RollbackReport:
    return await client_of(request).rollback_tool(RollbackRequest(plugin_id=plugin_id, name=name, version=to.version))


@router.post("/tools/{plugin_id}/{name}/approve", summary="Approve a flagged tool")
async def approve_tool(request: Request, caller: Writer, plugin_id: str, name: str) -> ToolDetail:
    return await client_of(request).approve_tool(ToolKey(plugin_id=plugin_id, name=name))


@router.get("/plugins", summary="Plugins with their versions and flagged tools")
async def list_plugins(request: Request, caller: Reader) -> PluginList:
    return await client_of(request).list_plugins(PluginQuery())


@router.post("/plugins/sync", summary="Sync a plugin's declaration")
async def sync_plugin(request: Request, caller: Writer, sync: PluginSync) -> SyncReport:
    return await client_of(request).sync(sync)


# embeddings


@router.post("/embeddings/recompute", summary="Re-embed stale (or, forced, all) tools")
async def recompute(request: Request, caller: Writer, recompute: body(RecomputeRequest)) -> RecomputeReport:  # type: ignore[valid-type]
    return await client_of(request).recompute_embeddings(sent(recompute, RecomputeRequest))


# categories and page mappings


@router.get("/categories", summary="Categories as a tree")
async def categories(request: Request, caller: Reader, plugin_id: str | None = None) -> CategoryTree:
    return await client_of(request).list_categories(CategoryQuery(plugin_id=plugin_id))


@router.get("/categories/for-page/{page:path}", summary="The categories a page selects")
async def page_categories(request: Request, caller: Reader, page: str) -> PageCategories:
    return await client_of(request).page_categories(PageQuery(page=f"/{page.lstrip('/')}"))


@router.get("/page-mappings", summary="Page mappings")
async def page_mappings(
    request: Request, caller: Reader, plugin_id: str | None = None, category: str | None = None
) -> PageMappingList:
    return await client_of(request).list_page_mappings(PageMappingQuery(plugin_id=plugin_id, category=category))


@router.post("/page-mappings", summary="Create or re-prioritise a page mapping")
async def create_page_mapping(request: Request, caller: Writer, mapping: body(PageMappingWrite)) -> PageMapping:  # type: ignore[valid-type]
    return await client_of(request).create_page_mapping(sent(mapping, PageMappingWrite))


@router.delete("/page-mappings", summary="Delete a page mapping")
async def delete_page_mapping(
    request: Request, caller: Writer, plugin_id: str, category: str, page_pattern: str
) -> PageMapping:
    mapping = PageMappingWrite(plugin_id=plugin_id, category=category, page_pattern=page_pattern)
    return await client_of(request).delete_page_mapping(mapping)


# visibility rules


@router.get("/visibility-rules", summary="Visibility rules")
async def rules(
    request: Request, caller: Reader, tenant_id: str | None = None, include_inactive: bool = False
) -> RuleList:
    return await client_of(request).list_rules(RuleQuery(tenant_id=tenant_id, include_inactive=include_inactive))


@router.post("/visibility-rules", summary="Create a rule")
async def create_rule(request: Request, caller: Writer, rule: RuleFields) -> VisibilityRule:
    return await client_of(request).create_rule(RuleCreate(rule=rule))


@router.put("/visibility-rules/{rule_id}", summary="Change a rule's fields")
async def update_rule(request: Request, caller: Writer, rule_id: int, patch: RulePatch) -> VisibilityRule:
    return await client_of(request).update_rule(RuleUpdate(id=rule_id, rule=patch))


@router.delete("/visibility-rules/{rule_id}", summary="Delete a rule")
async def delete_rule(request: Request, caller: Writer, rule_id: int) -> VisibilityRule:
    return await client_of(request).delete_rule(RuleKey(id=rule_id))


# analytics


@router.get("/analytics/metrics", summary="Selections, latency, methods, outcomes, tokens saved")
async def metrics(request: Request, caller: Reader, days: Window) -> SelectionMetrics:
    return await client_of(request).metrics(days)


@router.get("/analytics/heatmap", summary="Selections per tool and page")
async def heatmap(request: Request, caller: Reader, days: HeatWindow) -> Heatmap:
    return await client_of(request).heatmap(days)


@router.get("/analytics/accuracy", summary="Daily retrieval accuracy")
async def accuracy(request: Request, caller: Reader, days: Window) -> AccuracyTrend:
    return await client_of(request).accuracy(days)


@router.get("/analytics/reviews", summary="The review log: verdicts per day, spikes, tools that turned")
async def reviews(request: Request, caller: Reader, days: Window) -> ReviewTrend:
    return await client_of(request).review_trend(days)


@router.get("/analytics/drift", summary="Tools with missing, stale or old embeddings")
async def drift(
    request: Request, caller: Reader, plugin_id: str | None = None, days: Annotated[float | None, Query(gt=0)] = None
) -> DriftReport:
    return await client_of(request).drift(DriftRequest(plugin_id=plugin_id, days=days))


# selection


@router.post("/test-selection", summary="Select without recording the selection (a dry run)")
async def test_selection(request: Request, caller: Writer, select: SelectRequest) -> SelectReply:
    return await client_of(request).select(select.model_copy(update={"dry_run": True}))


# quality, quarantine and feedback


@router.get("/quality", summary="One tool's quality, or every tool not healthy")
async def quality(
    request: Request, caller: Reader, plugin_id: str | None = None, name: str | None = None
) -> QualityList:
    return await client_of(request).quality(QualityQuery(plugin_id=plugin_id, name=name, degraded=name is None))


@router.get("/quarantine", summary="Quarantined tools")
async def quarantine(request: Request, caller: Reader, include_released: bool = False) -> QuarantineList:
    return await client_of(request).list_quarantine(QuarantineQuery(include_released=include_released))


@router.post("/quarantine/{plugin_id}/{name}/release", summary="Release a quarantined tool onto probation")
async def release(request: Request, caller: Writer, plugin_id: str, name: str, to: Release) -> QuarantineReleased:
    release = QuarantineRelease(plugin_id=plugin_id, name=name, tenant_id=to.tenant_id, released_by="dashboard")
    return await client_of(request).release_quarantine(release)


@router.get("/feedback/{plugin_id}/{name}", summary="People's feedback on a tool")
async def feedback(
    request: Request, caller: Reader, plugin_id: str, name: str, limit: Annotated[int, Query(ge=1, le=1000)] = 20
) -> FeedbackList:
    return await client_of(request).list_feedback(FeedbackQuery(plugin_id=plugin_id, name=name, limit=limit))


@router.post("/feedback", summary="Record a person's feedback on a tool")
async def submit_feedback(request: Request, caller: Writer, event: FeedbackEvent) -> FeedbackEvent:
    return await client_of(request).feedback(event)
