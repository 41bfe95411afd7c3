"""Z-score fusion of the retrieval signals: each signal measured in standard deviations from the pool's mean.

Max-scaling (``retrieval.score_fusion``) sets each signal's best row to 1 but leaves its floor where it is: the
cosines of a catalog sit in a band well above 0, so max-scaled they barely differ while BM25 spans 0 to 1 and
decides. A z-score measures each signal by its own spread over the pool, whatever its floor and units. Leaving
each shared set out, it beat max-scaling on all four (docs/results.md, Fusion).
"""

from collections.abc import Sequence

import numpy as np

from toolsel.services.selector.retrieval import score_fusion
from toolsel.services.selector.stages import Mask, Scores


def zscore_fusion(signals: Sequence[Scores], weights: Sequence[float], mask: Mask) -> Scores:
    """The weighted sum of the signals' z-scores over the pool, scaled so the pool's best row scores 1 and a row
    at 0 in every signal (no similarity, no word in common) 0: relevance keeps the meaning max-scaled scores gave
    it, so what is learnt (bounded by relevance) cannot carry a tool the signals put at the bottom. A signal that
    does not vary over the pool, or weighs 0, is left out; when none varies, the max-scaled scores answer."""
    if sum(weights) <= 0:
        raise ValueError("fusion weights must sum to more than 0")
    total = np.zeros(mask.shape, dtype=np.float64)
    floor = 0.0
    for signal, weight in zip(signals, weights, strict=True):
        if weight <= 0:
            continue
        pooled = signal[mask]
        spread = float(pooled.std()) if pooled.size else 0.0
        if spread > 0:
            mean = pooled.mean()
            scaled = signal - mean  # weight * (signal - mean) / spread, one array
            scaled *= weight
            scaled /= spread
            total += scaled
            floor -= weight * float(mean) / spread
    best = float(total[mask].max()) if mask.any() else floor
    if best <= floor:
        return score_fusion(signals, weights, mask)
    result: Scores = (total - floor) / (best - floor)
    return result
