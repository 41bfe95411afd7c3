from datetime import date, timedelta
from pathlib import Path

import polars as pl

from tests.unit.analytics.frames import OUTCOMES, SELECTIONS, at
from toolsel.analytics.export import (
    Mark,
    exported_ids,
    next_mark,
    read_after,
    read_state,
    write_partitions,
    write_state,
)
from toolsel.analytics.load import from_export

HOUR = timedelta(hours=1)


def test_partitions_by_day_read_back_by_polars(tmp_path: Path) -> None:
    written = write_partitions(tmp_path, "selections", SELECTIONS, "r1")
    assert [p.relative_to(tmp_path).as_posix() for p in written] == [
        "selections/date=2025-06-01/part-r1.parquet",
        "selections/date=2025-06-02/part-r1.parquet",
    ]
    hive = pl.read_parquet(tmp_path / "selections", hive_partitioning=True)
    assert sorted(hive["selection_id"]) == ["s1", "s2", "s3", "s4"]
    assert from_export(tmp_path, "selections", since=date(2025, 6, 2))["selection_id"].to_list() == ["s3", "s4"]
    assert exported_ids(tmp_path, "selections", [date(2025, 6, 1)]) == {"s1", "s2"}
    assert from_export(tmp_path, "outcomes").is_empty()


def test_state_round_trip(tmp_path: Path) -> None:
    state = {"outcomes": Mark(None, at(2)), "feedback": Mark(date(2025, 6, 1), at(3))}
    write_state(tmp_path, state)
    assert read_state(tmp_path) == state


def test_read_after_uses_the_mark_unless_the_window_reaches_further_back() -> None:
    assert read_after(None, None, HOUR) is None
    assert read_after(Mark(None, at(2)), date(2025, 1, 1), HOUR) == at(2) - HOUR
    assert read_after(Mark(date(2025, 6, 1), at(2)), None, HOUR) is None
    assert read_after(Mark(date(2025, 6, 1), at(2)), date(2025, 5, 1), HOUR) is None
    assert read_after(Mark(date(2025, 6, 1), at(2)), date(2025, 6, 1), HOUR) == at(2) - HOUR


def test_next_mark_widens_the_window_and_keeps_the_latest_arrival() -> None:
    assert next_mark(None, None, OUTCOMES.head(0), "applied_at") is None
    assert next_mark(None, date(2025, 6, 2), OUTCOMES, "applied_at") == Mark(date(2025, 6, 2), at(2, 13))
    assert next_mark(Mark(date(2025, 6, 2), at(5)), None, OUTCOMES, "applied_at") == Mark(None, at(5))
