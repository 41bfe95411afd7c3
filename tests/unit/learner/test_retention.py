"""The learner's pass prunes what its settings bound, and only that: a history kept for good is never touched."""

from typing import Any

import pytest

from toolsel.services.learner import retention
from toolsel.settings import Settings


@pytest.mark.parametrize(
    ("window_s", "days", "prunes"), [(0.0, 0.0, False), (86400.0, 0.0, True), (0.0, 90.0, True), (3600.0, 30.0, True)]
)
def test_a_pass_runs_when_credits_refill_or_the_history_is_bounded(window_s: float, days: float, prunes: bool) -> None:
    settings = Settings(learning_credits_window_s=window_s, history_retention_days=days)
    assert retention.prunes(settings) is prunes


async def test_a_pass_drops_the_credits_of_two_windows_and_the_history_past_its_days(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked: list[tuple[Any, ...]] = []

    async def credits(pool: object, older_than_s: float) -> int:
        asked.append(("credits", older_than_s))
        return 2

    async def history(pool: object, days: float, batch: int) -> dict[str, int]:
        asked.append(("history", days, batch))
        return {"selections": 5}

    monkeypatch.setattr(retention, "prune_credits", credits)
    monkeypatch.setattr(retention.retention, "prune_history", history)
    kept_for_good = Settings(learning_credits_window_s=3600.0, history_retention_days=0)
    assert await retention.prune(object(), kept_for_good) == {"credits": 2}  # type: ignore[arg-type]
    bounded = Settings(learning_credits_window_s=0, history_retention_days=45.0, retention_batch_rows=10)
    assert await retention.prune(object(), bounded) == {"selections": 5}  # type: ignore[arg-type]
    assert asked == [("credits", 7200.0), ("history", 45.0, 10)]
