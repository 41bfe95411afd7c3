"""The dashboard's pages, rendered on the server: each reads what it shows through the admin client and each form
posts one write (CSRF token in the form), then returns to the page it came from with the result in one line."""

import asyncio
import json
from collections import defaultdict
from collections.abc import Awaitable
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates
from pydantic import BaseModel, BeforeValidator, ValidationError

from toolsel.client import ToolselClient
from toolsel.contracts import (
    DEFAULT_TENANT,
    DEFAULT_TIER,
    SHARED_TENANT,
    AccuracyTrend,
    AnalyticsQuery,
    DriftRequest,
    Heatmap,
    PageMappingQuery,
    PageMappingWrite,
    PluginQuery,
    PluginSync,
    QualityQuery,
    QuarantineQuery,
    QuarantineRelease,
    RollbackRequest,
    RuleCreate,
    RuleFields,
    RuleKey,
    RulePatch,
    RuleQuery,
    RuleUpdate,
    SelectionMetrics,
    SelectRequest,
    ToolKey,
    ToolQuery,
)
from toolsel.contracts.admin import HEATMAP_PAGES_SHOWN, HEATMAP_TOOLS_SHOWN
from toolsel.dashboard import charts
from toolsel.dashboard.api import client_of
from toolsel.dashboard.auth import COOKIE, Reader, Writer, caller
from toolsel.errors import InvalidRequest, ToolselError, first_problem

templates = Jinja2Templates(directory=Path(__file__).parent / "templates")
templates.env.globals["shade"] = charts.shade
TABS = (
    ("catalog", "Catalog"),
    ("plugins", "Plugins"),
    ("mappings", "Page mappings"),
    ("rules", "Rules"),
    ("quality", "Quality"),
    ("reviews", "Reviews"),
    ("analytics", "Analytics"),
    ("try", "Try it"),
)
T = TypeVar("T")

router = APIRouter(include_in_schema=False)
Blank = BeforeValidator(lambda given: given or None)
"""An empty form field is no value: a number input left empty sends ``k=``."""


def render(request: Request, template: str, status: int = 200, **context: Any) -> HTMLResponse:
    """A page with the tabs, the session's CSRF token and its one-line messages (shown once)."""
    found = caller(request)
    session = found.session if found is not None else None
    flash = list(session.flash) if session is not None else []
    if session is not None:
        session.flash.clear()
    return templates.TemplateResponse(
        request,
        template,
        {"tabs": TABS, "csrf": session.csrf if session else "", "flash": flash, **context},
        status_code=status,
    )


def back(request: Request, message: str, to: str | None = None) -> Response:
    """Return to ``to`` (else the page the form was on) with ``message`` shown there."""
    found = caller(request)
    if found is not None and found.session is not None:
        found.session.flash.append(message)
    referer = request.headers.get("referer", "")
    origin = str(request.base_url).rstrip("/")
    target = to or (referer.removeprefix(origin) if referer.startswith(origin) else "/")
    return RedirectResponse(target or "/", status_code=303)


def error_page(request: Request, error: ToolselError, status: int) -> HTMLResponse:
    return render(request, "error.html", status, error=str(error), tab="")


def sign_in_page(request: Request, error: str = "", status: int = 200) -> HTMLResponse:
    response = templates.TemplateResponse(request, "sign_in.html", {"error": error}, status_code=status)
    if error:
        response.delete_cookie(COOKIE)
    return response


def _invalid(error: Exception) -> InvalidRequest:
    if isinstance(error, ValidationError):
        field, why = first_problem(error)
        return InvalidRequest.saying(why, field or None)
    return InvalidRequest.saying(str(error))


@router.get("/")
async def home(caller: Reader) -> Response:
    return RedirectResponse("/catalog", status_code=303)


# catalog


