"""Analyst commands: ``export`` (Parquet), ``analytics`` (metrics, heatmap, accuracy from the store through
the learner, or locally from an export) and ``report`` (an HTML page)."""

from collections.abc import Callable
from datetime import date, datetime
from pathlib import Path
from typing import Annotated, Any, TypeVar

import asyncpg
import polars as pl
import typer
from pydantic import BaseModel

from toolsel.analytics import metrics, replies
from toolsel.cli.running import (
    USAGE,
    AsJson,
    Format,
    ObjectFormat,
    ObjectOutput,
    Output,
    Rows,
    Show,
    ask,
    chosen,
    fail,
    print_reply,
    validated,
    with_database,
)
from toolsel.client import ToolselClient
from toolsel.client_methods import Request
from toolsel.contracts.admin import AnalyticsQuery, Heatmap, SelectionMetrics
from toolsel.render import console, rows_table

app = typer.Typer()
analytics_app = typer.Typer(help="Selection analytics, from the store or an export.", no_args_is_help=True)
app.add_typer(analytics_app, name="analytics")

R = TypeVar("R", bound=BaseModel)
Since = Annotated[datetime | None, typer.Option(formats=["%Y-%m-%d"], help="first day (UTC), included")]
Until = Annotated[datetime | None, typer.Option(formats=["%Y-%m-%d"], help="last day (UTC), included")]
ExportDir = Annotated[Path | None, typer.Option("--export", help="compute from this export instead of the store")]
Tenant = Annotated[
    str | None,
    typer.Option("--tenant", help="one tenant's selections (and their outcomes and reviews); default: every tenant's"),
]


def _day(moment: datetime | None) -> date | None:
    return moment.date() if moment else None


@app.command("export")
def export_(
    out: Annotated[Path, typer.Option(help="export directory")],
    since: Since = None,
    until: Until = None,
    tenant: Tenant = None,
) -> None:
    """Write selections, outcomes, reviews and feedback as Parquet (hive-partitioned by day), all as of one
    moment; a later export writes only what is new. Reads PostgreSQL directly (TOOLSEL_DATABASE_URL or the running
    stack's). A directory holds one tenant's rows, or every tenant's."""
    from toolsel.analytics.export import ScopeMismatch, export

    if tenant is not None:
        validated(AnalyticsQuery, {"tenant_id": tenant}, "export")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as unusable:
        fail(f"--out {out}: {unusable.strerror or unusable}", USAGE)
    try:
        written = with_database(lambda pool: export(pool, out, _day(since), _day(until), tenant=tenant))
    except ScopeMismatch as refused:
        fail(f"--out {out}: {refused}", USAGE)
    console.print(rows_table(f"exported to {out}", [{"table": t, "rows": n} for t, n in written.items()]))


def _local(export_dir: Path, query: AnalyticsQuery) -> tuple[pl.DataFrame, pl.DataFrame]:
    from toolsel.analytics.load import from_export

    if not export_dir.is_dir():
        fail(f"{export_dir}: no such export directory (write one with `toolsel export --out DIR`)", USAGE)
    window = (query.since, query.until, query.tenant_id)
    return from_export(export_dir, "selections", *window), from_export(export_dir, "outcomes", *window)


def _analytics(
    method: Request[AnalyticsQuery, R],
    measure: Callable[[pl.DataFrame, pl.DataFrame, AnalyticsQuery], R],
    fields: dict[str, Any],
    export_dir: Path | None,
    fmt: Format,
    show: Show[R],
) -> None:
    """Ask the service (the store), or measure an export locally with the same function the service uses."""
    if export_dir is None:
        ask(method, fields, "analytics", fmt, show)
    else:
        query = validated(AnalyticsQuery, fields, "analytics")
        print_reply(measure(*_local(export_dir, query), query), fmt, show)


def _window(since: datetime | None, until: datetime | None, tenant: str | None) -> dict[str, Any]:
    return {"since": _day(since), "until": _day(until), "tenant_id": tenant}


