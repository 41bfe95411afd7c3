"""Embedding drift (seed 000, 8.6): tools whose vector is missing, stale, or older than the drift age."""

from datetime import datetime, timedelta
from typing import Literal

DriftReason = Literal["missing", "stale", "old"]


def days_since(then: datetime | None, now: datetime) -> float | None:
    return None if then is None else (now - then) / timedelta(days=1)


def drift_reason(
    embedding_status: str, last_embedded_at: datetime | None, now: datetime, days: float
) -> DriftReason | None:
    """Why a tool's vector needs recomputing, or None when it is current and young enough."""
    if last_embedded_at is None:
        return "missing"
    if embedding_status != "current":
        return "stale"
    if now - last_embedded_at > timedelta(days=days):
        return "old"
    return None
