"""Every signal by name, in the order they are summed. Adding a signal: its module, one line here, its test,
and a weight in ``Settings.fusion_weights`` or ``Settings.rerank_weights`` if it should count by default."""

from typing import Any, TypeVar

from toolsel.contracts import ScoreBreakdown
from toolsel.services.selector.signals import (
    bm25,
    fitness,
    history,
    performance,
    popularity,
    quality,
    recency,
    relevance,
    user_history,
    vector,
)
from toolsel.services.selector.signals.base import RerankSignal, RetrievalSignal, Signal

S = TypeVar("S", bound=Signal[Any])

SHOWN_ELSEWHERE = frozenset({"thompson", "alpha", "beta", "composite"})
"""Breakdown fields the selector fills from the bandit and the composite, never a signal."""


def _by_name(*signals: S) -> dict[str, S]:
    """The registry of one kind; refuses two signals of one name or showing in one breakdown field."""
    fields = [s.field for s in signals if s.field is not None]
    if len({s.name for s in signals}) < len(signals) or len(set(fields)) < len(fields):
        raise ValueError("two signals share a name or a breakdown field")
    for field in fields:
        if field not in ScoreBreakdown.model_fields or field in SHOWN_ELSEWHERE:
            raise ValueError(f"no ScoreBreakdown field {field!r} for a signal to fill")
    return {s.name: s for s in signals}


RETRIEVAL: dict[str, RetrievalSignal] = _by_name(
    vector.VECTOR,
    bm25.BM25,
    history.HISTORY,
)
RERANK: dict[str, RerankSignal] = _by_name(
    relevance.RELEVANCE,
    quality.QUALITY,
    recency.RECENCY,
    popularity.POPULARITY,
    user_history.USER_HISTORY,
    performance.PERFORMANCE,
    fitness.FITNESS,
)
NEUTRAL: dict[str, float] = {name: signal.neutral for name, signal in RERANK.items()}
