"""The analytics metrics as the wire's reply models: the same answer from the indexer (the store) and from an
export read locally."""

import polars as pl

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


def metrics_reply(selections: pl.DataFrame, outcomes: pl.DataFrame) -> SelectionMetrics:
    return SelectionMetrics(**metrics.selection_metrics(selections, outcomes))


def heatmap_reply(selections: pl.DataFrame, outcomes: pl.DataFrame) -> Heatmap:
    """The most selected ``HEATMAP_CELLS_MAX`` cells, and how many more there were. (``outcomes`` unused: every
    reply is made from the same two frames.)"""
    cells = metrics.heatmap(selections)
    kept = cells.head(HEATMAP_CELLS_MAX)
    return Heatmap(cells=[HeatCell(**row) for row in kept.iter_rows(named=True)], left_out=cells.height - kept.height)


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
