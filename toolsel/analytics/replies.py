"""The analytics metrics as the wire's reply models: the same answer from the learner (the store) and from an
export read locally."""

import json
import math
from collections.abc import Mapping, Sequence
from itertools import accumulate
from typing import Any

import polars as pl
from pydantic_core import to_json

from toolsel.analytics import metrics
from toolsel.contracts.admin import (
    HEATMAP_CELLS_MAX,
    AccuracyPoint,
    AccuracyTrend,
    HeatCell,
    Heatmap,
    ReviewTrend,
    SelectionMetrics,
    TurnedTool,
    VerdictDay,
)
from toolsel.settings import Settings

CELLS = {"tool": pl.String, "page": pl.String, "count": pl.Int64}
"""A heatmap's cells (``metrics.heatmap``)."""


def metrics_reply(selections: pl.DataFrame, outcomes: pl.DataFrame) -> SelectionMetrics:
    return SelectionMetrics(**metrics.selection_metrics(selections, outcomes))


def counted_metrics_reply(counted: Mapping[str, Any]) -> SelectionMetrics:
    """``metrics_reply`` of the numbers the database counted (``readmodels.selection_metrics``: methods and
    outcomes as JSON objects)."""
    return SelectionMetrics(
        **{**counted, "methods": json.loads(counted["methods"]), "outcomes": json.loads(counted["outcomes"])}
    )


def fitting(sizes: list[int], room: float) -> int:
    """How many of the items of these sizes, from the first, fit in ``room`` bytes together."""
    return sum(1 for total in accumulate(sizes) if total <= room)


def heatmap_reply(cells: pl.DataFrame, tools: int | None, pages: int | None, room: int | None) -> Heatmap:
    """The most selected cells within the ``tools`` and ``pages`` limits (``metrics.bounded``) and
    ``HEATMAP_CELLS_MAX``, as many as fit ``room`` bytes of JSON (None: no message to fit) after each kept tool's
    sum over the other pages, and how many more cells there were."""
    kept, other = metrics.bounded(cells, tools, pages)
    left = (math.inf if room is None else room) - len(Heatmap(cells=[], left_out=cells.height).model_dump_json())
    sums = list(other.iter_rows())
    sum_sizes = [len(to_json(dict([entry]))) - 1 for entry in sums]  # '"tool":n,' of '{"tool":n}'
    summed = fitting(sum_sizes, left)
    rows = list(kept.head(HEATMAP_CELLS_MAX).iter_rows(named=True))
    shown = fitting([len(to_json(row)) + 1 for row in rows], left - sum(sum_sizes[:summed]))
    return Heatmap(
        cells=[HeatCell(**row) for row in rows[:shown]], other_pages=dict(sums[:summed]), left_out=cells.height - shown
    )


def counted_heatmap_reply(
    cells: Sequence[Sequence[Any]], tools: int | None, pages: int | None, room: int | None
) -> Heatmap:
    """``heatmap_reply`` of the cells the database counted (tool, page, count)."""
    return heatmap_reply(pl.DataFrame([tuple(c) for c in cells], schema=CELLS, orient="row"), tools, pages, room)


def accuracy_reply(selections: pl.DataFrame, outcomes: pl.DataFrame) -> AccuracyTrend:
    trend = metrics.accuracy_trend(selections, outcomes)
    return AccuracyTrend(points=[AccuracyPoint(**row) for row in trend.iter_rows(named=True)])


def review_reply(reviews: pl.DataFrame, settings: Settings) -> ReviewTrend:
    """The review log watched: verdicts per day with spikes of ``broken``, and the tools whose reviews turned."""
    verdicts = metrics.review_verdicts(reviews)
    daily = metrics.verdicts_daily(verdicts, settings.review_spike_min, settings.review_spike_factor)
    turned = metrics.turned_tools(verdicts, settings.review_turn_min, settings.review_turn_drop)
    return ReviewTrend(
        days=[
            VerdictDay(day=row["day"], verdicts={k: row[k] for k in metrics.VERDICTS}, spike=row["spike"])
            for row in daily.iter_rows(named=True)
        ],
        turned=[TurnedTool(**row) for row in turned.iter_rows(named=True)],
    )
