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

from toolsel.analytics.load import conformed, snapshot
from toolsel.analytics.schema import ID_COLUMN, SCHEMAS, empty
from toolsel.store.readmodels import ARRIVAL, EVENT_TABLES

STATE_FILE = "_toolsel_export.json"
SCHEMA_DIGEST = hashlib.sha256(
    repr(sorted((table, str(schema)) for table, schema in SCHEMAS.items())).encode()
).hexdigest()
"""The export's tables as this release writes them: a directory written by a release of other tables is brought
to these before anything is added, so that a reader of the whole directory (polars, DuckDB) sees one schema."""


class ScopeMismatch(ValueError):
    """An export asked for another tenant than the directory holds: the marks of one tenant's rows say nothing of
    another's, so the directory would miss rows for good."""


@dataclass(frozen=True)
class Mark:
    """How far one table was exported: from which day (None: the beginning), the latest arrival seen, and the
    column that arrival is (None: a release that did not say)."""

    since: date | None
    arrived: datetime
    follows: str | None = None


@dataclass(frozen=True)
class State:
    """What the directory holds: the schema its files were written in (None: a release that did not say), each
    table's mark, and the tenant whose rows it holds (None: every tenant's)."""

    schema: str | None
    marks: dict[str, Mark]
    tenant: str | None = None


def read_state(directory: Path) -> State:
    path = directory / STATE_FILE
    if not path.exists():
        return State(None, {})
    raw = json.loads(path.read_text())
    schema, tables = (raw["schema"], raw["tables"]) if "tables" in raw else (None, raw)
    marks = {
        table: Mark(
            date.fromisoformat(m["since"]) if m["since"] else None,
            datetime.fromisoformat(m["arrived"]),
            m.get("follows"),
        )
        for table, m in tables.items()
    }
    return State(schema, marks, raw.get("tenant"))


def write_state(directory: Path, marks: dict[str, Mark], tenant: str | None = None) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    tables = {
        t: {"since": m.since.isoformat() if m.since else None, "arrived": m.arrived.isoformat(), "follows": m.follows}
        for t, m in marks.items()
    }
    raw = {"schema": SCHEMA_DIGEST, "tables": tables, "tenant": tenant}
    (directory / STATE_FILE).write_text(json.dumps(raw, indent=2, sort_keys=True))


def scope_mismatch(state: State, tenant: str | None) -> str | None:
    """Why a directory holding ``state`` cannot take an export of ``tenant``'s rows (None: it can, a directory
    without a state file among them)."""
    if (state.schema is None and not state.marks) or state.tenant == tenant:
        return None
    held = f"tenant {state.tenant}'s rows" if state.tenant else "every tenant's rows"
    return f"the directory holds {held}: export {'every tenant' if tenant is None else tenant} to another directory"


def current(mark: Mark | None, arrival: str) -> Mark | None:
    """``mark`` if it follows ``arrival``; else None, so the table is read whole once (the ids already written
    decide): a mark of another column (the selector's clock, before ``stored_at``) may lie ahead of every row to
    come."""
    return mark if mark is not None and mark.follows == arrival else None


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
        return Mark(since, latest, arrival) if isinstance(latest, datetime) else None
    covered = None if since is None or mark.since is None else min(since, mark.since)
    arrived = max(mark.arrived, latest) if isinstance(latest, datetime) else mark.arrived
    return Mark(covered, arrived, arrival)


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


def schema_file(directory: Path, table: str, run: str) -> Path | None:
    """A zero-row file of the table's schema when the table has no file yet, so that a reader of the directory
    (``pl.read_parquet(DIR/<table>)``) finds the table, and its columns, before its first row."""
    if any((directory / table).glob("date=*/*.parquet")):
        return None
    part = directory / table / f"date={datetime.now(UTC).date().isoformat()}" / f"part-{run}.parquet"
    part.parent.mkdir(parents=True, exist_ok=True)
    empty(table).write_parquet(part)
    return part


async def export(
    pool: asyncpg.Pool,
    directory: Path,
    since: date | None = None,
    until: date | None = None,
    overlap_s: float = 3600.0,
    tenant: str | None = None,
) -> dict[str, int]:
    """Write every table's new rows in the window (of ``tenant``; None: every tenant's), all read as of one
    moment; returns the rows written per table."""
    state = read_state(directory)
    refused = scope_mismatch(state, tenant)
    if refused is not None:
        raise ScopeMismatch(refused)
    if state.schema != SCHEMA_DIGEST:
        upgrade_files(directory)
    marks = {table: current(state.marks.get(table), ARRIVAL[table]) for table in EVENT_TABLES}
    overlap = timedelta(seconds=overlap_s)
    read = await snapshot(pool, since, until, {t: read_after(m, since, overlap) for t, m in marks.items()}, tenant)
    run = f"{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{uuid4().hex[:8]}"
    written = {}
    for table, rows in read.items():
        new = rows.filter(~pl.col(ID_COLUMN[table]).is_in(list(exported_ids(directory, table, days(rows)))))
        write_partitions(directory, table, new, run)
        schema_file(directory, table, run)
        written[table] = new.height
        marks[table] = next_mark(marks[table], since, until, rows, ARRIVAL[table])
    write_state(directory, {table: mark for table, mark in marks.items() if mark is not None}, tenant)
    return written
