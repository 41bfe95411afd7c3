"""Analyst commands: ``export`` (Parquet), ``analytics`` (metrics, heatmap, accuracy from the store through
the learner, or locally from an export) and ``report`` (an HTML page)."""

from collections.abc import Callable
from datetime import date, datetime
from pathlib import Path
from typing import Annotated, TypeVar

import asyncpg
import polars as pl
import typer
from pydantic import BaseModel

from toolsel.analytics import replies
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
    with_database,
)
from toolsel.client import ToolselClient
from toolsel.client_methods import Request
from toolsel.contracts.admin import AnalyticsQuery, SelectionMetrics
from toolsel.render import console, rows_table

app = typer.Typer()
analytics_app = typer.Typer(help="Selection analytics, from the store or an export.", no_args_is_help=True)
app.add_typer(analytics_app, name="analytics")

R = TypeVar("R", bound=BaseModel)
Since = Annotated[datetime | None, typer.Option(formats=["%Y-%m-%d"], help="first day (UTC), included")]
Until = Annotated[datetime | None, typer.Option(formats=["%Y-%m-%d"], help="last day (UTC), included")]
ExportDir = Annotated[Path | None, typer.Option("--export", help="compute from this export instead of the store")]


def _day(moment: datetime | None) -> date | None:
    return moment.date() if moment else None


@app.command("export")
def export_(
    out: Annotated[Path, typer.Option(help="export directory")], since: Since = None, until: Until = None
) -> None:
    """Write selections, outcomes, reviews and feedback as Parquet (hive-partitioned by day); a later export
    writes only what is new. Reads PostgreSQL directly (TOOLSEL_DATABASE_URL or the running stack's)."""
    from toolsel.analytics.export import export

    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as unusable:
        fail(f"--out {out}: {unusable.strerror or unusable}", USAGE)
    written = with_database(lambda pool: export(pool, out, _day(since), _day(until)))
    console.print(rows_table(f"exported to {out}", [{"table": t, "rows": n} for t, n in written.items()]))


def _local(export_dir: Path, since: date | None, until: date | None) -> tuple[pl.DataFrame, pl.DataFrame]:
    from toolsel.analytics.load import from_export

    if not export_dir.is_dir():
        fail(f"{export_dir}: no such export directory (write one with `toolsel export --out DIR`)", USAGE)
    return from_export(export_dir, "selections", since, until), from_export(export_dir, "outcomes", since, until)


def _analytics(
    method: Request[AnalyticsQuery, R],
    measure: Callable[[pl.DataFrame, pl.DataFrame], R],
    window: tuple[datetime | None, datetime | None, Path | None],
    fmt: Format,
    show: Show[R],
) -> None:
    """Ask the service (the store), or measure an export locally with the same function the service uses."""
    since, until, export_dir = _day(window[0]), _day(window[1]), window[2]
    if export_dir is None:
        ask(method, {"since": since, "until": until}, "analytics", fmt, show)
    else:
        print_reply(measure(*_local(export_dir, since, until)), fmt, show)


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
    fmt: ObjectOutput = ObjectFormat.table,
    as_json: AsJson = False,
) -> None:
    """Selections, latency percentiles, methods, outcomes and average tokens saved."""
    window = (since, until, export_dir)
    _analytics(ToolselClient.metrics, replies.metrics_reply, window, chosen(as_json, fmt), _metrics_table)


@analytics_app.command("heatmap")
def analytics_heatmap(
    since: Since = None,
    until: Until = None,
    export_dir: ExportDir = None,
    fmt: Output = Format.table,
    as_json: AsJson = False,
) -> None:
    """How often each tool was selected on each page."""
    window = (since, until, export_dir)
    _analytics(ToolselClient.heatmap, replies.heatmap_reply, window, chosen(as_json, fmt), Rows("tool x page", "cells"))


@analytics_app.command("accuracy")
def analytics_accuracy(
    since: Since = None,
    until: Until = None,
    export_dir: ExportDir = None,
    fmt: Output = Format.table,
    as_json: AsJson = False,
) -> None:
    """Daily share of outcomes whose called tools were all among the selected."""
    window = (since, until, export_dir)
    show = Rows("retrieval accuracy", "points")
    _analytics(ToolselClient.accuracy, replies.accuracy_reply, window, chosen(as_json, fmt), show)


@app.command("report")
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

    async def from_database(pool: asyncpg.Pool) -> str:
        selections = await from_store(pool, "selections", first, last)
        return render(selections, await from_store(pool, "outcomes", first, last), await quality_from_store(pool))

    page = render(*_local(export_dir, first, last), None) if export_dir else with_database(from_database)
    out.write_text(page)
    console.print(f"report written to {out}")
