"""Quality: success rate x average rating (seed 004)."""

import numpy as np
import pytest

from tests.unit.selector.factory import T, catalog, rerank_context
from toolsel.services.selector.signals.quality import QUALITY

CAT = catalog([T("a", "a", 0), T("b", "b", 1)])
object.__setattr__(CAT, "rating", np.array([0.5, 1.0]))


def test_is_the_success_rate_times_the_rating() -> None:
    assert QUALITY.scores(rerank_context(CAT, success=np.array([0.6, 1.0]))).tolist() == pytest.approx([0.3, 1.0])
