"""Percentiles and rates, the way the benchmark reports them (pure)."""

from collections.abc import Sequence

import numpy as np


def percentiles_ms(seconds: Sequence[float], points: Sequence[int] = (50, 95, 99)) -> dict[str, float]:
    """``{"p50": ms, ...}`` of durations given in seconds."""
    if not seconds:
        raise ValueError("no samples")
    ms = np.asarray(seconds, dtype=np.float64) * 1000
    return {f"p{p}": round(float(np.percentile(ms, p)), 2) for p in points}


def rate(count: int, seconds: float) -> float:
    """Items per second (0 when nothing was timed)."""
    return round(count / seconds, 1) if seconds > 0 else 0.0


def rss_mb(status: str, field: str = "VmRSS") -> float:
    """Resident memory in MB from the text of ``/proc/<pid>/status``: now (``VmRSS: 123 kB``), or at its peak
    (``VmHWM``)."""
    for line in status.splitlines():
        if line.startswith(f"{field}:"):
            return round(int(line.split()[1]) / 1024, 1)
    raise ValueError(f"no {field} line")
