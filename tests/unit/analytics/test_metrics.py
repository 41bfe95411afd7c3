from datetime import date

import polars as pl
import pytest

from tests.unit.analytics.frames import OUTCOMES, SELECTIONS, frame, selection
from toolsel.analytics import metrics, replies
from toolsel.contracts.admin import HEATMAP_CELLS_MAX


def test_selection_metrics_by_hand() -> None:
    result = metrics.selection_metrics(SELECTIONS, OUTCOMES)
    assert result["selections"] == 4
    # latencies 10, 20, 30, 40: linear quantiles at positions 1.5, 2.85 and 2.97 of 0..3
    assert result["latency_p50_ms"] == pytest.approx(25.0)
    assert result["latency_p95_ms"] == pytest.approx(38.5)
    assert result["latency_p99_ms"] == pytest.approx(39.7)
    assert result["methods"] == {"hybrid": 3, "bm25": 1}
    assert result["outcomes"] == {"success": 2, "failure": 1, "not_called": 1}
    assert result["average_tokens_saved"] == pytest.approx((900 + 500 + 100 + 0) / 4)


def test_selection_without_an_outcome_counts_as_no_outcome() -> None:
    result = metrics.selection_metrics(SELECTIONS, OUTCOMES.filter(pl.col("event_id") != "o4"))
    assert result["outcomes"]["no_outcome"] == 1


def test_metrics_of_nothing_are_empty_not_errors() -> None:
    result = metrics.selection_metrics(frame("selections", []), frame("outcomes", []))
    assert result == {
        "selections": 0,
        "latency_p50_ms": None,
        "latency_p95_ms": None,
        "latency_p99_ms": None,
        "methods": {},
        "outcomes": {},
        "average_tokens_saved": None,
    }


def test_heatmap_counts_tool_and_page() -> None:
    cells = metrics.heatmap(SELECTIONS).to_dicts()
    assert cells == [
        {"tool": "m/send", "page": "/mail", "count": 2},
        {"tool": "m/read", "page": "/mail", "count": 1},
        {"tool": "m/send", "page": "/travel", "count": 1},
        {"tool": "t/fly", "page": "/travel", "count": 1},
    ]


def test_a_heatmap_reply_keeps_the_most_selected_cells_and_counts_the_rest() -> None:
    """Pages are the requests' own words: a flood of distinct ones made a reply too large for one message."""
    rows = [selection("s0", 1, "/mail", "hybrid", 1.0, ["m/send", "m/send"], 0)]
    rows += [selection(f"s{i}", 1, f"/flood/{i}", "hybrid", 1.0, ["t/fly"], 0) for i in range(1, HEATMAP_CELLS_MAX + 9)]
    reply = replies.heatmap_reply(frame("selections", rows), frame("outcomes", []))
    assert len(reply.cells) == HEATMAP_CELLS_MAX
    assert reply.cells[0].model_dump() == {"tool": "m/send", "page": "/mail", "count": 2}
    assert reply.left_out == 9


def test_accuracy_trend_is_the_daily_share_of_outcomes_whose_calls_were_selected() -> None:
    trend = metrics.accuracy_trend(SELECTIONS, OUTCOMES).to_dicts()
    assert trend == [
        {"day": date(2025, 6, 1), "outcomes": 2, "hits": 1, "accuracy": 0.5},
        {"day": date(2025, 6, 2), "outcomes": 1, "hits": 1, "accuracy": 1.0},
    ]


def test_tokens_saved_daily() -> None:
    daily = metrics.tokens_saved_daily(SELECTIONS).to_dicts()
    assert [(d["day"].day, d["selections"], d["saved"]) for d in daily] == [(1, 2, 700.0), (2, 2, 50.0)]


def test_unhealthy_lists_every_state_but_healthy_worst_first() -> None:
    quality = pl.DataFrame(
        {
            "tool": ["a/x", "a/y", "a/z", "a/w", "a/z"],
            "tenant_id": ["t", "t", "t", "t", "u"],
            "state": ["healthy", "degraded", "quarantined", "warning", "healthy"],
            "rolling_score": [0.9, 0.2, 0.1, None, 0.95],
        }
    )
    unhealthy = metrics.unhealthy(quality)
    assert unhealthy.select("tool", "tenant_id").rows() == [("a/z", "t"), ("a/y", "t"), ("a/w", "t")]