@router.get("/catalog")
async def catalog(
    request: Request,
    caller: Reader,
    search: str = "",
    plugin_id: str = "",
    status: str = "",
    flagged: str = "",
    page: int = 1,
) -> HTMLResponse:
    """One page of the catalog; the form's empty fields filter nothing."""
    size = request.app.state.settings.dashboard_page_size
    page = max(page, 1)
    query = ToolQuery(
        search=search or None,
        plugin_id=plugin_id or None,
        status=status or None,
        flagged=flagged or None,
        limit=size,
        offset=(page - 1) * size,
    )
    listed = await client_of(request).list_tools(query)
    total = listed.total or 0
    filters = {"search": search, "plugin_id": plugin_id, "status": status, "flagged": flagged}
    return render(
        request,
        "catalog.html",
        tab="catalog",
        tools=listed.tools,
        total=total,
        page=page,
        pages=max(1, -(-total // size)),
        filters=filters,
        first=(page - 1) * size + 1,
    )


@router.get("/catalog/{plugin_id}/{name}")
async def tool(request: Request, caller: Reader, plugin_id: str, name: str) -> HTMLResponse:
    client = client_of(request)
    detail = await client.show_tool(plugin_id, name)
    versions = await client.tool_versions(plugin_id, name)
    quality = await client.quality(QualityQuery(plugin_id=plugin_id, name=name))
    feedback = await client.list_feedback(plugin_id=plugin_id, name=name, limit=10)
    return render(
        request,
        "tool.html",
        tab="catalog",
        detail=detail,
        spec=json.dumps(detail.spec, indent=2, ensure_ascii=False),
        versions=list(reversed(versions.versions)),
        quality=quality.tools,
        feedback=feedback.feedback,
    )


@router.post("/catalog/{plugin_id}/{name}/rollback")
async def rollback(
    request: Request, caller: Writer, plugin_id: str, name: str, version: Annotated[int, Form()]
) -> Response:
    report = await client_of(request).rollback_tool(RollbackRequest(plugin_id=plugin_id, name=name, version=version))
    changed = ", ".join(report.changed_fields) or "nothing differed"
    return back(request, f"rolled {plugin_id}/{name} back to v{version} as v{report.new_version} ({changed})")


@router.post("/catalog/{plugin_id}/{name}/approve")
async def approve(request: Request, caller: Writer, plugin_id: str, name: str) -> Response:
    await client_of(request).approve_tool(ToolKey(plugin_id=plugin_id, name=name))
    return back(request, f"approved {plugin_id}/{name}")


# plugins


@router.get("/plugins")
async def plugins(request: Request, caller: Reader) -> HTMLResponse:
    client = client_of(request)
    listed = await client.list_plugins(PluginQuery())
    flagged = await client.list_tools(ToolQuery(flagged=True, limit=200))
    return render(request, "plugins.html", tab="plugins", plugins=listed.plugins, flagged=flagged.tools)


@router.post("/plugins/sync")
async def sync(
    request: Request, caller: Writer, declaration: Annotated[str, Form(max_length=32 * 1024 * 1024)]
) -> Response:
    try:
        parsed = PluginSync.model_validate_json(declaration)
    except ValueError as error:
        raise _invalid(error) from None
    report = await client_of(request).sync(parsed)
    return back(
        request,
        f"synced {report.plugin_id}: {report.inserted} new, {report.updated} updated, {report.unchanged} unchanged,"
        f" {report.deleted} deleted",
    )


# page mappings


class Matrix(BaseModel):
    """Categories (``plugin/category``) by page patterns, each cell the mapping's priority (None: unmapped)."""

    rows: list[str]
    patterns: list[str]
    cells: dict[str, dict[str, int]]


async def matrix(client: ToolselClient, plugin_id: str | None) -> Matrix:
    """The matrix of one plugin's categories, or of every plugin's."""
    mappings = (await client.list_page_mappings(PageMappingQuery(plugin_id=plugin_id))).mappings
    categories = (await client.list_categories(plugin_id)).categories
    cells: dict[str, dict[str, int]] = defaultdict(dict)
    for m in mappings:
        cells[f"{m.plugin_id}/{m.category}"][m.page_pattern] = m.priority

    def walk(nodes: list[Any]) -> list[str]:
        return [name for n in nodes for name in (f"{n.plugin_id}/{n.name}", *walk(n.children))]

    rows = sorted({*walk(categories), *cells})
    return Matrix(rows=rows, patterns=sorted({m.page_pattern for m in mappings}), cells=cells)


@router.get("/mappings")
async def mappings(request: Request, caller: Reader, plugin_id: str = "", page: str = "") -> HTMLResponse:
    client = client_of(request)
    found = await client.page_categories(page=page) if page else None
    plugins = [p.plugin_id for p in (await client.list_plugins(PluginQuery())).plugins]
    shown = await matrix(client, plugin_id or None)
    return render(
        request,
        "mappings.html",
        tab="mappings",
        matrix=shown,
        plugins=plugins,
        plugin_id=plugin_id,
        page=page,
        found=found,
    )


@router.post("/mappings")
async def save_mappings(request: Request, caller: Writer) -> Response:
    """Apply the matrix as edited: a cell emptied deletes its mapping, a filled or changed one writes it (a new
    pattern comes in the form's extra column)."""
    form = await request.form()
    client = client_of(request)
    before = await matrix(client, str(form.get("plugin_id", "")) or None)
    new_pattern = str(form.get("new_pattern", "")).strip()
    done = 0
    for row in before.rows:
        plugin_id, _, category = row.partition("/")
        for pattern in [*before.patterns, *([new_pattern] if new_pattern else [])]:
            field = "new:" + row if pattern == new_pattern and pattern not in before.patterns else f"{row}|{pattern}"
            given = str(form.get(field, "")).strip()
            was = before.cells.get(row, {}).get(pattern)
            try:
                wanted = int(given) if given else None
            except ValueError:
                raise InvalidRequest.saying(f"priority of {row} on {pattern}: a whole number", field) from None
            if wanted == was:
                continue
            write = PageMappingWrite(plugin_id=plugin_id, category=category, page_pattern=pattern, priority=wanted)
            await (client.delete_page_mapping(write) if wanted is None else client.create_page_mapping(write))
            done += 1
    return back(request, f"page mappings: {done} changed")


# rules


@router.get("/rules")
async def rules(request: Request, caller: Reader) -> HTMLResponse:
    listed = await client_of(request).list_rules(RuleQuery(include_inactive=True))
    return render(request, "rules.html", tab="rules", rules=listed.rules)


@router.post("/rules")
async def create_rule(
    request: Request,
    caller: Writer,
    rule_type: Annotated[str, Form()],
    effect: Annotated[str, Form()],
    target_kind: Annotated[str, Form()],
    target: Annotated[str, Form()],
    conditions: Annotated[str, Form()] = "{}",
    priority: Annotated[int, Form()] = 0,
    tenant_id: Annotated[str, Form()] = SHARED_TENANT,
) -> Response:
    try:
        fields = RuleFields.model_validate(
            {
                "tenant_id": tenant_id or SHARED_TENANT,
                "rule_type": rule_type,
                "effect": effect,
                "target_kind": target_kind,
                "target": target,
                "conditions": json.loads(conditions or "{}"),
                "priority": priority,
            }
        )
    except ValueError as error:
        raise _invalid(error) from None
    made = await client_of(request).create_rule(RuleCreate(rule=fields))
    return back(request, f"rule {made.id} created: {made.effect} {made.target}")


@router.post("/rules/{rule_id}/active")
async def toggle_rule(request: Request, caller: Writer, rule_id: int, active: Annotated[bool, Form()]) -> Response:
    changed = await client_of(request).update_rule(RuleUpdate(id=rule_id, rule=RulePatch(active=active)))
    return back(request, f"rule {changed.id} {'activated' if changed.active else 'deactivated'}")


@router.post("/rules/{rule_id}/delete")
async def delete_rule(request: Request, caller: Writer, rule_id: int) -> Response:
    await client_of(request).delete_rule(RuleKey(id=rule_id))
    return back(request, f"rule {rule_id} deleted")


# quality


@router.get("/quality")
async def quality(request: Request, caller: Reader) -> HTMLResponse:
    client = client_of(request)
    unhealthy = await client.quality(QualityQuery(degraded=True))
    quarantined = await client.list_quarantine(QuarantineQuery(include_released=True))
    return render(
        request,
        "quality.html",
        tab="quality",
        unhealthy=unhealthy.tools,
        quarantined=[e for e in quarantined.entries if e.released_at is None],
        released=[e for e in quarantined.entries if e.released_at is not None][:20],
        changes=list(request.app.state.changes)[:30],
    )


@router.post("/quality/{plugin_id}/{name}/release")
async def release(
    request: Request, caller: Writer, plugin_id: str, name: str, tenant_id: Annotated[str, Form()] = ""
) -> Response:
    released = await client_of(request).release_quarantine(
        QuarantineRelease(plugin_id=plugin_id, name=name, tenant_id=tenant_id or None, released_by="dashboard")
    )
    tenants = ", ".join(c.tenant_id for c in released.changes)
    return back(request, f"released {plugin_id}/{name} onto probation ({tenants})")


# reviews and analytics


class AnalyticsForm(BaseModel):
    """The Analytics and Reviews tabs' form: the days it shows (UTC, both included; empty: the last
    ``dashboard_analytics_days``, today's included) and the tenant (empty: every tenant)."""

    since: Annotated[date | None, Blank] = None
    until: Annotated[date | None, Blank] = None
    tenant_id: Annotated[str | None, Blank] = None


Since = Annotated[str, Query(max_length=32)]
Until = Annotated[str, Query(max_length=32)]
TenantAsked = Annotated[str, Query(max_length=128)]


def asked_window(request: Request, since: str, until: str, tenant_id: str) -> AnalyticsQuery:
    """The window a tab's form asks for; with no first day, the last ``dashboard_analytics_days`` up to its last
    (today's by default): a tab reads its window's history on every visit, so never the whole of a long one."""
    try:
        form = AnalyticsForm(since=since, until=until, tenant_id=tenant_id)
        days = request.app.state.settings.dashboard_analytics_days
        first = form.since or (form.until or datetime.now(UTC).date()) - timedelta(days=days - 1)
        return AnalyticsQuery(since=first, until=form.until, tenant_id=form.tenant_id)
    except ValidationError as error:
        raise _invalid(error) from None


@router.get("/reviews")
async def reviews(
    request: Request, caller: Reader, since: Since = "", until: Until = "", tenant_id: TenantAsked = ""
) -> HTMLResponse:
    """The window's review verdicts per day, their spikes and the tools whose reviews turned."""
    window = asked_window(request, since, until, tenant_id)
    trend = await client_of(request).review_trend(window)
    chart = charts.stacked_days([(d.day, d.verdicts, d.spike) for d in trend.days], "review verdicts per day")
    return render(
        request,
        "reviews.html",
        tab="reviews",
        window=window,
        trend=trend,
        chart=chart,
        spikes=[d for d in trend.days if d.spike],
        totals={k: sum(d.verdicts.get(k, 0) for d in trend.days) for k in charts.COLOURS},
    )


async def panel(asked: Awaitable[T]) -> T | str:
    """One panel's reply, or the one-line error it failed with: a panel that fails leaves the others shown."""
    try:
        return await asked
    except ToolselError as error:
        return str(error)


def heat_grid(heat: Heatmap) -> dict[str, Any]:
    """The heatmap's rows (tools, the most selected first), columns (pages, and None for "other pages" when some
    were summed: no page's own words can stand for it) and cells."""
    totals: dict[str, int] = defaultdict(int, heat.other_pages)
    for cell in heat.cells:
        totals[cell.tool] += cell.count
    grid: dict[tuple[str, str | None], int] = {(c.tool, c.page): c.count for c in heat.cells}
    grid |= {(tool, None): n for tool, n in heat.other_pages.items()}
    pages: list[str | None] = [*sorted({c.page for c in heat.cells}), *([None] if heat.other_pages else [])]
    return {
        "tools": sorted(totals, key=lambda t: (-totals[t], t)),
        "pages": pages,
        "grid": grid,
        "top": max(grid.values(), default=1),
        "left_out": heat.left_out,
    }


def metric_charts(metrics: SelectionMetrics) -> dict[str, Any]:
    latency = [
        (name, value)
        for name, value in (
            ("p50", metrics.latency_p50_ms),
            ("p95", metrics.latency_p95_ms),
            ("p99", metrics.latency_p99_ms),
        )
        if value is not None
    ]
    return {
        "successes": metrics.outcomes.get("success", 0),
        "methods": charts.bars(sorted(metrics.methods.items(), key=lambda kv: -kv[1]), "selections by method"),
        "outcomes": charts.bars(sorted(metrics.outcomes.items(), key=lambda kv: -kv[1]), "selections by outcome"),
        "latency": charts.bars(latency, "latency percentiles", " ms"),
    }


@router.get("/analytics")
async def analytics(
    request: Request, caller: Reader, since: Since = "", until: Until = "", tenant_id: TenantAsked = ""
) -> HTMLResponse:
    """The window's metrics, heatmap (the most selected tools on their most selected pages) and accuracy, and
    the embeddings' drift: each panel asked on its own and shown with its own error if it fails."""
    window = asked_window(request, since, until, tenant_id)
    client = client_of(request)
    metrics, heat, accuracy, drift = await asyncio.gather(
        panel(client.metrics(window)),
        panel(client.heatmap(window.model_copy(update={"tools": HEATMAP_TOOLS_SHOWN, "pages": HEATMAP_PAGES_SHOWN}))),
        panel(client.accuracy(window)),
        panel(client.drift(DriftRequest())),
    )
    return render(
        request,
        "analytics.html",
        tab="analytics",
        window=window,
        metrics=metrics,
        charts=metric_charts(metrics) if isinstance(metrics, SelectionMetrics) else {},
        accuracy=accuracy,
        accuracy_chart=(
            charts.daily_share([(p.day, p.accuracy) for p in accuracy.points], "daily retrieval accuracy")
            if isinstance(accuracy, AccuracyTrend)
            else ""
        ),
        heat=heat_grid(heat) if isinstance(heat, Heatmap) else heat,
        drift=drift,
    )


# try it


@router.get("/try")
async def try_it(
    request: Request,
    caller: Reader,
    query: str = "",
    page: str = "",
    tenant_id: str = DEFAULT_TENANT,
    tier: str = DEFAULT_TIER,
    k: Annotated[int | None, Blank] = None,
) -> HTMLResponse:
    """A dry-run selection; with no k the selector's own ``TOOLSEL_DEFAULT_K`` applies, as for ``toolsel select``."""
    reply = None
    if query:
        asked = SelectRequest(query=query, page=page, tenant_id=tenant_id, tier=tier, k=k, dry_run=True)
        reply = await client_of(request).select(asked)
    form = {"query": query, "page": page, "tenant_id": tenant_id, "tier": tier, "k": k}
    return render(request, "try.html", tab="try", reply=reply, form=form)
