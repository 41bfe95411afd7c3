"""The event tables as polars frames, read from the store (asyncpg) or from an export directory."""

import json
from collections.abc import Mapping, Sequence
from datetime import date, datetime
from pathlib import Path
from typing import Any

import asyncpg
import polars as pl

from toolsel.analytics.schema import SCHEMAS, empty

SOURCES = {
    "selections": """SELECT selection_id::text AS selection_id, occurred_at, tenant_id, user_id, session_id, query,
        page, tier, role, context_key, method, tools::text AS tools, candidate_count, latency_ms, tokens_selected,
        tokens_catalog FROM selection_events e""",
    "outcomes": """SELECT event_id::text AS event_id, selection_id::text AS selection_id, occurred_at, applied_at,
        calls::text AS calls FROM outcomes e""",
    "reviews": """SELECT event_id::text AS event_id, selection_id::text AS selection_id, occurred_at, applied_at,
        none_of_these, reviews::text AS reviews FROM reviews e""",
    "feedback": """SELECT e.event_id::text AS event_id, t.plugin_id, t.name, e.tenant_id, e.rating, e.comment,
        e.author, e.occurred_at FROM tool_feedback e JOIN tools t ON t.id = e.tool_id""",
}
ARRIVAL = {
    "selections": "e.occurred_at",
    "outcomes": "e.applied_at",
    "reviews": "e.applied_at",
    "feedback": "e.occurred_at",
}
"""When a row reached the store, as closely as it says: what an incremental export follows."""
TABLES = tuple(SOURCES)


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
    rows = await pool.fetch(
        f"""{SOURCES[table]}
            WHERE ($1::date IS NULL OR (e.occurred_at AT TIME ZONE 'UTC')::date >= $1)
              AND ($2::date IS NULL OR (e.occurred_at AT TIME ZONE 'UTC')::date <= $2)
              AND ($3::timestamptz IS NULL OR {ARRIVAL[table]} > $3)
            ORDER BY {ARRIVAL[table]}""",
        since,
        until,
        after,
    )
    return frame(table, rows)


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
    """Each live tool's quality as the learner keeps it: tool, state, calls, success rate, average rating,
    quality (their product) and the rolling score."""
    rows = await pool.fetch(
        """SELECT t.plugin_id || '/' || t.name AS tool,
                  CASE WHEN qq.tool_id IS NOT NULL THEN 'quarantined' ELSE coalesce(q.state, 'healthy') END AS state,
                  coalesce(q.calls, 0) AS calls, q.successes::float8 / nullif(q.calls, 0) AS success_rate,
                  q.rating_sum / nullif(q.rating_count, 0) AS average_rating, q.quality, q.rolling_score
           FROM tools t LEFT JOIN tool_quality q ON q.tool_id = t.id
           LEFT JOIN tool_quarantine qq ON qq.tool_id = t.id AND qq.released_at IS NULL
           WHERE t.deleted_at IS NULL ORDER BY tool"""
    )
    schema = {
        "tool": pl.String,
        "state": pl.String,
        "calls": pl.Int64,
        "success_rate": pl.Float64,
        "average_rating": pl.Float64,
        "quality": pl.Float64,
        "rolling_score": pl.Float64,
    }
    return pl.DataFrame([dict(r) for r in rows], schema=schema, orient="row")
