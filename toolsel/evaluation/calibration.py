"""Calibration of the reply's ``confidence``: over the returned tools of every query, does a tool given
probability p turn out relevant about p of the time? Expected calibration error over equal-width bins."""

from collections.abc import Sequence
from typing import Any

BINS = 10


def calibration(confidences: Sequence[float], relevant: Sequence[bool], bins: int = BINS) -> dict[str, Any]:
    """ECE (the count-weighted mean gap between mean confidence and relevant rate per bin) and each bin."""
    if len(confidences) != len(relevant):
        raise ValueError("one label per confidence")
    grouped: list[list[tuple[float, bool]]] = [[] for _ in range(bins)]
    for p, hit in zip(confidences, relevant, strict=True):
        grouped[min(int(p * bins), bins - 1)].append((p, hit))
    total = len(confidences)
    out, ece = [], 0.0
    for i, members in enumerate(grouped):
        if not members:
            continue
        mean = sum(p for p, _ in members) / len(members)
        rate = sum(hit for _, hit in members) / len(members)
        ece += len(members) / total * abs(mean - rate)
        out.append({"low": i / bins, "high": (i + 1) / bins, "n": len(members), "confidence": mean, "relevant": rate})
    return {"ece": ece, "bins": out}
