"""A kind's warnings past its budget are counted, not logged, and the count is told when its window ends."""

import asyncio
import logging

import pytest

from toolsel.log_budget import LogBudget


def test_past_the_budget_warnings_are_counted_and_the_count_told_after_the_window(
    caplog: pytest.LogCaptureFixture,
) -> None:
    now = [0.0]
    budget = LogBudget(logging.getLogger("budget-test"), lines=3, window_s=60, clock=lambda: now[0])
    with caplog.at_level(logging.WARNING, logger="budget-test"):
        for n in range(1000):
            budget.warning("dead-letter outcome", "bad event %d", n)
        budget.warning("dead-letter review", "other kind")
        now[0] = 61.0
        budget.warning("dead-letter outcome", "bad event %d", 1000)
    lines = [r.getMessage() for r in caplog.records]
    assert lines == [
        "bad event 0",
        "bad event 1",
        "bad event 2",
        "further dead-letter outcome warnings are counted, not logged, for 60 s",
        "other kind",
        "997 more dead-letter outcome warnings were not logged in 61 s",
        "bad event 1000",
    ]


async def test_the_count_is_told_when_the_window_ends_even_if_no_warning_follows(
    caplog: pytest.LogCaptureFixture,
) -> None:
    budget = LogBudget(logging.getLogger("budget-test"), lines=1, window_s=0.05)
    with caplog.at_level(logging.WARNING, logger="budget-test"):
        for n in range(5):
            budget.warning("dead-letter outcome", "bad event %d", n)
        assert len(caplog.records) == 2  # the first and the notice that further ones are counted
        await asyncio.sleep(0.2)
        told = [r.getMessage() for r in caplog.records]
        budget.warning("dead-letter outcome", "bad event %d", 5)
    assert len(told) == 3
    assert told[2].startswith("4 more dead-letter outcome warnings were not logged in ")
    lines = [r.getMessage() for r in caplog.records]
    assert lines[3] == "bad event 5"
    assert sum("not logged in" in line for line in lines) == 1  # told once: not again when the next window begins
