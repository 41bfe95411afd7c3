"""Readable terminal output: rich tables for replies, reports and status, sized for where they go.

On a terminal a table fits its width, wrapping long identifiers rather than cutting them; piped (a file, ``less``,
another program) the width is unbounded, so nothing is cut or squeezed (``COLUMNS`` still wins when set). A listing
or a selection too wide for the terminal is drawn as records instead (a field per line), so that no identifier or
number is split across columns."""

import csv
import io
import json
import os
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, TextIO

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.markup import escape
from rich.table import Column, Table
from rich.text import Text

from toolsel.contracts import HealthReply, SelectReply, SyncReport

PIPED_WIDTH = 100_000
"""A piped console's width: wider than any row, so rich never wraps or cuts one."""
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
"""Control characters but tab and newline: written raw, ESC starts a terminal sequence and BEL rings."""
JSON_CONTROL = re.compile("[\x7f-\x9f]")
"""What a JSON encoder leaves raw of the control characters (it escapes those below U+0020 itself)."""


def printable(text: str) -> str:
    """``text`` with each control character written as its escape (``\\x1b``): seen, never obeyed, by a terminal
    or by the program a table or CSV is piped to."""
    return CONTROL.sub(lambda found: f"\\x{ord(found.group()):02x}", text)


def printable_json(text: str) -> str:
    """JSON text with DEL and the C1 controls escaped as ``\\u00XX`` (they occur only inside strings, so the JSON
    means the same)."""
    return JSON_CONTROL.sub(lambda found: f"\\u{ord(found.group()):04x}", text)


def console_for(stream: TextIO, *, stderr: bool = False) -> Console:
    """A console for ``stream``: the terminal's width on a terminal, unbounded when piped."""
    piped = not stream.isatty() and "COLUMNS" not in os.environ
    return Console(stderr=stderr, width=PIPED_WIDTH if piped else None)


console = console_for(sys.stdout)
errors = console_for(sys.stderr, stderr=True)
"""Where the CLI's one-line errors and warnings go, apart from the output a pipe carries."""


class PrintableTable(Table):
    """A table whose text cells have their control characters escaped (``printable``)."""

    def add_row(self, *renderables: Any, **options: Any) -> None:
        super().add_row(*(_printable_cell(r) for r in renderables), **options)


def _printable_cell(renderable: Any) -> Any:
    if isinstance(renderable, str):
        return printable(renderable)
    if isinstance(renderable, Text) and CONTROL.search(renderable.plain):
        return Text(printable(renderable.plain), style=renderable.style)
    return renderable


def new_table(title: str, *columns: str | Column, **options: Any) -> Table:
    """A table whose cells wrap (``fold``) rather than end in "…": an identifier is never cut, and a control
    character is shown escaped. The title is plain text (a query or a page in it is not read as rich markup)."""
    folded = [Column(c) if isinstance(c, str) else c for c in columns]
    for column in folded:
        column.overflow = "fold"
    return PrintableTable(*folded, title=escape(printable(title)), title_justify="left", **options)


CELL_FRAME = 3
"""Characters a rich table adds per column: the border or separator before it and a space either side (one more
closes the row)."""


def natural_width(header: Sequence[str], rows: Sequence[Sequence[str]]) -> int:
    """The width of a table of these cells with no cell wrapped."""
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(header)]
    return sum(widths) + CELL_FRAME * len(widths) + 1


class Fitted:
    """A table where it fits the width it is drawn in; where it does not, the same content as records (one
    block per row, a field per line), so a narrow terminal splits no identifier or number across columns."""

    def __init__(self, table: Table, width: int, records: RenderableType):
        self.table, self.width, self.records = table, width, records

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield self.table if self.width <= options.max_width else self.records


def records(title: str, header: Sequence[str], rows: Sequence[Sequence[str]]) -> Group:
    """Each row as a block of ``field  value`` lines under the title; an empty listing names its fields."""
    if not rows:
        return Group(Text(title, style="italic"), Text(f"none (fields: {', '.join(header)})"))
    label = max(len(h) for h in header)
    blocks: list[RenderableType] = [Text(title, style="italic")]
    for row in rows:
        blocks += [Text(f"{h:<{label}}  {v}", overflow="fold") for h, v in zip(header, row, strict=True)]
        blocks.append(Text(""))
    return Group(*blocks)


def clipped(text: str, width: int) -> str:
    """``text`` cut to ``width`` with "…" on a terminal, where a long value would fill screens; whole when piped,
    where a program may look for it."""
    return text if len(text) <= width or console.width >= PIPED_WIDTH else text[: width - 1] + "…"


EXPLAIN = ("similarity", "bm25", "relevance", "quality", "recency", "fitness", "thompson", "alpha", "beta")
"""The breakdown parts ``--explain`` shows, as ScoreBreakdown names them."""


