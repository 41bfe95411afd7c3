"""What a tenant's own calls made of the tools it sees: quarantine, average rating, call count and performance.

The learner keeps a tool's quality and health per tenant (the tenant whose selections' calls counted), so a
shared tool that fails for one tenant is quarantined for that tenant alone. The catalog holds each tool's base
standing (its own tenant's evidence: the owner's for a private tool, the evidence from before health was kept per
tenant for a shared one) and, per tenant, the shared tools it has evidence of itself, which replace the base.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Protocol

import numpy as np

from toolsel.services.selector.stages import Mask, Rows, Scores
from toolsel.settings import Settings


@dataclass(frozen=True)
class Evidence:
    """One tenant's own evidence of some shared tools: their rows and what it says of each."""

    rows: Rows
    quarantined: Mask
    rating: Scores
    calls: Scores
    performance: Scores


@dataclass(frozen=True)
class Standing:
    """Every catalog row as one tenant sees it (aligned with the catalog)."""

    visible: Mask
    """The rows the tenant may see at all: its own and the shared ones."""
    quarantined: Mask
    rating: Scores
    """The lift the tool's ratings give its quality (``rating_lift``: 1.0 until someone rates it)."""
    calls: Scores
    performance: Scores
    """Mean of a latency score and the success share of calls; 0.5 before the first call."""

    @cached_property
    def popularity(self) -> Scores:
        """Usage percentile among the tools this tenant sees (seed 001): no other tenant's tools or calls count."""
        return popularity(np.where(self.visible, self.calls, 0.0))


def popularity(calls: Scores) -> Scores:
    """Percentile of each tool's call count (0 for an unused tool, 1 for the most used)."""
    out = np.zeros(calls.shape, dtype=np.float64)
    used = calls > 0
    if used.any():
        order = calls[used].argsort(kind="stable").argsort(kind="stable")
        out[used] = (order + 1) / used.sum()
    return out


def rating_lift(rating_sum: float | None, rating_count: int | None, prior: float, prior_weight: float) -> float:
    """How the ratings given so far move a tool's quality: their mean, drawn towards the neutral ``prior`` as if
    ``prior_weight`` ratings of it came first, relative to that prior. 1.0 before the first rating; a rating above
    the prior lifts the tool (above 1.0), one below lowers it."""
    return ((rating_sum or 0.0) + prior * prior_weight) / ((rating_count or 0) + prior_weight) / prior


def performance(
    calls: int | None,
    failures: int | None,
    latency_sum_ms: float | None,
    latency_count: int | None,
    reference_ms: float,
) -> float:
    """Seed 001's performance: the mean of a latency score and reliability; neutral 0.5 without data."""
    if not calls:
        return 0.5
    reliability = 1.0 - (failures or 0) / calls
    latency = reference_ms / (reference_ms + (latency_sum_ms or 0.0) / latency_count) if latency_count else 0.5
    return (latency + reliability) / 2


Row = Mapping[str, Any]
"""A row of evidence: ``quarantined``, ``rating_sum``, ``rating_count``, ``calls``, ``failures``,
``latency_sum_ms``, ``latency_count`` (None where there is none yet)."""


def values_of(rows: Sequence[Row], settings: Settings) -> tuple[Mask, Scores, Scores, Scores]:
    """(quarantined, rating lift, calls, performance) of each row of evidence."""
    prior, weight, reference_ms = settings.rating_prior, settings.rating_prior_weight, settings.latency_reference_ms
    return (
        np.array([bool(r["quarantined"]) for r in rows], dtype=bool),
        np.array([rating_lift(r["rating_sum"], r["rating_count"], prior, weight) for r in rows], dtype=np.float64),
        np.array([r["calls"] or 0 for r in rows], dtype=np.float64),
        np.array(
            [
                performance(r["calls"], r["failures"], r["latency_sum_ms"], r["latency_count"], reference_ms)
                for r in rows
            ],
            dtype=np.float64,
        ),
    )


def evidence_by_tenant(rows: Sequence[Row], catalog_rows: Mapping[str, int], settings: Settings) -> dict[str, Evidence]:
    """Each tenant's own evidence of shared tools (rows with ``key`` and ``tenant_id``), on catalog rows; rows of
    tools not in the catalog are left out."""
    grouped: dict[str, list[Row]] = {}
    for r in rows:
        if r["key"] in catalog_rows:
            grouped.setdefault(r["tenant_id"], []).append(r)
    result = {}
    for tenant, mine in grouped.items():
        quarantined, rating, calls, perf = values_of(mine, settings)
        at = np.array([catalog_rows[r["key"]] for r in mine], dtype=np.int64)
        result[tenant] = Evidence(at, quarantined, rating, calls, perf)
    return result


class Base(Protocol):
    """Each row's standing on its own tenant's evidence (the catalog's)."""

    @property
    def quarantined(self) -> Mask: ...
    @property
    def rating(self) -> Scores: ...
    @property
    def calls(self) -> Scores: ...
    @property
    def performance(self) -> Scores: ...


def standing_of(base: Base, own: Evidence | None, visible: Mask) -> Standing:
    """The base standing with the tenant's own evidence in place of the base where it has some."""
    if own is None:
        return Standing(visible, base.quarantined, base.rating, base.calls, base.performance)
    quarantined, rating, calls, perf = (
        base.quarantined.copy(),
        base.rating.copy(),
        base.calls.copy(),
        base.performance.copy(),
    )
    quarantined[own.rows], rating[own.rows] = own.quarantined, own.rating
    calls[own.rows], perf[own.rows] = own.calls, own.performance
    return Standing(visible, quarantined, rating, calls, perf)
