"""Analytics as pure polars functions over the event frames (``toolsel.analytics.schema``)."""

from typing import Any

import polars as pl

from toolsel.contracts import POSITIVE_VERDICTS, Verdict

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


def most(cells: pl.DataFrame, key: str, limit: int | None) -> pl.Series:
    """The ``limit`` values of ``key`` with the most selections in ``cells`` (None: all), most first."""
    totals = cells.group_by(key).agg(pl.col("count").sum()).sort(["count", key], descending=[True, False])
    return totals[key].head(limit if limit is not None else totals.height)


def bounded(cells: pl.DataFrame, tools: int | None, pages: int | None) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The heatmap ``cells`` of the ``tools`` most selected tools, on the ``pages`` pages most selected among them
    (None: no bound), most first; and per kept tool its selections on the other pages (columns tool, count)."""
    kept = cells.filter(pl.col("tool").is_in(most(cells, "tool", tools).implode()))
    on_top = pl.col("page").is_in(most(kept, "page", pages).implode())
    others = kept.filter(~on_top).group_by("tool").agg(pl.col("count").sum())
    shown = kept.filter(on_top).sort(["count", "tool", "page"], descending=[True, False, False])
    return shown, others.sort(["count", "tool"], descending=[True, False])


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


VERDICTS = tuple(v.value for v in Verdict)
GOOD = tuple(v.value for v in Verdict if v in POSITIVE_VERDICTS)
"""The verdicts a review's good share counts."""


def review_verdicts(reviews: pl.DataFrame) -> pl.DataFrame:
    """One row per tool verdict of the review log: occurred_at, day, tool, verdict (by time)."""
    return (
        reviews.select("occurred_at", "reviews")
        .explode("reviews")
        .drop_nulls("reviews")
        .unnest("reviews")
        .select("occurred_at", pl.col("occurred_at").dt.date().alias("day"), TOOL_KEY.alias("tool"), "verdict")
        .sort("occurred_at", "tool")
    )


def verdicts_daily(verdicts: pl.DataFrame, spike_min: int, spike_factor: float) -> pl.DataFrame:
    """Per UTC day: a count column per verdict and ``spike``: at least ``spike_min`` broken verdicts and at least
    ``spike_factor`` times the average of the days before (a quiet day in between counts as zero)."""
    if verdicts.is_empty():
        return pl.DataFrame(schema={"day": pl.Date, **dict.fromkeys(VERDICTS, pl.Int64), "spike": pl.Boolean})
    counts = verdicts.group_by("day").agg(
        (pl.col("verdict") == kind).sum().cast(pl.Int64).alias(kind) for kind in VERDICTS
    )
    span = counts.select(pl.date_range(pl.col("day").min(), pl.col("day").max()).alias("day"))
    daily = span.join(counts, on="day", how="left").fill_null(0).sort("day")
    before = (pl.col("broken").cum_sum() - pl.col("broken")) / pl.int_range(pl.len()).cast(pl.Float64)
    return daily.with_columns(
        ((pl.col("broken") >= spike_min) & (pl.col("broken") >= spike_factor * before.fill_nan(0.0))).alias("spike")
    )


def turned_tools(verdicts: pl.DataFrame, min_reviews: int, drop: float) -> pl.DataFrame:
    """Tools with at least ``min_reviews`` verdicts whose share of good ones (perfect, related) moved by at least
    ``drop`` from the earlier half of their verdicts to the later half: tool, reviews, good_before, good_after
    (the biggest move first)."""
    ranked = verdicts.with_columns(
        pl.int_range(pl.len()).over("tool").alias("at"),
        pl.len().over("tool").alias("reviews"),
        pl.col("verdict").is_in(GOOD).cast(pl.Float64).alias("good"),
    ).filter(pl.col("reviews") >= min_reviews)
    later = pl.col("at") >= pl.col("reviews") // 2
    return (
        ranked.group_by("tool")
        .agg(
            pl.col("reviews").first().cast(pl.Int64),
            pl.col("good").filter(later.not_()).mean().alias("good_before"),
            pl.col("good").filter(later).mean().alias("good_after"),
        )
        .filter((pl.col("good_after") - pl.col("good_before")).abs() >= drop)
        .sort((pl.col("good_after") - pl.col("good_before")).abs(), "tool", descending=[True, False])
    )
