"""BM25 over tool text, reciprocal rank fusion, the confidence gate and the merge of a compound request's rankings."""

import subprocess
import sys

import bm25s
import numpy as np
import pytest

from toolsel.services.selector import retrieval
from toolsel.services.selector.retrieval import (
    LexicalIndex,
    bm25_confidence,
    lexical_text,
    needs,
    ranks,
    reciprocal_rank_fusion,
    round_robin,
    score_fusion,
)


def test_lexical_text_splits_names_and_includes_examples_tags_and_parameters() -> None:
    text = lexical_text(
        {
            "name": "sendEmail_v2",
            "description": "Sends mail.",
            "example_queries": ["mail my boss"],
            "tags": ["smtp"],
            "parameters": {"properties": {"recipientAddress": {"description": "who gets it"}}},
        }
    )
    for part in ("send Email v2", "Sends mail.", "mail my boss", "smtp", "recipient Address", "who gets it"):
        assert part in text


def test_bm25_scores_the_matching_document_only() -> None:
    index = LexicalIndex.of_texts(["sendEmail send an email", "get_weather forecast", "search flights"], k1=0.9, b=0.4)
    scores = index.scores("what's the weather forecast")
    assert scores[1] > 0
    assert scores[0] == scores[2] == 0
    assert index.scores("zzzz unknown").tolist() == [0, 0, 0]
    assert LexicalIndex.of_texts([], k1=0.9, b=0.4).scores("email").size == 0


def test_ranks_are_one_based_within_the_mask_and_infinite_elsewhere() -> None:
    scores = np.array([0.2, 0.9, 0.0, 0.5])
    mask = np.array([True, True, True, False])
    assert ranks(scores, mask).tolist() == [2.0, 1.0, np.inf, np.inf]


def test_reciprocal_rank_fusion_by_hand() -> None:
    vector = np.array([1.0, 2.0, np.inf])
    lexical = np.array([2.0, 1.0, 1.0])
    fused = reciprocal_rank_fusion([vector, lexical], [1.0, 1.0], k=60)
    # (1/61 + 1/62) * 61 / 2 for the first two rows; (0 + 1/61) * 61 / 2 for the third
    assert fused[0] == pytest.approx((1 / 61 + 1 / 62) * 61 / 2)
    assert fused[1] == pytest.approx(fused[0])
    assert fused[2] == pytest.approx(0.5)
    top = reciprocal_rank_fusion([np.array([1.0]), np.array([1.0])], [0.3, 0.7], k=60)
    assert top[0] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="weights"):
        reciprocal_rank_fusion([vector], [0.0], k=60)


def test_bm25_confidence_gate() -> None:
    scores = np.array([12.0, 3.0])
    assert bm25_confidence(scores, np.array([True, True]), scale=10) == 1.0
    assert bm25_confidence(scores, np.array([False, True]), scale=10) == pytest.approx(0.3)
    assert bm25_confidence(scores, np.array([False, False]), scale=10) == 0.0


def test_round_robin_gives_each_ranking_its_turn_without_repeats() -> None:
    merged = round_robin([np.array([1, 2, 3]), np.array([2, 4]), np.array([5])], limit=5)
    assert merged.tolist() == [1, 2, 5, 4, 3]
    assert round_robin([np.array([1, 2, 3])], limit=2).tolist() == [1, 2]


def _turn_by_turn(rankings: list[np.ndarray], limit: int) -> list[int]:
    """The merge as its definition reads: depth by depth, each ranking in turn, skipping rows already taken."""
    chosen: list[int] = []
    for depth in range(max((r.size for r in rankings), default=0)):
        for ranking in rankings:
            if depth < ranking.size and int(ranking[depth]) not in chosen and len(chosen) < limit:
                chosen.append(int(ranking[depth]))
    return chosen


@pytest.mark.parametrize("seed", range(20))
def test_round_robin_matches_the_turn_by_turn_merge(seed: int) -> None:
    rng = np.random.default_rng(seed)
    rankings = [rng.permutation(30)[: rng.integers(0, 12)] for _ in range(rng.integers(1, 5))]
    limit = int(rng.integers(1, 25))
    assert round_robin(rankings, limit).tolist() == _turn_by_turn(rankings, limit)
    assert round_robin([], 5).size == 0


def test_each_row_is_offered_for_the_part_whose_ranking_holds_it_highest() -> None:
    parts = [np.array([3, 1, 9]), np.array([9, 5, 2])]
    assert needs(np.array([5, 3, 9, 7, 1]), parts) == [1, 0, 1, None, 0]  # 7: only the whole query had it
    assert needs(np.array([2, 4]), []) == [None, None]
    assert needs(np.array([9]), [np.array([4, 9]), np.array([8, 9])]) == [0]  # a tie goes to the first part


def test_score_fusion_is_the_weighted_mean_of_max_scaled_signals() -> None:
    mask = np.array([True, True, False])
    cosine = np.array([0.8, 0.4, 0.9])  # the masked-out row does not set the scale
    bm25 = np.array([0.0, 6.0, 1.0])
    fused = score_fusion([cosine, bm25], [1.0, 0.5], mask)
    assert fused[0] == pytest.approx((1.0 * 1.0 + 0.5 * 0.0) / 1.5)
    assert fused[1] == pytest.approx((1.0 * 0.5 + 0.5 * 1.0) / 1.5)
    assert score_fusion([np.zeros(3)], [1.0], mask).tolist() == [0.0, 0.0, 0.0]
    with pytest.raises(ValueError, match="weights"):
        score_fusion([cosine], [0.0], mask)


def test_bm25_ceiling_is_reached_only_by_matching_every_query_word_ever_more() -> None:
    index = LexicalIndex.of_texts(
        ["weather forecast city", "stock price ticker", "weather weather weather"], k1=1.2, b=0.75
    )
    ceiling = index.ceiling("weather forecast")
    assert ceiling > 0
    assert index.ceiling("zebra") == 0.0
    share = index.scores("weather forecast") / ceiling
    assert 0 < share[0] < 1
    assert share[1] == 0
    assert share[2] < share[0]


@pytest.mark.parametrize(
    "text",
    [
        "Send an e-mail to the team's inbox, then book 2 flights (NYC->SFO)!",
        "getWeatherForecast for_the_next week: it's ÜBER cold in Zürich",
        "I'm planning a trip; can you also find the world rankings of the top players for 2022?",
        "",
    ],
)
def test_tokens_are_bm25s_own_tokenisation(text: str) -> None:
    """The same tokens as bm25s.tokenize with our stop words, without its per-call overhead."""
    split = retrieval._SEPARATORS.sub(" ", retrieval._CAMEL.sub(r"\1 \2", text))
    expected = bm25s.tokenize([split], stopwords=list(retrieval.STOPWORDS), return_ids=False, show_progress=False)
    assert retrieval.tokenize([text]) == expected


def test_stop_words_hold_bm25s_english_list_without_importing_bm25s() -> None:
    """bm25s's list is read from its module alone: a selector never runs the package (scipy's sparse matrices)."""
    assert set(bm25s.stopwords.STOPWORDS_EN) <= retrieval.STOPWORDS
    code = "import sys, toolsel.services.selector.app; print('bm25s' in sys.modules, 'scipy.sparse' in sys.modules)"
    ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert ran.stdout.split() == ["False", "False"]


def test_the_words_a_request_is_phrased_in_are_not_matched() -> None:
    """Pronouns, auxiliaries and contractions say nothing about the tool asked for."""
    assert retrieval.tokenize(["Could you help me find what I'd need? I'm sure they'll book it"]) == [
        ["help", "find", "need", "sure", "book"]
    ]
