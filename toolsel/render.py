"""Readable terminal output: rich tables for replies, reports and status."""

from collections.abc import Iterable
from typing import Any

from rich.console import Console
from rich.table import Table

from contracts import HealthReply, SelectReply, SyncReport

console = Console()


EXPLAIN = ("similarity", "bm25", "relevance", "quality", "recency", "fitness", "thompson", "alpha", "beta")
"""The breakdown parts ``--explain`` shows, as ScoreBreakdown names them."""


def selection_table(reply: SelectReply, title: str, parts: tuple[str, ...] = ()) -> Table:
    """The chosen tools, with the named parts of each score (``EXPLAIN`` for all of them)."""
    table = Table(title=title, title_justify="left")
    table.add_column("#", justify="right")
    table.add_column("tool", no_wrap=True)
    table.add_column("score", justify="right")
    for part in parts:
        table.add_column(part, justify="right")
    table.add_column("note")
    for i, tool in enumerate(reply.tools, 1):
        note = "pinned" if tool.pinned else "exploration" if tool.exploration else ""
        values = [f"{getattr(tool.breakdown, part):.3g}" for part in parts]
        table.add_row(str(i), f"{tool.plugin_id}/{tool.name}", f"{tool.score:.3f}", *values, note)
    table.caption = (
        f"{reply.latency_ms:.1f} ms in the selector · method {reply.method} · context "
        f"{reply.context_key} · tokens {reply.tokens.selected} of {reply.tokens.catalog}"
        + (f" · degraded: {', '.join(reply.degraded)}" if reply.degraded else "")
    )
    return table


def sync_table(reports: Iterable[SyncReport]) -> Table:
    table = Table(title="plugin sync", title_justify="left")
    fields = ("inserted", "updated", "unchanged", "deleted", "embedded", "flagged")
    table.add_column("plugin")
    for name in fields:
        table.add_column(name, justify="right")
    table.add_column("ms", justify="right")
    for r in reports:
        table.add_row(r.plugin_id, *(str(getattr(r, name)) for name in fields), f"{r.duration_ms:.0f}")
    return table


def status_table(replies: dict[str, HealthReply | str]) -> Table:
    table = Table(title="toolsel services", title_justify="left")
    table.add_column("service")
    table.add_column("status")
    table.add_column("details")
    for service, reply in replies.items():
        if isinstance(reply, HealthReply):
            details = ", ".join(f"{k}={v}" for k, v in reply.details.items())
            table.add_row(service, f"[green]{reply.status}[/]", details)
        else:
            table.add_row(service, "[red]down[/]", reply)
    return table


def rows_table(title: str, rows: list[dict[str, Any]]) -> Table:
    """Dicts of one shape as a table: a column per key, floats to three places, None as blank."""
    table = Table(title=title, title_justify="left")
    for column in rows[0] if rows else ():
        table.add_column(column)
    for row in rows:
        table.add_row(*("" if v is None else f"{v:.3f}" if isinstance(v, float) else str(v) for v in row.values()))
    return table
