"""The report's heatmap shows the most selected tools on their most selected pages, the rest of a tool's pages in one
column: a history of pages that vary drew a figure as wide as their count."""

import polars as pl

from toolsel.analytics.report import OTHER_PAGES, heatmap_grid, heatmap_png
from toolsel.contracts.admin import HEATMAP_PAGES_SHOWN


def _cells(pages: int) -> pl.DataFrame:
    rows = [("p/busy", f"/inbox/{i:04d}", 1 + (i == 7)) for i in range(pages)]
    rows.append(("p/quiet", "", 5))
    return pl.DataFrame(rows, schema={"tool": pl.String, "page": pl.String, "count": pl.Int64}, orient="row")


def test_pages_past_the_bound_are_summed_in_one_column() -> None:
    grid = heatmap_grid(_cells(1500))
    pages = [c for c in grid.columns if c != "tool"]
    assert len(pages) == HEATMAP_PAGES_SHOWN + 1
    assert {"(none)", "/inbox/0007", OTHER_PAGES} <= set(pages)
    busy = grid.filter(pl.col("tool") == "p/busy").row(0, named=True)
    assert sum(busy[p] for p in pages) == 1500 + 1  # every selection of the tool is in the grid once
    assert heatmap_png(_cells(1500))  # drawn at the bounded width


def test_a_small_history_is_shown_whole() -> None:
    grid = heatmap_grid(_cells(3))
    assert sorted(c for c in grid.columns if c != "tool") == ["(none)", "/inbox/0000", "/inbox/0001", "/inbox/0002"]
