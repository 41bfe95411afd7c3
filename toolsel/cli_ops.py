"""Operator and analyst commands (``toolsel admin``, ``feedback``, ``export``, ``analytics``, ``report`` and the
tool writes of ``toolsel tools``). Imported by ``toolsel.cli``, whose helpers they use; admin requests carry
``TOOLSEL_ADMIN_TOKEN`` from the environment."""

import json
from collections.abc import Callable
from datetime import date, datetime
from pathlib import Path
from typing import Annotated, Any, TypeVar, get_type_hints

import polars as pl
import typer
from pydantic import BaseModel
from rich.table import Table
from rich.tree import Tree

from contracts import FeedbackEvent, QuarantineRelease, SelectRequest, ToolKey, ToolSpec, ToolStateChanged, subjects
from contracts.admin import (
    AnalyticsQuery,
    CategoryNode,
    CategoryQuery,
    CategoryTree,
    FeedbackList,
    FeedbackQuery,
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
    RuleFields,
    RuleKey,
    RuleList,
    RuleQuery,
    RuleUpdate,
    ToolRegister,
    ToolUpdate,
    ToolWriteReport,
    VisibilityRule,
)
from toolsel.analytics import replies
from toolsel.cli import AsJson, _admin, _client, _run, _with_database, cli, tools_cli
from toolsel.render import EXPLAIN, console, selection_table

admin_cli = typer.Typer(help="Categories, page mappings, visibility rules, test selections, quarantine.")
mappings_cli = typer.Typer(help="Page-to-category mappings.", no_args_is_help=True)
rules_cli = typer.Typer(help="Visibility rules (who sees which tool or category).", no_args_is_help=True)
quarantine_cli = typer.Typer(help="Quarantined tools.", no_args_is_help=True)
feedback_cli = typer.Typer(help="People's ratings of tools (seed 004's tool-feedback).", no_args_is_help=True)
analytics_cli = typer.Typer(
    help="Selection analytics, from the indexer (the store) or an export.", no_args_is_help=True
)
cli.add_typer(admin_cli, name="admin", no_args_is_help=True)
admin_cli.add_typer(mappings_cli, name="page-mappings")
admin_cli.add_typer(rules_cli, name="rules")
admin_cli.add_typer(quarantine_cli, name="quarantine")
cli.add_typer(feedback_cli, name="feedback")
cli.add_typer(analytics_cli, name="analytics")

R = TypeVar("R", bound=BaseModel)
Format = Annotated[str, typer.Option("--format", help="table or json")]
Since = Annotated[datetime | None, typer.Option(formats=["%Y-%m-%d"], help="first day (UTC), included")]
Until = Annotated[datetime | None, typer.Option(formats=["%Y-%m-%d"], help="last day (UTC), included")]


def _day(moment: datetime | None) -> date | None:
    return moment.date() if moment else None


def _table(title: str, rows: list[dict[str, Any]]) -> Table:
    table = Table(title=title, title_justify="left")
    for column in rows[0] if rows else ():
        table.add_column(column)
    for row in rows:
        table.add_row(*("" if v is None else f"{v:.3f}" if isinstance(v, float) else str(v) for v in row.values()))
    return table


def _rows(title: str, key: str) -> Any:
    """Show a reply's list ``key`` as a table."""
    return lambda reply: console.print(_table(title, [item.model_dump() for item in getattr(reply, key)]))


def _tool(ref: str) -> tuple[str, str]:
    plugin, _, name = ref.partition("/")
    if not plugin or not name:
        console.print(f"[red]--tool takes PLUGIN/NAME, not {ref!r}[/]")
        raise typer.Exit(2)
    return plugin, name


# tools: register, update, soft-delete


def _written(report: ToolWriteReport) -> None:
    version = f"v{report.version}" if report.version else "no new version"
    changed = ", ".join(report.changed_fields) or "nothing"
    console.print(
        f"{report.tool.plugin_id}/{report.tool.name}: {version}; changed {changed}; embedded {report.embedded}"
    )


@tools_cli.command("register")
def tools_register(
    plugin: str,
    spec: Annotated[Path, typer.Argument(help="a ToolSpec JSON file")],
    tenant: Annotated[str, typer.Option(help="tenant id, * for every tenant")] = "*",
    as_json: AsJson = False,
) -> None:
    """Register a tool in PLUGIN (as a sync would: hash, version, embedding, selectors told)."""
    request = ToolRegister(plugin_id=plugin, tenant_id=tenant, tool=ToolSpec.model_validate_json(spec.read_text()))
    _admin(lambda c: c.admin(subjects.ADMIN_TOOLS_REGISTER, request, ToolWriteReport), as_json, _written)


