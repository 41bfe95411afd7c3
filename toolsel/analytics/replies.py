"""The analytics metrics as the wire's reply models: the same answer from the indexer (the store) and from an
export read locally."""

import polars as pl

from toolsel.analytics import metrics
from toolsel.contracts.admin import AccuracyPoint, AccuracyTrend, HeatCell, Heatmap, SelectionMetrics


def metrics_reply(selections: pl.DataFrame, outcomes: pl.DataFrame) -> SelectionMetrics:
    return SelectionMetrics(**metrics.selection_metrics(selections, outcomes))


def heatmap_reply(selections: pl.DataFrame, outcomes: pl.DataFrame) -> Heatmap:
    """(``outcomes`` unused: every reply is made from the same two frames.)"""
    return Heatmap(cells=[HeatCell(**row) for row in metrics.heatmap(selections).iter_rows(named=True)])


def accuracy_reply(selections: pl.DataFrame, outcomes: pl.DataFrame) -> AccuracyTrend:
    trend = metrics.accuracy_trend(selections, outcomes)
    return AccuracyTrend(points=[AccuracyPoint(**row) for row in trend.iter_rows(named=True)])
