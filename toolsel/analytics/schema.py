"""The four event tables as polars frames: one schema each, shared by the store reader, the export and the
metrics (docs/analysts.md's Parquet table is this module)."""

from typing import Any

import polars as pl

UTC_TIME = pl.Datetime("us", "UTC")
TOOL: dict[str, Any] = {"plugin_id": pl.String, "name": pl.String}


def _schema(columns: dict[str, Any]) -> pl.Schema:
    return pl.Schema(columns)


SCHEMAS: dict[str, pl.Schema] = {
    "selections": _schema(
        {
            "selection_id": pl.String,
            "occurred_at": UTC_TIME,
            "stored_at": UTC_TIME,
            "tenant_id": pl.String,
            "user_id": pl.String,
            "session_id": pl.String,
            "query": pl.String,
            "page": pl.String,
            "tier": pl.String,
            "role": pl.String,
            "intent": pl.String,
            "context_key": pl.String,
            "method": pl.String,
            "tools": pl.List(
                pl.Struct(
                    {
                        **TOOL,
                        "rank": pl.Int64,
                        "score": pl.Float64,
                        "pinned": pl.Boolean,
                        "exploration": pl.Boolean,
                        "sub_query": pl.String,
                        "similarity": pl.Float64,
                    }
                )
            ),
            "candidate_count": pl.Int64,
            "latency_ms": pl.Float64,
            "tokens_selected": pl.Int64,
            "tokens_catalog": pl.Int64,
        }
    ),
    "outcomes": _schema(
        {
            "event_id": pl.String,
            "selection_id": pl.String,
            "tenant_id": pl.String,
            "occurred_at": UTC_TIME,
            "applied_at": UTC_TIME,
            "calls": pl.List(
                pl.Struct(
                    {**TOOL, "success": pl.Boolean, "latency_ms": pl.Float64, "error": pl.String, "rating": pl.Float64}
                )
            ),
        }
    ),
    "reviews": _schema(
        {
            "event_id": pl.String,
            "selection_id": pl.String,
            "tenant_id": pl.String,
            "occurred_at": UTC_TIME,
            "applied_at": UTC_TIME,
            "none_of_these": pl.Boolean,
            "reviews": pl.List(pl.Struct({**TOOL, "verdict": pl.String})),
        }
    ),
    "feedback": _schema(
        {
            "event_id": pl.String,
            "plugin_id": pl.String,
            "name": pl.String,
            "tenant_id": pl.String,
            "rating": pl.Float64,
            "comment": pl.String,
            "author": pl.String,
            "occurred_at": UTC_TIME,
            "applied_at": UTC_TIME,
        }
    ),
}
ID_COLUMN = {"selections": "selection_id", "outcomes": "event_id", "reviews": "event_id", "feedback": "event_id"}
"""Each table's event id: what an incremental export compares."""


def empty(table: str) -> pl.DataFrame:
    return pl.DataFrame(schema=SCHEMAS[table])
