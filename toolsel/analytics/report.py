"""``toolsel report``: one self-contained HTML page (PNG charts embedded as base64) for operators."""

import base64
import html
import io
from datetime import UTC, datetime

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import polars as pl
from matplotlib.figure import Figure

from toolsel.analytics import metrics
from toolsel.contracts.admin import HEATMAP_PAGES_SHOWN, HEATMAP_TOOLS_SHOWN

OTHER_PAGES = "(other pages)"


def png(figure: Figure) -> str:
    """The figure as a base64 PNG (and closed)."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100, bbox_inches="tight")
    plt.close(figure)
    return base64.b64encode(buffer.getvalue()).decode()


def heatmap_grid(cells: pl.DataFrame) -> pl.DataFrame:
    """The heatmap's cells (tool, page, count) as a grid, a column a page: the most selected tools on their most
    selected pages, and their selections on any other page in one column."""
    shown, others = metrics.bounded(cells, HEATMAP_TOOLS_SHOWN, HEATMAP_PAGES_SHOWN)
    columns = shown.with_columns(pl.col("page").replace("", "(none)"))
    if others.height:
        columns = pl.concat([columns, others.select("tool", pl.lit(OTHER_PAGES).alias("page"), "count")])
    return columns.pivot(on="page", index="tool", values="count").fill_null(0).sort("tool")


def heatmap_png(cells: pl.DataFrame) -> str:
    """Tool x page selection counts as a colour grid (``heatmap_grid``)."""
    grid = heatmap_grid(cells)
    pages = [c for c in grid.columns if c != "tool"]
    figure, axes = plt.subplots(figsize=(max(4.0, 1.2 * len(pages) + 3), max(2.5, 0.35 * grid.height + 1.5)))
    if grid.height:
        image = axes.imshow(grid.select(pages).to_numpy(), cmap="viridis", aspect="auto")
        figure.colorbar(image, ax=axes, label="selections")
    axes.set_xticks(range(len(pages)), [page[:40] for page in pages], rotation=30, ha="right")
    axes.set_yticks(range(grid.height), grid["tool"].to_list())
    axes.set_title("Tool x page: how often each tool was selected")
    return png(figure)


def accuracy_png(trend: pl.DataFrame) -> str:
    figure, axes = plt.subplots(figsize=(7, 3))
    axes.plot(trend["day"].to_list(), trend["accuracy"].to_list(), marker="o")
    axes.set_ylim(0, 1.05)
    axes.set_ylabel("called tools among the selected")
    axes.set_title("Daily retrieval accuracy")
    figure.autofmt_xdate()
    return png(figure)


def tokens_png(daily: pl.DataFrame) -> str:
    figure, axes = plt.subplots(figsize=(7, 3))
    days = daily["day"].to_list()
    axes.bar(days, daily["catalog"].to_list(), label="whole visible catalog", color="#bbbbbb")
    axes.bar(days, daily["selected"].to_list(), label="returned schemas", color="#1f77b4")
    axes.set_ylabel("tokens per selection (average)")
    axes.set_title("Token savings")
    axes.legend()
    figure.autofmt_xdate()
    return png(figure)


def table_html(df: pl.DataFrame) -> str:
    """A frame as an HTML table (floats to three decimals)."""
    head = "".join(f"<th>{html.escape(c)}</th>" for c in df.columns)
    rows = []
    for row in df.iter_rows():
        cells = (f"{v:.3f}" if isinstance(v, float) else "" if v is None else str(v) for v in row)
        rows.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>")
    return f"<table><tr>{head}</tr>{''.join(rows)}</table>"


def render(
    selections: pl.DataFrame, outcomes: pl.DataFrame, quality: pl.DataFrame | None, tenant: str | None = None
) -> str:
    """The report page: key numbers, the heatmap, the accuracy trend, token savings and the quality table; of
    ``tenant``'s rows, which the heading says (None: every tenant's)."""
    summary = metrics.selection_metrics(selections, outcomes)
    figures = {
        "heatmap": heatmap_png(metrics.heatmap(selections)),
        "accuracy": accuracy_png(metrics.accuracy_trend(selections, outcomes)),
        "tokens": tokens_png(metrics.tokens_saved_daily(selections)),
    }
    images = "".join(
        f'<h2>{name}</h2><img alt="{name}" src="data:image/png;base64,{b64}">' for name, b64 in figures.items()
    )
    numbers = pl.DataFrame(
        {
            "measure": list(summary),
            "value": [str(v) if not isinstance(v, float) else f"{v:.2f}" for v in summary.values()],
        }
    )
    quality_part = (
        "<h2>tool quality</h2>" + table_html(quality) + "<h2>not healthy</h2>" + table_html(metrics.unhealthy(quality))
        if quality is not None
        else "<p>Tool quality needs the store (not part of an export).</p>"
    )
    scope = "every tenant" if tenant is None else f"tenant {html.escape(tenant)}"
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>toolsel report</title>
<style>body{{font-family:sans-serif;margin:2em}} table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:2px 8px;text-align:left}} img{{max-width:100%;display:block}}</style></head>
<body><h1>toolsel report</h1><p>{scope}; generated {datetime.now(UTC):%Y-%m-%d %H:%M} UTC</p>
{table_html(numbers)}{images}{quality_part}</body></html>
"""