def selection_view(reply: SelectReply, title: str, parts: tuple[str, ...] = (), k: int | str | None = None) -> Group:
    """The chosen tools, with the named parts of each score (``EXPLAIN`` for all of them), then one line about the
    selection: how many tools (given the ``k`` asked for, how many pinned ones came on top of it), the time, the
    method, the context and the tokens. The line is not a caption, which rich squeezes to the table's width. Too
    wide for the terminal, each tool is a record: its rank, name and note, then its scores."""
    header = ["#", "tool", "score", *parts, "note"]
    rows = []
    for i, tool in enumerate(reply.tools, 1):
        note = tool.reason or ("pinned" if tool.pinned else "exploration" if tool.exploration else "")
        values = [f"{getattr(tool.breakdown, part):.3g}" for part in parts]
        rows.append([str(i), f"{tool.plugin_id}/{tool.name}", f"{tool.score:.3f}", *values, note])
    table = new_table(title, *(Column(h, justify="left" if h in ("tool", "note") else "right") for h in header))
    for row in rows:
        table.add_row(*row)
    stacked: list[RenderableType] = [Text(title, style="italic")]
    for row in rows:
        scores = "  ".join(f"{h}={v}" for h, v in zip(header[2:-1], row[2:-1], strict=True))
        stacked += [Text(f"{row[0]:>2}. {row[1]}  {row[-1]}".rstrip(), overflow="fold"), Text(f"    {scores}")]
    fitted = Fitted(table, natural_width(header, rows), Group(*stacked))
    return Group(fitted, Text(selection_summary(reply, k), style="dim"))


def selection_summary(reply: SelectReply, k: int | str | None = None) -> str:
    count = len(reply.tools)
    pinned = sum(t.pinned for t in reply.tools)
    return (
        f"{count} tool{'' if count == 1 else 's'}"
        + (f": {pinned} pinned on top of the k={k} asked for" if k and pinned else "")
        + f" · {reply.latency_ms:.1f} ms in the selector · method {reply.method} · context {reply.context_key}"
        + f" · tokens {reply.tokens.selected} of {reply.tokens.catalog}"
        + (f" · over the token budget: {', '.join(reply.over_budget)}" if reply.over_budget else "")
        + (f" · degraded: {', '.join(reply.degraded)}" if reply.degraded else "")
    )


def sync_table(reports: Iterable[SyncReport]) -> Table:
    fields = ("inserted", "updated", "unchanged", "deleted", "embedded", "flagged")
    table = new_table(
        "plugin sync", "plugin", *(Column(name, justify="right") for name in fields), Column("ms", justify="right")
    )
    for r in reports:
        table.add_row(r.plugin_id, *(str(getattr(r, name)) for name in fields), f"{r.duration_ms:.0f}")
    return table


def status_table(replies: Mapping[str, HealthReply | str]) -> Table:
    table = new_table("toolsel services", "service", "status", "details")
    for service, reply in replies.items():
        if isinstance(reply, HealthReply):
            details = ", ".join(f"{k}={v}" for k, v in reply.details.items())
            table.add_row(service, f"[green]{reply.status}[/]", details)
        else:
            table.add_row(service, "[red]down[/]", reply)
    return table


def cell(value: Any) -> str:
    """A value as one table or CSV cell: floats to three places, times to the second, None blank, lists and dicts
    as JSON, control characters escaped (``printable``)."""
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.3f}"
    if isinstance(value, datetime):
        return f"{value:%Y-%m-%d %H:%M:%S}"
    if isinstance(value, list | dict):
        return printable(json.dumps(value, default=str, ensure_ascii=False))
    return printable(str(value))


def rows_table(title: str, rows: list[dict[str, Any]], columns: Sequence[str] = ()) -> Fitted:
    """Dicts of one shape as a table: a column per key (``columns`` name them when there are no rows). Cells are
    plain text: a value that looks like rich markup is shown as it is."""
    header = list(rows[0] if rows else columns)
    cells = [[cell(v) for v in row.values()] for row in rows]
    table = new_table(title, *header)
    for row in cells:
        table.add_row(*(Text(c) for c in row))
    return Fitted(table, natural_width(header, cells), records(title, header, cells))


def rows_csv(rows: list[dict[str, Any]], columns: Sequence[str] = ()) -> str:
    """Dicts of one shape as CSV with a header (``columns`` when there are no rows; floats in full, lists and
    dicts as JSON)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    header = list(rows[0] if rows else columns)
    if header:
        writer.writerow(header)
    for row in rows:
        writer.writerow(repr(v) if isinstance(v, float) else cell(v) for v in row.values())
    return out.getvalue()