@tools_cli.command("update")
def tools_update(
    plugin: str,
    name: str,
    changes: Annotated[list[str], typer.Option("--set", help="FIELD=VALUE (VALUE as JSON, else text); repeat")],
    as_json: AsJson = False,
) -> None:
    """Change fields of a tool's spec; written as a new version."""
    parsed = {}
    for change in changes:
        field, _, value = change.partition("=")
        try:
            parsed[field] = json.loads(value)
        except json.JSONDecodeError:
            parsed[field] = value
    request = ToolUpdate(plugin_id=plugin, name=name, changes=parsed)
    _admin(lambda c: c.admin(subjects.ADMIN_TOOLS_UPDATE, request, ToolWriteReport), as_json, _written)


@tools_cli.command("delete")
def tools_delete(plugin: str, name: str, as_json: AsJson = False) -> None:
    """Soft-delete a tool (its plugin's next sync that declares it brings it back)."""
    request = ToolKey(plugin_id=plugin, name=name)
    _admin(lambda c: c.admin(subjects.ADMIN_TOOLS_DELETE, request, ToolWriteReport), as_json, _written)


# categories and page mappings


def _branch(tree: Tree, node: CategoryNode) -> None:
    hint = f"  [dim]{node.workflow_hint}[/]" if node.workflow_hint else ""
    branch = tree.add(f"{node.name}{hint}")
    for child in node.children:
        _branch(branch, child)


@admin_cli.command("categories")
def categories(
    plugin: Annotated[str | None, typer.Option(help="only this plugin's")] = None, as_json: AsJson = False
) -> None:
    """Categories as a tree, per plugin."""

    def show(reply: CategoryTree) -> None:
        plugins: dict[str, Tree] = {}
        for node in reply.categories:
            _branch(plugins.setdefault(node.plugin_id, Tree(f"[bold]{node.plugin_id}[/]")), node)
        for tree in plugins.values():
            console.print(tree)

    _admin(
        lambda c: c.admin(subjects.ADMIN_CATEGORIES_LIST, CategoryQuery(plugin_id=plugin), CategoryTree), as_json, show
    )


@admin_cli.command("page-categories")
def page_categories(page: str, as_json: AsJson = False) -> None:
    """The categories PAGE brings in (what the selector's page filter keeps)."""
    request = PageQuery(page=page)
    _admin(
        lambda c: c.admin(subjects.ADMIN_CATEGORIES_FOR_PAGE, request, PageCategories),
        as_json,
        _rows(f"categories for {page}", "categories"),
    )


@mappings_cli.command("list")
def mappings_list(
    plugin: Annotated[str | None, typer.Option()] = None,
    category: Annotated[str | None, typer.Option()] = None,
    as_json: AsJson = False,
) -> None:
    """Page mappings, highest priority first."""
    request = PageMappingQuery(plugin_id=plugin, category=category)
    _admin(
        lambda c: c.admin(subjects.ADMIN_PAGE_MAPPINGS_LIST, request, PageMappingList),
        as_json,
        _rows("page mappings", "mappings"),
    )


@mappings_cli.command("create")
def mappings_create(plugin: str, pattern: str, category: str, priority: int = 0, as_json: AsJson = False) -> None:
    """Map PATTERN (/exact, /prefix*, *suffix, *contains*) to PLUGIN's CATEGORY."""
    request = PageMappingWrite(plugin_id=plugin, page_pattern=pattern, category=category, priority=priority)
    _admin(lambda c: c.admin(subjects.ADMIN_PAGE_MAPPINGS_CREATE, request, PageMapping), as_json, console.print)


@mappings_cli.command("delete")
def mappings_delete(plugin: str, pattern: str, category: str, as_json: AsJson = False) -> None:
    """Delete a page mapping."""
    request = PageMappingWrite(plugin_id=plugin, page_pattern=pattern, category=category)
    _admin(lambda c: c.admin(subjects.ADMIN_PAGE_MAPPINGS_DELETE, request, PageMapping), as_json, console.print)


# visibility rules


def _rule(
    rule_type: str,
    effect: str,
    target_kind: str,
    target: str,
    conditions: str,
    priority: int,
    tenant: str,
    active: bool,
) -> RuleFields:
    return RuleFields.model_validate(
        {
            "tenant_id": tenant,
            "rule_type": rule_type,
            "effect": effect,
            "target_kind": target_kind,
            "target": target,
            "conditions": json.loads(conditions),
            "priority": priority,
            "active": active,
        }
    )


RuleType = Annotated[str, typer.Option("--type", help="org, user, page, role, tier or composite")]
Effect = Annotated[str, typer.Option(help="allow or deny")]
TargetKind = Annotated[str, typer.Option(help="tool (plugin/name) or category (plugin/category)")]
Conditions = Annotated[str, typer.Option(help='JSON, e.g. {"tier": {"gte": "teams"}}')]
Tenant = Annotated[str, typer.Option(help="tenant the rule applies to, * for all")]


