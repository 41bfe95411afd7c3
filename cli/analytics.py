"""Analyst commands: ``export`` (Parquet), ``analytics`` (metrics, heatmap, accuracy from the store through
the learner, or locally from an export) and ``report`` (an HTML page)."""

from collections.abc import Callable
from datetime import date, datetime
from pathlib import Path
from typing import Annotated, Any, TypeVar, get_type_hints

import asyncpg
import polars as pl
import typer
from pydantic import BaseModel

from cli.running import USAGE, AsJson, Format, Output, chosen, fail, print_reply, request, show_rows, with_database
from contracts import subjects
from contracts.admin import AnalyticsQuery
from toolsel.analytics import replies
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

    written = with_database(lambda pool: export(pool, out, _day(since), _day(until)))
    console.print(rows_table(f"exported to {out}", [{"table": t, "rows": n} for t, n in written.items()]))


def _local(export_dir: Path, since: date | None, until: date | None) -> tuple[pl.DataFrame, pl.DataFrame]:
    from toolsel.analytics.load import from_export

    if not export_dir.is_dir():
        fail(f"{export_dir}: no such export directory (write one with `toolsel export --out DIR`)", USAGE)
    return from_export(export_dir, "selections", since, until), from_export(export_dir, "outcomes", since, until)


def _analytics(
    subject: str,
    measure: Callable[[pl.DataFrame, pl.DataFrame], R],
    window: tuple[date | None, date | None, Path | None],
    fmt: Format,
    show: Callable[[Any], None],
    rows: str | None = None,
) -> None:
    """Ask the service (the store), or measure an export locally with the same function the service uses."""
    since, until, export_dir = window
    if export_dir is None:
        query = AnalyticsQuery(since=since, until=until)
        reply_type: type[R] = get_type_hints(measure)["return"]
        request(lambda c: c.admin(subject, query, reply_type), fmt, show, rows)
    else:
        print_reply(measure(*_local(export_dir, since, until)), fmt, show, rows)


@analytics_app.command("metrics")
def analytics_metrics(since: Since = None, until: Until = None, export_dir: ExportDir = None) -> None:
    """Selections, latency percentiles, methods, outcomes and average tokens saved (JSON)."""
    window = (_day(since), _day(until), export_dir)
    _analytics(subjects.ADMIN_ANALYTICS_METRICS, replies.metrics_reply, window, Format.json, console.print)


@analytics_app.command("heatmap")
def analytics_heatmap(
    since: Since = None,
    until: Until = None,
    export_dir: ExportDir = None,
    fmt: Output = Format.table,
    as_json: AsJson = False,
) -> None:
    """How often each tool was selected on each page."""
    window = (_day(since), _day(until), export_dir)
    show = show_rows("tool x page", "cells")
    _analytics(subjects.ADMIN_ANALYTICS_HEATMAP, replies.heatmap_reply, window, chosen(as_json, fmt), show, "cells")


@analytics_app.command("accuracy")
def analytics_accuracy(
    since: Since = None,
    until: Until = None,
    export_dir: ExportDir = None,
    fmt: Output = Format.table,
    as_json: AsJson = False,
) -> None:
    """Daily share of outcomes whose called tools were all among the selected."""
    window = (_day(since), _day(until), export_dir)
    show = show_rows("retrieval accuracy", "points")
    _analytics(subjects.ADMIN_ANALYTICS_ACCURACY, replies.accuracy_reply, window, chosen(as_json, fmt), show, "points")


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
