"""Ranking metrics over one query (pure functions): a ranked list of names against the relevant set."""

import math
from collections.abc import Iterable, Mapping, Sequence

RECALL_KS = (1, 3, 5, 10)
NDCG_KS = (5, 10)
COMPLETE_KS = (5, 10)
METRICS = (
    *(f"R@{k}" for k in RECALL_KS),
    *(f"NDCG@{k}" for k in NDCG_KS),
    *(f"Complete@{k}" for k in COMPLETE_KS),
    "MRR",
)
DEPTH = max(*RECALL_KS, *NDCG_KS, *COMPLETE_KS)
"""How many tools each query ranks; MRR is counted within this depth."""


def recall_at(ranked: Sequence[str], relevant: frozenset[str], k: int) -> float:
    """|relevant ∩ top-k| / |relevant|."""
    return len(relevant.intersection(ranked[:k])) / len(relevant)


def ndcg_at(ranked: Sequence[str], relevant: frozenset[str], k: int) -> float:
    """NDCG@k with binary gains: DCG of the top k over the DCG of a perfect ranking."""
    dcg = sum(1 / math.log2(i + 2) for i, name in enumerate(ranked[:k]) if name in relevant)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(len(relevant), k)))
    return dcg / ideal


def complete_at(ranked: Sequence[str], relevant: frozenset[str], k: int) -> float:
    """1 when every relevant tool is in the top k, else 0."""
    return float(relevant <= set(ranked[:k]))


def reciprocal_rank(ranked: Sequence[str], relevant: frozenset[str]) -> float:
    """1 / rank of the first relevant tool; 0 when none is ranked."""
    return next((1 / (i + 1) for i, name in enumerate(ranked) if name in relevant), 0.0)


def query_metrics(ranked: Sequence[str], relevant: frozenset[str]) -> dict[str, float]:
    """Every metric of ``METRICS`` for one query."""
    return {
        **{f"R@{k}": recall_at(ranked, relevant, k) for k in RECALL_KS},
        **{f"NDCG@{k}": ndcg_at(ranked, relevant, k) for k in NDCG_KS},
        **{f"Complete@{k}": complete_at(ranked, relevant, k) for k in COMPLETE_KS},
        "MRR": reciprocal_rank(ranked, relevant),
    }


def mean_metrics(rows: Iterable[Mapping[str, float]]) -> dict[str, float]:
    """The mean of each metric over queries (all zeros for none)."""
    rows = list(rows)
    return {m: (sum(r[m] for r in rows) / len(rows) if rows else 0.0) for m in METRICS}