def _metrics_table(metrics: SelectionMetrics) -> None:
    """A row per measure, and per kind of method and of outcome."""
    counts = {"methods": metrics.methods, "outcomes": metrics.outcomes}
    plain = metrics.model_dump(exclude={"schema_version", *counts})
    rows = [{"measure": name, "value": value} for name, value in plain.items()]
    rows += [{"measure": f"{name}: {kind}", "value": n} for name, kinds in counts.items() for kind, n in kinds.items()]
    console.print(rows_table("selection metrics", rows))


@analytics_app.command("metrics")
def analytics_metrics(
    since: Since = None,
    until: Until = None,
    export_dir: ExportDir = None,
    tenant: Tenant = None,
    fmt: ObjectOutput = ObjectFormat.table,
    as_json: AsJson = False,
) -> None:
    """Selections, latency percentiles, methods, outcomes and average tokens saved."""
    _analytics(
        ToolselClient.metrics,
        lambda selections, outcomes, _: replies.metrics_reply(selections, outcomes),
        _window(since, until, tenant),
        export_dir,
        chosen(as_json, fmt),
        _metrics_table,
    )


@analytics_app.command("heatmap")
def analytics_heatmap(
    since: Since = None,
    until: Until = None,
    export_dir: ExportDir = None,
    tenant: Tenant = None,
    tools: Annotated[int | None, typer.Option(help="only the most selected tools, this many")] = None,
    pages: Annotated[
        int | None, typer.Option(help="only the pages most selected with those tools, this many (the rest summed)")
    ] = None,
    fmt: Output = Format.table,
    as_json: AsJson = False,
) -> None:
    """How often each tool was selected on each page: the most selected cells that fit one reply, and how many
    more there were."""
    fields = {**_window(since, until, tenant), "tools": tools, "pages": pages}

    def measure(selections: pl.DataFrame, _: pl.DataFrame, query: AnalyticsQuery) -> Heatmap:
        return replies.heatmap_reply(metrics.heatmap(selections), query.tools, query.pages, None)

    _analytics(ToolselClient.heatmap, measure, fields, export_dir, chosen(as_json, fmt), Rows("tool x page", "cells"))


@analytics_app.command("accuracy")
def analytics_accuracy(
    since: Since = None,
    until: Until = None,
    export_dir: ExportDir = None,
    tenant: Tenant = None,
    fmt: Output = Format.table,
    as_json: AsJson = False,
) -> None:
    """Daily share of outcomes whose called tools were all among the selected."""
    _analytics(
        ToolselClient.accuracy,
        lambda selections, outcomes, _: replies.accuracy_reply(selections, outcomes),
        _window(since, until, tenant),
        export_dir,
        chosen(as_json, fmt),
        Rows("retrieval accuracy", "points"),
    )


@app.command("report")
def report(
    out: Annotated[Path, typer.Option(help="the HTML file to write")],
    since: Since = None,
    until: Until = None,
    export_dir: ExportDir = None,
    tenant: Tenant = None,
) -> None:
    """An HTML page with the heatmap, the accuracy trend, token savings and the tool quality table (of one tenant
    with --tenant)."""
    from toolsel.analytics.load import from_store, of_tenant, quality_from_store
    from toolsel.analytics.report import render

    query = validated(AnalyticsQuery, _window(since, until, tenant), "report")

    async def from_database(pool: asyncpg.Pool) -> str:
        selections = await from_store(pool, "selections", query.since, query.until, tenant=query.tenant_id)
        outcomes = await from_store(pool, "outcomes", query.since, query.until, tenant=query.tenant_id)
        return render(selections, outcomes, of_tenant(await quality_from_store(pool), query.tenant_id), tenant)

    page = render(*_local(export_dir, query), None, tenant) if export_dir else with_database(from_database)
    out.write_text(page)
    console.print(f"report written to {out}")
