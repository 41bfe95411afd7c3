"""Quality pieces: latency histogram percentiles and one call's quality sample."""

import pytest

from toolsel.contracts import ToolCall
from toolsel.services.learner.quality import LATENCY_BUCKETS, call_quality, latency_bucket, latency_percentile


def histogram(latencies: list[float]) -> list[int]:
    counts = [0] * LATENCY_BUCKETS
    for ms in latencies:
        counts[latency_bucket(ms)] += 1
    return counts


def test_percentiles_are_within_a_bucket_of_the_truth() -> None:
    latencies = [float(ms) for ms in range(1, 1001)]
    hist = histogram(latencies)
    p50, p99 = latency_percentile(hist, 0.5), latency_percentile(hist, 0.99)
    assert p50 is not None
    assert p99 is not None
    assert 500 <= p50 < 500 * 2**0.25
    assert 990 <= p99 < 990 * 2**0.25


def test_no_latency_no_percentile_and_extremes_stay_in_range() -> None:
    assert latency_percentile([0] * LATENCY_BUCKETS, 0.5) is None
    assert latency_bucket(0.0) == 0
    assert latency_bucket(3_600_000) < LATENCY_BUCKETS - 1  # the contract's maximum fits
    assert latency_bucket(1e12) == LATENCY_BUCKETS - 1


@pytest.mark.parametrize(("success", "rating", "expected"), [(False, 0.9, 0.0), (True, None, 1.0), (True, 0.4, 0.4)])
def test_call_quality(success: bool, rating: float | None, expected: float) -> None:
    assert call_quality(ToolCall(plugin_id="p", name="t", success=success, rating=rating)) == expected
