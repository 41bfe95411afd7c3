"""The event tables as polars frames, read from the store (asyncpg) or from an export directory."""

import json
from collections.abc import Mapping, Sequence
from datetime import date, datetime
from pathlib import Path
from typing import Any

import asyncpg
import polars as pl

from toolsel.analytics.schema import SCHEMAS, empty
from toolsel.store import readmodels

QUALITY_SCHEMA = {
    "tool": pl.String,
    "tenant_id": pl.String,
    "state": pl.String,
    "calls": pl.Int64,
    "success_rate": pl.Float64,
    "average_rating": pl.Float64,
    "quality": pl.Float64,
    "rolling_score": pl.Float64,
}


def frame(table: str, rows: Sequence[Mapping[str, Any]]) -> pl.DataFrame:
    """Rows as the store returns them (nested lists as JSON text) as a frame of the table's schema; nested
    items keep only the schema's fields."""
    schema = SCHEMAS[table]
    nested = {name: dtype for name, dtype in schema.items() if isinstance(dtype, pl.List)}
    records = []
    for row in rows:
        record = dict(row)
        for name, dtype in nested.items():
            fields = [f.name for f in dtype.inner.fields]  # type: ignore[union-attr]
            record[name] = [{f: item.get(f) for f in fields} for item in json.loads(record[name] or "[]")]
        records.append(record)
    return pl.DataFrame(records, schema=schema, orient="row") if records else empty(table)


async def from_store(
    pool: asyncpg.Pool, table: str, since: date | None = None, until: date | None = None, after: datetime | None = None
) -> pl.DataFrame:
    """One table for the days ``since``..``until`` (UTC, both included) that arrived after ``after``."""
    return frame(table, await readmodels.event_rows(pool, table, since, until, after))


def within(df: pl.DataFrame, since: date | None, until: date | None) -> pl.DataFrame:
    """The rows whose UTC day of ``occurred_at`` lies in the window."""
    day = pl.col("occurred_at").dt.date()
    if since is not None:
        df = df.filter(day >= since)
    if until is not None:
        df = df.filter(day <= until)
    return df


def from_export(directory: Path, table: str, since: date | None = None, until: date | None = None) -> pl.DataFrame:
    """One table of an export (``DIR/<table>/date=YYYY-MM-DD/*.parquet``), without the partition column."""
    files = sorted((directory / table).glob("date=*/*.parquet"))
    if not files:
        return empty(table)
    df = pl.concat([pl.read_parquet(f) for f in files], how="vertical")
    return within(df.select(SCHEMAS[table].names()).cast(dict(SCHEMAS[table])), since, until)  # type: ignore[arg-type]


async def quality_from_store(pool: asyncpg.Pool) -> pl.DataFrame:
    """Each live tool's quality as the learner keeps it, per tenant: tool, tenant, state, calls, success rate,
    average rating, quality (their product) and the rolling score."""
    rows = await readmodels.live_tool_health(pool)
    return pl.DataFrame([dict(r) for r in rows], schema=QUALITY_SCHEMA, orient="row")
