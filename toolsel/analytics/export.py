"""Incremental Parquet export of the event history: ``DIR/<table>/date=YYYY-MM-DD/part-<run>.parquet`` (hive
style, one partition per UTC day of ``occurred_at``), with a small state file so a later export writes only what
is new."""

import hashlib
import json
import os
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from uuid import uuid4

import asyncpg
import polars as pl

from toolsel.analytics.load import conformed, from_store
from toolsel.analytics.schema import ID_COLUMN, SCHEMAS
from toolsel.store.readmodels import ARRIVAL, EVENT_TABLES

STATE_FILE = "_toolsel_export.json"
SCHEMA_DIGEST = hashlib.sha256(
    repr(sorted((table, str(schema)) for table, schema in SCHEMAS.items())).encode()
).hexdigest()
"""The export's tables as this release writes them: a directory written by a release of other tables is brought
to these before anything is added, so that a reader of the whole directory (polars, DuckDB) sees one schema."""


@dataclass(frozen=True)
class Mark:
    """How far one table was exported: from which day (None: the beginning) and the latest arrival seen."""

    since: date | None
    arrived: datetime


@dataclass(frozen=True)
class State:
    """What the directory holds: the schema its files were written in (None: a release that did not say) and each
    table's mark."""

    schema: str | None
    marks: dict[str, Mark]


def read_state(directory: Path) -> State:
    path = directory / STATE_FILE
    if not path.exists():
        return State(None, {})
    raw = json.loads(path.read_text())
    schema, tables = (raw["schema"], raw["tables"]) if "tables" in raw else (None, raw)
    marks = {
        table: Mark(date.fromisoformat(m["since"]) if m["since"] else None, datetime.fromisoformat(m["arrived"]))
        for table, m in tables.items()
    }
    return State(schema, marks)


def write_state(directory: Path, marks: dict[str, Mark]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    tables = {
        t: {"since": m.since.isoformat() if m.since else None, "arrived": m.arrived.isoformat()}
        for t, m in marks.items()
    }
    raw = {"schema": SCHEMA_DIGEST, "tables": tables}
    (directory / STATE_FILE).write_text(json.dumps(raw, indent=2, sort_keys=True))


def upgrade_files(directory: Path) -> int:
    """Rewrite every file of the export in this release's schema (each replaced whole, or left as it was);
    returns the files rewritten."""
    rewritten = 0
    for table in EVENT_TABLES:
        for path in sorted((directory / table).glob("date=*/*.parquet")):
            staged = path.with_name(f".{path.name}.upgrading")
            conformed(pl.read_parquet(path), table).write_parquet(staged)
            os.replace(staged, path)
            rewritten += 1
    return rewritten


def read_after(mark: Mark | None, since: date | None, overlap: timedelta) -> datetime | None:
    """Rows arrived after this are new, unless the window reaches back before what was exported (then all are
    read and the ids already written decide). The overlap catches rows committed out of arrival order."""
    if mark is None or (mark.since is not None and (since is None or since < mark.since)):
        return None
    return mark.arrived - overlap


def next_mark(
    mark: Mark | None, since: date | None, until: date | None, rows: pl.DataFrame, arrival: str
) -> Mark | None:
    """The mark after exporting ``rows``. A window closed by ``until`` leaves it as it was: the rows of later days
    were not read, so what arrived before the newest row read is not all exported."""
    if until is not None:
        return mark
    latest = rows[arrival].max() if rows.height else None
    if mark is None:
        return Mark(since, latest) if isinstance(latest, datetime) else None
    covered = None if since is None or mark.since is None else min(since, mark.since)
    arrived = max(mark.arrived, latest) if isinstance(latest, datetime) else mark.arrived
    return Mark(covered, arrived)


def days(df: pl.DataFrame) -> list[date]:
    return sorted(df["occurred_at"].dt.date().unique().to_list())


def exported_ids(directory: Path, table: str, on: list[date]) -> set[str]:
    """The event ids already written in the partitions of these days."""
    files = [f for day in on for f in (directory / table / f"date={day.isoformat()}").glob("*.parquet")]
    return (
        set(pl.concat([pl.read_parquet(f, columns=[ID_COLUMN[table]]) for f in files])[ID_COLUMN[table]])
        if files
        else set()
    )


def write_partitions(directory: Path, table: str, df: pl.DataFrame, run: str) -> list[Path]:
    """One file per day of ``occurred_at`` under ``table/date=YYYY-MM-DD/``."""
    written = []
    for day in days(df):
        part = directory / table / f"date={day.isoformat()}" / f"part-{run}.parquet"
        part.parent.mkdir(parents=True, exist_ok=True)
        df.filter(pl.col("occurred_at").dt.date() == day).write_parquet(part)
        written.append(part)
    return written


async def export(
    pool: asyncpg.Pool, directory: Path, since: date | None = None, until: date | None = None, overlap_s: float = 3600.0
) -> dict[str, int]:
    """Write every table's new rows in the window; returns the rows written per table."""
    state = read_state(directory)
    if state.schema != SCHEMA_DIGEST:
        upgrade_files(directory)
    marks = dict(state.marks)
    run = f"{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{uuid4().hex[:8]}"
    written = {}
    for table in EVENT_TABLES:
        mark = marks.get(table)
        rows = await from_store(pool, table, since, until, read_after(mark, since, timedelta(seconds=overlap_s)))
        new = rows.filter(~pl.col(ID_COLUMN[table]).is_in(list(exported_ids(directory, table, days(rows)))))
        write_partitions(directory, table, new, run)
        written[table] = new.height
        updated = next_mark(mark, since, until, rows, ARRIVAL[table])
        if updated is not None:
            marks[table] = updated
    write_state(directory, marks)
    return written
