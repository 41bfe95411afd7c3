"""The event tables as polars frames, read from the store (asyncpg) or from an export directory."""

import asyncio
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
    pool: asyncpg.Pool,
    table: str,
    since: date | None = None,
    until: date | None = None,
    after: datetime | None = None,
    tenant: str | None = None,
) -> pl.DataFrame:
    """One table for the days ``since``..``until`` (UTC, both included) that arrived after ``after``, of ``tenant``
    (None: every tenant). Decoded in a thread: seconds over a long history, which the caller's event loop (the
    learner's, answering analytics) must not wait out."""
    return await asyncio.to_thread(frame, table, await readmodels.event_rows(pool, table, since, until, after, tenant))


async def snapshot(
    pool: asyncpg.Pool, since: date | None, until: date | None, after: Mapping[str, datetime | None], tenant: str | None
) -> dict[str, pl.DataFrame]:
    """Every table as ``from_store`` reads it, all as of one moment (``readmodels.event_snapshot``)."""
    rows = await readmodels.event_snapshot(pool, since, until, after, tenant)
    return await asyncio.to_thread(lambda: {table: frame(table, found) for table, found in rows.items()})


def of_tenant(df: pl.DataFrame, tenant: str | None) -> pl.DataFrame:
    """The rows of ``tenant`` (None: all)."""
    return df if tenant is None else df.filter(pl.col("tenant_id") == tenant)


def within(df: pl.DataFrame, since: date | None, until: date | None) -> pl.DataFrame:
    """The rows whose UTC day of ``occurred_at`` lies in the window."""
    day = pl.col("occurred_at").dt.date()
    if since is not None:
        df = df.filter(day >= since)
    if until is not None:
        df = df.filter(day <= until)
    return df


def conformed(df: pl.DataFrame, table: str) -> pl.DataFrame:
    """``df`` in the table's schema of this release: the columns and nested fields an earlier release did not
    write are null, and columns it does not know are dropped, so that files written across an upgrade read as one
    table."""
    columns = []
    for name, dtype in SCHEMAS[table].items():
        if name not in df.columns:
            columns.append(pl.lit(None, dtype=dtype).alias(name))
        elif isinstance(dtype, pl.List) and isinstance(dtype.inner, pl.Struct):
            written = df.schema[name]
            have = {f.name for f in written.inner.fields} if isinstance(written, pl.List) else set()  # type: ignore[union-attr]
            fields = [
                pl.element().struct.field(f.name) if f.name in have else pl.lit(None, dtype=f.dtype).alias(f.name)
                for f in dtype.inner.fields
            ]
            columns.append(pl.col(name).list.eval(pl.struct(fields)))
        else:
            columns.append(pl.col(name))
    return df.select(columns).cast(dict(SCHEMAS[table]))  # type: ignore[arg-type]


def from_export(
    directory: Path, table: str, since: date | None = None, until: date | None = None, tenant: str | None = None
) -> pl.DataFrame:
    """One table of an export (``DIR/<table>/date=YYYY-MM-DD/*.parquet``), without the partition column, its
    files in this release's schema whichever release wrote them."""
    files = sorted((directory / table).glob("date=*/*.parquet"))
    if not files:
        return empty(table)
    read = pl.concat([conformed(pl.read_parquet(f), table) for f in files], how="vertical")
    return of_tenant(within(read, since, until), tenant)


async def quality_from_store(pool: asyncpg.Pool) -> pl.DataFrame:
    """Each live tool's quality as the learner keeps it, per tenant: tool, tenant, state, calls, success rate,
    average rating, quality (their product) and the rolling score."""
    rows = await readmodels.live_tool_health(pool)
    return pl.DataFrame([dict(r) for r in rows], schema=QUALITY_SCHEMA, orient="row")