@rules_cli.command("list")
def rules_list(
    tenant: Annotated[str | None, typer.Option()] = None,
    inactive: Annotated[bool, typer.Option("--all", help="include inactive rules")] = False,
    as_json: AsJson = False,
) -> None:
    """Visibility rules, highest priority first."""
    request = RuleQuery(tenant_id=tenant, include_inactive=inactive)
    _admin(lambda c: c.admin(subjects.ADMIN_RULES_LIST, request, RuleList), as_json, _rows("visibility rules", "rules"))


@rules_cli.command("create")
def rules_create(
    rule_type: RuleType,
    effect: Effect,
    target_kind: TargetKind,
    target: str,
    conditions: Conditions = "{}",
    priority: int = 0,
    tenant: Tenant = "*",
    active: bool = True,
    as_json: AsJson = False,
) -> None:
    """Create a visibility rule for TARGET."""
    request = RuleCreate(rule=_rule(rule_type, effect, target_kind, target, conditions, priority, tenant, active))
    _admin(lambda c: c.admin(subjects.ADMIN_RULES_CREATE, request, VisibilityRule), as_json, console.print)


@rules_cli.command("update")
def rules_update(
    rule_id: int,
    rule_type: RuleType,
    effect: Effect,
    target_kind: TargetKind,
    target: str,
    conditions: Conditions = "{}",
    priority: int = 0,
    tenant: Tenant = "*",
    active: bool = True,
    as_json: AsJson = False,
) -> None:
    """Replace the fields of rule RULE_ID."""
    rule = _rule(rule_type, effect, target_kind, target, conditions, priority, tenant, active)
    request = RuleUpdate(id=rule_id, rule=rule)
    _admin(lambda c: c.admin(subjects.ADMIN_RULES_UPDATE, request, VisibilityRule), as_json, console.print)


@rules_cli.command("delete")
def rules_delete(rule_id: int, as_json: AsJson = False) -> None:
    """Delete rule RULE_ID."""
    request = RuleKey(id=rule_id)
    _admin(lambda c: c.admin(subjects.ADMIN_RULES_DELETE, request, VisibilityRule), as_json, console.print)


# test selection and quarantine


@admin_cli.command("test-selection")
def dry_run_selection(
    query: str,
    page: str = "",
    tenant: str = "default",
    tier: str = "free",
    role: str | None = None,
    user: str | None = None,
    k: int | None = None,
    as_json: AsJson = False,
) -> None:
    """A dry run (nothing recorded) with every part of each score."""
    request = SelectRequest(
        query=query, page=page, tenant_id=tenant, tier=tier, role=role, user_id=user, k=k, dry_run=True
    )

    def show(reply: Any) -> None:
        console.print(selection_table(reply, query, EXPLAIN))
        console.print(f"[dim]method {reply.method}; degraded: {', '.join(reply.degraded) or 'nothing'}[/]")

    _admin(lambda c: c.select(request), as_json, show)


@quarantine_cli.command("list")
def quarantine_list(
    released: Annotated[bool, typer.Option("--all", help="include released tools")] = False, as_json: AsJson = False
) -> None:
    """Quarantined tools, most recent first."""
    request = QuarantineQuery(include_released=released)
    _admin(
        lambda c: c.admin(subjects.ADMIN_QUARANTINE_LIST, request, QuarantineList),
        as_json,
        _rows("quarantine", "entries"),
    )


@quarantine_cli.command("release")
def quarantine_release(plugin: str, name: str, by: str = "operator", as_json: AsJson = False) -> None:
    """Put a quarantined tool on probation (the learner's release request)."""
    request = QuarantineRelease(plugin_id=plugin, name=name, released_by=by)
    _admin(
        lambda c: c.admin(subjects.ADMIN_QUARANTINE_RELEASE, request, ToolStateChanged),
        as_json,
        lambda change: console.print(f"{plugin}/{name}: {change.state}"),
    )


# feedback


@feedback_cli.command("submit")
def feedback_submit(
    tool: Annotated[str, typer.Option(help="PLUGIN/NAME")],
    rating: Annotated[float, typer.Option(help="0..1")],
    comment: str = "",
    tenant: str = "default",
    author: str | None = None,
) -> None:
    """Rate a tool; published durably for the learner (toolsel.events.feedback)."""
    plugin, name = _tool(tool)
    event = FeedbackEvent(plugin_id=plugin, name=name, rating=rating, comment=comment, tenant_id=tenant, author=author)

    async def main() -> None:
        async with _client() as client:
            await client.report([event])

    _run(main)
    console.print(f"feedback {event.event_id} for {tool}: {rating}")


