"""Watching the review log (seed 002): verdicts per day with spikes of ``broken`` ones, and the tools whose
verdicts turned, over hand-made review frames."""

from datetime import date
from typing import Any

import polars as pl

from tests.unit.analytics.frames import at
from toolsel.analytics.replies import review_reply
from toolsel.analytics.schema import SCHEMAS
from toolsel.settings import Settings


def reviewed(day: int, *verdicts: tuple[str, str], hour: int = 12) -> dict[str, Any]:
    return {
        "event_id": f"e{day}{hour}{len(verdicts)}",
        "selection_id": "s",
        "occurred_at": at(day, hour),
        "applied_at": at(day, hour),
        "none_of_these": False,
        "reviews": [{"plugin_id": "p", "name": name, "verdict": verdict} for name, verdict in verdicts],
    }


def log(*events: dict[str, Any]) -> pl.DataFrame:
    return pl.DataFrame(list(events), schema=SCHEMAS["reviews"])


def test_a_day_of_broken_verdicts_well_above_the_days_before_is_a_spike_and_quiet_days_count_as_zero() -> None:
    trend = review_reply(
        log(
            reviewed(1, ("a", "broken"), ("b", "perfect")),
            reviewed(2, ("a", "related")),
            reviewed(4, ("a", "broken"), ("b", "broken"), ("c", "broken")),
            reviewed(5, ("a", "broken"), ("b", "broken"), ("c", "broken")),
        ),
        Settings(review_spike_min=3, review_spike_factor=3.0),
    )
    assert [d.day for d in trend.days] == [date(2025, 6, n) for n in (1, 2, 3, 4, 5)]
    assert [d.verdicts["broken"] for d in trend.days] == [1, 0, 0, 3, 3]
    # day 4: 3 broken against an average of 1/3 before it; day 5: 3 against 4/4 = 1.0, so 3 >= 3 x 1.0
    assert [d.spike for d in trend.days] == [False, False, False, True, True]
    stricter = review_reply(
        log(reviewed(1, ("a", "broken")), reviewed(2, *[("a", "broken")] * 3)), Settings(review_spike_factor=4.0)
    )
    assert [d.spike for d in stricter.days] == [False, False]  # 3 is not 4 x 1


def test_a_tool_whose_later_verdicts_turned_is_listed_with_its_shares_and_a_steady_one_is_not() -> None:
    trend = review_reply(
        log(
            reviewed(1, ("a", "perfect"), ("b", "perfect")),
            reviewed(1, ("a", "related"), ("b", "related"), hour=13),
            reviewed(2, ("a", "broken"), ("b", "perfect")),
            reviewed(2, ("a", "unrelated"), ("b", "related"), hour=13),
            reviewed(3, ("c", "broken")),
        ),
        Settings(review_turn_min=4, review_turn_drop=0.5),
    )
    assert [(t.tool, t.reviews, t.good_before, t.good_after) for t in trend.turned] == [("p/a", 4, 1.0, 0.0)]


def test_an_empty_log_has_no_days_and_no_turned_tools() -> None:
    trend = review_reply(log(), Settings())
    assert (trend.days, trend.turned) == ([], [])
