"""Count: how many tools the request gets before pins. A number it gives, the selector's default, or
for ``k: auto`` as many as the calibrated confidence supports: every candidate that may be the tool needed (its
confidence clears a floor, and a share of the best one's), so a sure one-need query gets one or two tools, an
unsure or compound one more, between ``TOOLSEL_AUTO_K_FLOOR`` and ``TOOLSEL_AUTO_K_CEILING``."""

import numpy as np

from toolsel.contracts import SelectRequest
from toolsel.services.selector import stages
from toolsel.services.selector.pipeline.candidates import Candidates
from toolsel.services.selector.pipeline.held import Held
from toolsel.services.selector.pipeline.rerank import Scored
from toolsel.settings import Settings


def run(held: Held, request: SelectRequest, found: Candidates, scored: Scored) -> int:
    if request.k == "auto":
        return auto(scored.confidence[found.merged], held.settings)
    return request.k or held.settings.default_k


def auto(confidence: stages.Scores, settings: Settings) -> int:
    """The candidates' count whose confidence reaches ``auto_k_min_confidence`` and ``auto_k_relative_confidence``
    of the best, within the floor and the ceiling (order-free: the rerank may order them otherwise)."""
    if confidence.size == 0:
        return settings.auto_k_floor
    least = max(settings.auto_k_min_confidence, settings.auto_k_relative_confidence * float(confidence.max()))
    supported = int(np.count_nonzero(confidence >= least))
    return min(max(supported, settings.auto_k_floor), settings.auto_k_ceiling)
