"""Per-tool quality from call counters (seed 004): composite quality, latency percentiles, a call's sample.

Latency is kept as a histogram over fixed log-spaced buckets so that batches and learners add their counts
together (an UPSERT can sum arrays; it cannot merge percentiles); p50/p99 are read off it within ~19%.
"""

import math
from collections.abc import Sequence

from toolsel.contracts import ToolCall

BUCKETS_PER_DOUBLING = 4
LATENCY_BUCKETS = 23 * BUCKETS_PER_DOUBLING
"""Bucket i holds latencies up to 2**(i/4) ms: 1 ms (bucket 0) to past an hour (the contract's maximum)."""


def latency_bucket(latency_ms: float) -> int:
    """The histogram bucket of one latency."""
    if latency_ms <= 1.0:
        return 0
    return min(math.ceil(math.log2(latency_ms) * BUCKETS_PER_DOUBLING), LATENCY_BUCKETS - 1)


def bucket_upper_ms(bucket: int) -> float:
    return float(2 ** (bucket / BUCKETS_PER_DOUBLING))


def latency_percentile(histogram: Sequence[int], q: float) -> float | None:
    """The upper bound of the bucket holding the q-quantile (0 < q <= 1); None without latencies."""
    total = sum(histogram)
    if total == 0:
        return None
    rank = q * total
    seen = 0
    for bucket, count in enumerate(histogram):
        seen += count
        if seen >= rank:
            return bucket_upper_ms(bucket)
    return bucket_upper_ms(len(histogram) - 1)


def call_quality(call: ToolCall) -> float:
    """One call's contribution to the rolling score: 0 when it failed, else its rating (1.0 when unrated)."""
    if not call.success:
        return 0.0
    return 1.0 if call.rating is None else call.rating
