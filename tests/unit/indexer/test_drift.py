"""Drift: missing, stale, or older than the drift age (seed 000, 8.6)."""

from datetime import UTC, datetime, timedelta

from toolsel.services.indexer.drift import days_since, drift_reason

NOW = datetime(2025, 6, 1, tzinfo=UTC)


def test_drift_reasons() -> None:
    assert drift_reason("pending", None, NOW, 7) == "missing"
    assert drift_reason("stale", NOW - timedelta(hours=1), NOW, 7) == "stale"
    assert drift_reason("current", NOW - timedelta(days=8), NOW, 7) == "old"
    assert drift_reason("current", NOW - timedelta(days=6), NOW, 7) is None


def test_days_since() -> None:
    assert days_since(NOW - timedelta(hours=36), NOW) == 1.5
    assert days_since(None, NOW) is None
