"""Analytics as pure polars functions over the event frames (``toolsel.analytics.schema``)."""

from typing import Any

import polars as pl

TOOL_KEY = pl.concat_str([pl.col("plugin_id"), pl.col("name")], separator="/")
QUANTILES = {"latency_p50_ms": 0.5, "latency_p95_ms": 0.95, "latency_p99_ms": 0.99}


def selection_outcomes(selections: pl.DataFrame, outcomes: pl.DataFrame) -> pl.Series:
    """What followed each selection: ``failure`` if any reported call failed, else ``success`` if one worked,
    ``not_called`` when outcomes came but called nothing, ``no_outcome`` when none came."""
    calls = outcomes.select("selection_id", "calls").explode("calls").drop_nulls("calls").unnest("calls")
    verdicts = calls.group_by("selection_id").agg(
        pl.when(pl.col("success").not_().any()).then(pl.lit("failure")).otherwise(pl.lit("success")).alias("outcome")
    )
    reported = outcomes["selection_id"].unique().implode()
    joined = selections.select("selection_id").join(verdicts, on="selection_id", how="left", maintain_order="left")
    return joined.select(
        pl.coalesce(
            "outcome",
            pl.when(pl.col("selection_id").is_in(reported)).then(pl.lit("not_called")).otherwise(pl.lit("no_outcome")),
        )
    ).to_series()


def selection_metrics(selections: pl.DataFrame, outcomes: pl.DataFrame) -> dict[str, Any]:
    """Count, latency percentiles (linear interpolation), selections per method and per outcome, and the
    average tokens saved (whole visible catalog minus the returned schemas)."""
    latency = selections["latency_ms"]
    saved = (selections["tokens_catalog"] - selections["tokens_selected"]).mean()
    return {
        "selections": selections.height,
        **{name: latency.quantile(q, "linear") for name, q in QUANTILES.items()},
        "methods": dict(selections["method"].value_counts().iter_rows()),
        "outcomes": dict(selection_outcomes(selections, outcomes).value_counts().iter_rows()),
        "average_tokens_saved": saved if isinstance(saved, float) else None,
    }


def heatmap(selections: pl.DataFrame) -> pl.DataFrame:
    """How often each tool was selected on each page: columns tool, page, count (most first)."""
    tools = selections.select("page", "tools").explode("tools").drop_nulls("tools").unnest("tools")
    return (
        tools.group_by(TOOL_KEY.alias("tool"), "page")
        .agg(pl.len().cast(pl.Int64).alias("count"))
        .sort(["count", "tool", "page"], descending=[True, False, False])
    )


def accuracy_trend(selections: pl.DataFrame, outcomes: pl.DataFrame) -> pl.DataFrame:
    """Per UTC day of the outcome: outcomes that called something, those whose every called tool was among the
    selected ones (hits), and their share. Outcomes of selections outside the frame are left out."""
    selected = (
        selections.select("selection_id", "tools")
        .explode("tools")
        .drop_nulls("tools")
        .unnest("tools")
        .group_by("selection_id")
        .agg(TOOL_KEY.alias("selected"))
    )
    calls = (
        outcomes.select("event_id", "selection_id", pl.col("occurred_at").dt.date().alias("day"), "calls")
        .explode("calls")
        .drop_nulls("calls")
        .unnest("calls")
        .join(selected, on="selection_id", how="inner")
        .with_columns(TOOL_KEY.is_in(pl.col("selected")).alias("hit"))
    )
    per_outcome = calls.group_by("event_id", "day").agg(pl.col("hit").all())
    return (
        per_outcome.group_by("day")
        .agg(pl.len().cast(pl.Int64).alias("outcomes"), pl.col("hit").sum().cast(pl.Int64).alias("hits"))
        .with_columns((pl.col("hits") / pl.col("outcomes")).alias("accuracy"))
        .sort("day")
    )


def tokens_saved_daily(selections: pl.DataFrame) -> pl.DataFrame:
    """Per UTC day: selections and the average tokens of the catalog and of the returned schemas."""
    return (
        selections.group_by(pl.col("occurred_at").dt.date().alias("day"))
        .agg(
            pl.len().cast(pl.Int64).alias("selections"),
            pl.col("tokens_catalog").mean().alias("catalog"),
            pl.col("tokens_selected").mean().alias("selected"),
        )
        .with_columns((pl.col("catalog") - pl.col("selected")).alias("saved"))
        .sort("day")
    )


def unhealthy(quality: pl.DataFrame) -> pl.DataFrame:
    """Tools degraded, quarantined or otherwise not healthy for a tenant, worst rolling score first."""
    return quality.filter(pl.col("state") != "healthy").sort(["rolling_score", "tool", "tenant_id"], nulls_last=True)