@feedback_cli.command("list")
def feedback_list(
    tool: Annotated[str, typer.Option(help="PLUGIN/NAME")], limit: int = 20, fmt: Format = "table"
) -> None:
    """A tool's most recent feedback."""
    plugin, name = _tool(tool)
    request = FeedbackQuery(plugin_id=plugin, name=name, limit=limit)
    _admin(
        lambda c: c.admin(subjects.ADMIN_FEEDBACK_LIST, request, FeedbackList), fmt == "json", _rows(tool, "feedback")
    )


@feedback_cli.command("metrics")
def feedback_metrics(
    tool: Annotated[str | None, typer.Option(help="PLUGIN/NAME")] = None,
    degraded: Annotated[bool, typer.Option(help="every tool that is not healthy")] = False,
    fmt: Format = "table",
) -> None:
    """Quality of one tool (calls, success rate, ratings, latency, state) or of the degraded ones."""
    plugin, name = _tool(tool) if tool else (None, None)
    request = QualityQuery(plugin_id=plugin, name=name, degraded=degraded)
    _admin(
        lambda c: c.admin(subjects.ADMIN_QUALITY, request, QualityList), fmt == "json", _rows("tool quality", "tools")
    )


# export, analytics, report


@cli.command("export")
def export_(
    out: Annotated[Path, typer.Option(help="export directory")], since: Since = None, until: Until = None
) -> None:
    """Write selections, outcomes, reviews and feedback as Parquet (hive-partitioned by day); a later export
    writes only what is new. Reads PostgreSQL directly (TOOLSEL_DATABASE_URL or the running stack's)."""
    from toolsel.analytics.export import export

    written = _with_database(lambda pool: export(pool, out, _day(since), _day(until)))
    console.print(_table(f"exported to {out}", [{"table": t, "rows": n} for t, n in written.items()]))


def _local(export_dir: Path, since: date | None, until: date | None) -> tuple[pl.DataFrame, pl.DataFrame]:
    from toolsel.analytics.load import from_export

    return from_export(export_dir, "selections", since, until), from_export(export_dir, "outcomes", since, until)


ExportDir = Annotated[Path | None, typer.Option("--export", help="compute from this export instead of the store")]


def _analytics(
    subject: str,
    measure: Callable[[pl.DataFrame, pl.DataFrame], R],
    window: tuple[date | None, date | None, Path | None],
    as_json: bool,
    show: Callable[[Any], None],
) -> None:
    """Ask the indexer (the store), or measure an export locally with the same function the indexer uses."""
    since, until, export_dir = window
    if export_dir is None:
        query = AnalyticsQuery(since=since, until=until)
        reply_type = get_type_hints(measure)["return"]
        _admin(lambda c: c.admin(subject, query, reply_type), as_json, show)
        return
    reply = measure(*_local(export_dir, since, until))
    if as_json:
        print(reply.model_dump_json(indent=2))
    else:
        show(reply)


@analytics_cli.command("metrics")
def analytics_metrics(since: Since = None, until: Until = None, export_dir: ExportDir = None) -> None:
    """Selections, latency percentiles, methods, outcomes and average tokens saved (JSON)."""
    window = (_day(since), _day(until), export_dir)
    _analytics(subjects.ADMIN_ANALYTICS_METRICS, replies.metrics_reply, window, True, console.print)


@analytics_cli.command("heatmap")
def analytics_heatmap(
    since: Since = None, until: Until = None, export_dir: ExportDir = None, as_json: AsJson = False
) -> None:
    """How often each tool was selected on each page."""
    window = (_day(since), _day(until), export_dir)
    _analytics(subjects.ADMIN_ANALYTICS_HEATMAP, replies.heatmap_reply, window, as_json, _rows("tool x page", "cells"))


@analytics_cli.command("accuracy")
def analytics_accuracy(
    since: Since = None, until: Until = None, export_dir: ExportDir = None, as_json: AsJson = False
) -> None:
    """Daily share of outcomes whose called tools were all among the selected."""
    window = (_day(since), _day(until), export_dir)
    show = _rows("retrieval accuracy", "points")
    _analytics(subjects.ADMIN_ANALYTICS_ACCURACY, replies.accuracy_reply, window, as_json, show)


@cli.command("report")
def report(
    out: Annotated[Path, typer.Option(help="the HTML file to write")],
    since: Since = None,
    until: Until = None,
    export_dir: ExportDir = None,
) -> None:
    """An HTML page with the heatmap, the accuracy trend, token savings and the tool quality table."""
    from toolsel.analytics.load import from_store, quality_from_store
    from toolsel.analytics.report import render

    first, last = _day(since), _day(until)

    async def from_database(pool: Any) -> str:
        selections = await from_store(pool, "selections", first, last)
        return render(selections, await from_store(pool, "outcomes", first, last), await quality_from_store(pool))

    page = render(*_local(export_dir, first, last), None) if export_dir else _with_database(from_database)
    out.write_text(page)
    console.print(f"report written to {out}")
