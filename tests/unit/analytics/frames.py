"""Small hand-made event frames for the metric tests."""

from datetime import UTC, datetime
from typing import Any

import polars as pl

from toolsel.analytics.schema import SCHEMAS


def at(day: int, hour: int = 12) -> datetime:
    return datetime(2025, 6, day, hour, tzinfo=UTC)


def picked(*keys: str) -> list[dict[str, Any]]:
    return [
        {
            "plugin_id": k.split("/")[0],
            "name": k.split("/")[1],
            "rank": i + 1,
            "score": 1.0,
            "pinned": False,
            "exploration": False,
        }
        for i, k in enumerate(keys)
    ]


def selection(
    sid: str, day: int, page: str, method: str, latency: float, tools: list[str], saved: int
) -> dict[str, Any]:
    return {
        "selection_id": sid,
        "occurred_at": at(day),
        "tenant_id": "t",
        "user_id": None,
        "session_id": None,
        "query": "q",
        "page": page,
        "tier": "free",
        "role": None,
        "intent": "i",
        "context_key": "k",
        "method": method,
        "tools": picked(*tools),
        "candidate_count": 10,
        "latency_ms": latency,
        "tokens_selected": 100,
        "tokens_catalog": 100 + saved,
    }


def call(key: str, success: bool) -> dict[str, Any]:
    plugin, name = key.split("/")
    return {"plugin_id": plugin, "name": name, "success": success, "latency_ms": None, "error": None, "rating": None}


def outcome(eid: str, sid: str, day: int, calls: list[dict[str, Any]]) -> dict[str, Any]:
    return {"event_id": eid, "selection_id": sid, "occurred_at": at(day), "applied_at": at(day, 13), "calls": calls}


def frame(table: str, rows: list[dict[str, Any]]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=SCHEMAS[table], orient="row")


SELECTIONS = frame(
    "selections",
    [
        selection("s1", 1, "/mail", "hybrid", 10.0, ["m/send", "m/read"], 900),
        selection("s2", 1, "/mail", "hybrid", 20.0, ["m/send"], 500),
        selection("s3", 2, "/travel", "bm25", 30.0, ["t/fly", "m/send"], 100),
        selection("s4", 2, "", "hybrid", 40.0, [], 0),
    ],
)
OUTCOMES = frame(
    "outcomes",
    [
        outcome("o1", "s1", 1, [call("m/send", True)]),  # hit, success
        outcome("o2", "s2", 1, [call("m/read", True)]),  # miss: m/read was not selected for s2
        outcome("o3", "s3", 2, [call("t/fly", False), call("m/send", True)]),  # hit, a failure
        outcome("o4", "s4", 2, []),  # nothing called: no accuracy verdict
        outcome("o5", "gone", 2, [call("t/fly", True)]),  # selection outside the frame
    ],
)
