from datetime import date

import polars as pl
import pytest

from tests.unit.analytics.frames import OUTCOMES, SELECTIONS, frame, selection
from toolsel.analytics import metrics, replies
from toolsel.contracts.admin import HEATMAP_CELLS_MAX
from toolsel.messaging import room


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
    reply = replies.heatmap_reply(metrics.heatmap(frame("selections", rows)), None, None, None)
    assert len(reply.cells) == HEATMAP_CELLS_MAX
    assert reply.cells[0].model_dump() == {"tool": "m/send", "page": "/mail", "count": 2}
    assert reply.left_out == 9


def _cells(n: int, page_chars: int) -> pl.DataFrame:
    """``n`` cells of one tool on distinct pages of ``page_chars`` characters (é: two bytes each), fewer
    selections on each later page."""
    pages = [f"/p{i:05d}?" + "é" * (page_chars - 8) for i in range(n)]
    return pl.DataFrame({"tool": ["m/send"] * n, "page": pages, "count": list(range(n, 0, -1))}, schema=replies.CELLS)


def test_a_heatmap_reply_fits_one_message_keeping_the_heaviest_cells_and_saying_how_many_were_left_out() -> None:
    """4,500 cells on distinct 250-character pages (the audit's 1,500 selections) came to more than NATS's 1 MB:
    the heatmap failed for good, ``too large, ask for less``, with nothing in the request to lower."""
    cells = _cells(4500, 250)
    fits = room(None)
    reply = replies.heatmap_reply(cells, None, None, fits)
    assert len(reply.model_dump_json().encode()) <= fits
    assert 0 < len(reply.cells) < 4500
    assert reply.left_out == 4500 - len(reply.cells)
    assert [c.count for c in reply.cells] == list(range(4500, 4500 - len(reply.cells), -1))  # the heaviest
    small = replies.heatmap_reply(cells, None, None, 20_000)
    assert (
        len(small.model_dump_json().encode())
        <= 20_000
        < len(replies.heatmap_reply(cells.head(len(small.cells) + 1), None, None, None).model_dump_json().encode())
    )  # as many as fit


def test_a_heatmap_bounded_to_tools_and_pages_sums_each_tools_other_pages() -> None:
    cells = pl.DataFrame(
        {
            "tool": ["a/x", "a/x", "a/x", "b/y", "b/y", "c/z"],
            "page": ["/1", "/2", "/3", "/1", "/3", "/9"],
            "count": [5, 4, 1, 3, 2, 1],
        },
        schema=replies.CELLS,
    )
    reply = replies.heatmap_reply(cells, 2, 2, None)
    assert [(c.tool, c.page, c.count) for c in reply.cells] == [("a/x", "/1", 5), ("a/x", "/2", 4), ("b/y", "/1", 3)]
    assert reply.other_pages == {"a/x": 1, "b/y": 2}  # /3 is past the two pages most selected with a/x and b/y
    assert reply.left_out == 3
    assert replies.heatmap_reply(cells, None, None, None).other_pages == {}


def test_each_tools_sum_over_the_other_pages_comes_before_the_cells() -> None:
    """A tool selected only on pages past the limit is still a row of the dashboard's heatmap, all of it in its
    "other pages" column."""
    lone = pl.DataFrame({"tool": ["b/y"], "page": ["/x"], "count": [1]}, schema=replies.CELLS)
    both = replies.heatmap_reply(pl.concat([_cells(3, 100), lone]), None, 3, None)
    assert (both.other_pages, len(both.cells)) == ({"b/y": 1}, 3)
    cut = replies.heatmap_reply(pl.concat([_cells(3, 100), lone]), None, 3, len(both.model_dump_json().encode()) - 1)
    assert (cut.other_pages, len(cut.cells), cut.left_out) == ({"b/y": 1}, 2, 2)


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
