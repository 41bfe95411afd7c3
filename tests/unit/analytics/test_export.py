from datetime import date, timedelta
from pathlib import Path

import polars as pl

from tests.unit.analytics.frames import OUTCOMES, SELECTIONS, at
from toolsel.analytics.export import (
    SCHEMA_DIGEST,
    STATE_FILE,
    Mark,
    State,
    current,
    exported_ids,
    next_mark,
    read_after,
    read_state,
    schema_file,
    scope_mismatch,
    upgrade_files,
    write_partitions,
    write_state,
)
from toolsel.analytics.load import from_export
from toolsel.analytics.schema import SCHEMAS

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
    marks = {"outcomes": Mark(None, at(2), "applied_at"), "feedback": Mark(date(2025, 6, 1), at(3), "applied_at")}
    write_state(tmp_path, marks, "acme")
    assert read_state(tmp_path) == State(SCHEMA_DIGEST, marks, "acme")


def test_a_mark_of_another_column_than_the_tables_arrival_is_not_followed() -> None:
    """Selections' marks followed the selector's clock: a selector a day ahead put the mark past every selection
    stored in the next day, and a mark kept from then would still skip them."""
    ahead = Mark(None, at(30), None)
    assert current(ahead, "stored_at") is None
    assert current(Mark(None, at(30), "occurred_at"), "stored_at") is None
    assert current(Mark(None, at(2), "stored_at"), "stored_at") == Mark(None, at(2), "stored_at")


def test_a_directory_takes_the_tenant_it_holds_and_no_other() -> None:
    assert scope_mismatch(State(None, {}), "acme") is None  # no state file yet
    held = {"selections": Mark(None, at(2), "stored_at")}
    assert scope_mismatch(State(SCHEMA_DIGEST, held, "acme"), "acme") is None
    assert scope_mismatch(State(SCHEMA_DIGEST, held, None), None) is None
    assert "tenant acme's rows" in str(scope_mismatch(State(SCHEMA_DIGEST, held, "acme"), "globex"))
    assert "every tenant's rows" in str(scope_mismatch(State(SCHEMA_DIGEST, {}, None), "acme"))
    assert scope_mismatch(State(None, held), None) is None  # written by a release before tenants: every tenant's


def test_a_table_without_rows_gets_a_zero_row_file_of_its_schema_the_documented_reader_reads(tmp_path: Path) -> None:
    made = schema_file(tmp_path, "outcomes", "r1")
    assert made is not None
    read = pl.read_parquet(tmp_path / "outcomes", hive_partitioning=True)
    assert (read.height, read.drop("date").schema) == (0, SCHEMAS["outcomes"])
    assert from_export(tmp_path, "outcomes").schema == SCHEMAS["outcomes"]
    write_partitions(tmp_path, "selections", SELECTIONS, "r1")
    assert schema_file(tmp_path, "selections", "r2") is None  # a table with files gets none


def test_a_state_written_before_the_schema_was_recorded_reads_as_of_an_unknown_schema(tmp_path: Path) -> None:
    (tmp_path / STATE_FILE).write_text('{"outcomes": {"since": null, "arrived": "2025-06-02T12:00:00+00:00"}}')
    assert read_state(tmp_path) == State(None, {"outcomes": Mark(None, at(2))})
    assert read_state(tmp_path / "none").schema is None


def test_read_after_uses_the_mark_unless_the_window_reaches_further_back() -> None:
    assert read_after(None, None, HOUR) is None
    assert read_after(Mark(None, at(2)), date(2025, 1, 1), HOUR) == at(2) - HOUR
    assert read_after(Mark(date(2025, 6, 1), at(2)), None, HOUR) is None
    assert read_after(Mark(date(2025, 6, 1), at(2)), date(2025, 5, 1), HOUR) is None
    assert read_after(Mark(date(2025, 6, 1), at(2)), date(2025, 6, 1), HOUR) == at(2) - HOUR


def test_next_mark_widens_the_window_and_keeps_the_latest_arrival() -> None:
    assert next_mark(None, None, None, OUTCOMES.head(0), "applied_at") is None
    first = next_mark(None, date(2025, 6, 2), None, OUTCOMES, "applied_at")
    assert first == Mark(date(2025, 6, 2), at(2, 13), "applied_at")
    later = next_mark(Mark(date(2025, 6, 2), at(5), "applied_at"), None, None, OUTCOMES, "applied_at")
    assert later == Mark(None, at(5), "applied_at")


def test_a_window_closed_by_until_leaves_the_mark_as_it_was() -> None:
    """A June export read a June outcome applied late; a mark moved to it hid the July outcomes applied before it
    from the next export."""
    assert next_mark(None, date(2025, 6, 1), date(2025, 6, 30), OUTCOMES, "applied_at") is None
    mark = Mark(None, at(1))
    assert next_mark(mark, date(2025, 6, 1), date(2025, 6, 30), OUTCOMES, "applied_at") == mark


def _as_an_earlier_release_wrote(selections: pl.DataFrame) -> pl.DataFrame:
    """Without the columns and nested fields added since: ``intent``, and ``similarity`` of each tool."""
    fields = [f.name for f in SCHEMAS["selections"]["tools"].inner.fields if f.name != "similarity"]
    tools = pl.col("tools").list.eval(pl.struct([pl.element().struct.field(f) for f in fields]))
    return selections.drop("intent").with_columns(tools)


def test_files_of_an_earlier_release_read_beside_this_ones_and_are_upgraded_in_place(tmp_path: Path) -> None:
    write_partitions(tmp_path, "selections", _as_an_earlier_release_wrote(SELECTIONS.head(2)), "old")
    write_partitions(tmp_path, "selections", SELECTIONS.tail(2), "new")
    read = from_export(tmp_path, "selections")
    assert read.schema == SCHEMAS["selections"]
    assert read.sort("selection_id")["intent"].to_list() == [None, None, *SELECTIONS.tail(2)["intent"].to_list()]
    assert upgrade_files(tmp_path) == len(list(tmp_path.glob("selections/*/*.parquet")))
    hive = pl.read_parquet(tmp_path / "selections", hive_partitioning=True)
    assert hive.drop("date").schema == SCHEMAS["selections"]
    assert sorted(hive["selection_id"]) == ["s1", "s2", "s3", "s4"]
