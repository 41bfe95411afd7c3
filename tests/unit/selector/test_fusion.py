"""Z-score fusion: each signal by its spread over the pool, scaled from a row at 0 everywhere to the pool's best."""

import numpy as np
import pytest

from toolsel.services.selector.fusion import zscore_fusion
from toolsel.services.selector.pipeline.fuse import covered
from toolsel.services.selector.retrieval import LexicalIndex, score_fusion


def _z(signal: np.ndarray, mask: np.ndarray) -> np.ndarray:
    return (signal - signal[mask].mean()) / signal[mask].std()


def test_zscore_fusion_scales_the_weighted_z_from_a_zero_row_to_the_pools_best() -> None:
    mask = np.array([True, True, True, False])
    cosine = np.array([0.9, 0.5, 0.1, 0.0])
    bm25 = np.array([0.0, 0.0, 6.0, 50.0])  # the masked-out row sets neither the mean, the spread nor the best
    fused = zscore_fusion([cosine, bm25], [1.0, 0.5], mask)
    total = 1.0 * _z(cosine, mask) + 0.5 * _z(bm25, mask)
    floor = -1.0 * cosine[:3].mean() / cosine[:3].std() - 0.5 * bm25[:3].mean() / bm25[:3].std()
    assert fused == pytest.approx((total - floor) / (total[:3].max() - floor))
    assert fused[:3].max() == pytest.approx(1.0)
    assert (fused[:3] > 0).all()  # every masked row has some signal, so none falls to 0


def test_each_signal_counts_by_its_own_spread_not_its_units() -> None:
    """Cosines sit in a band well above 0, so max-scaled they barely differ while BM25 spans 0 to 1; stretching a
    signal changes nothing here."""
    mask = np.ones(4, dtype=bool)
    cosine = np.array([0.62, 0.55, 0.5, 0.45])
    bm25 = np.array([0.0, 3.0, 0.0, 4.0])
    fused = zscore_fusion([cosine, bm25], [1.0, 1.0], mask)
    assert zscore_fusion([2.0 * cosine, 7.0 * bm25], [1.0, 1.0], mask) == pytest.approx(fused)
    assert int(np.argmax(fused)) == 1  # fits both well, where max-scaling puts the BM25 top (row 3) first
    assert int(np.argmax(score_fusion([cosine, bm25], [1.0, 1.0], mask))) == 3


def test_a_row_without_any_signal_scores_0() -> None:
    mask = np.ones(4, dtype=bool)
    fused = zscore_fusion([np.array([0.0, 0.3, 0.6, 0.2]), np.array([0.0, 2.0, 0.0, 0.0])], [1.0, 2.0], mask)
    assert fused[0] == pytest.approx(0.0)
    assert (fused[1:] > 0).all()


def test_a_flat_or_unweighted_signal_leaves_the_others_ranking() -> None:
    mask = np.ones(3, dtype=bool)
    cosine = np.array([0.2, 0.8, 0.5])
    alone = zscore_fusion([cosine], [1.0], mask)
    assert zscore_fusion([cosine, np.full(3, 4.0)], [1.0, 2.0], mask) == pytest.approx(alone)
    assert zscore_fusion([cosine, np.array([9.0, 0.0, 0.0])], [1.0, 0.0], mask) == pytest.approx(alone)
    assert np.argsort(-alone).tolist() == [1, 2, 0]


def test_without_any_spread_the_max_scaled_scores_answer() -> None:
    """Twins (or a pool of one) tie at 1, as max-scaled, so what is learnt can still order them."""
    twins = np.array([0.7, 0.7])
    assert zscore_fusion([twins, np.zeros(2)], [1.0, 0.0], np.ones(2, dtype=bool)).tolist() == [1.0, 1.0]
    assert zscore_fusion([np.zeros(2)], [1.0], np.ones(2, dtype=bool)).tolist() == [0.0, 0.0]
    assert zscore_fusion([np.array([0.4, 0.9])], [1.0], np.array([True, False])).tolist() == pytest.approx([1.0, 2.25])


def test_zscore_fusion_refuses_weights_that_sum_to_nothing() -> None:
    with pytest.raises(ValueError, match="weights"):
        zscore_fusion([np.array([0.1, 0.2])], [0.0], np.ones(2, dtype=bool))


def test_bm25_counts_as_the_share_of_the_query_a_row_matched() -> None:
    """A row that matched only the query's common words keeps little of its BM25 score; one that matched its rare
    words keeps most; to the power 0 every row keeps all of it."""
    lexical = LexicalIndex.of_texts(
        ["find stores near you", "find hotels near a landmark", "find a file", "find a tower", "find news"],
        k1=1.2,
        b=0.75,
    )
    query = "find hotels near the tower"
    bm25 = lexical.scores(query)
    share = covered(lexical, bm25, query, 1.0) / bm25
    assert share[1] > share[0] > share[2]  # hotels and near; near; find alone
    assert np.allclose(covered(lexical, bm25, query, 0.0), bm25)
    assert np.all(covered(lexical, bm25, query, 0.5) >= covered(lexical, bm25, query, 1.0))
