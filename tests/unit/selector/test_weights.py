"""The weights settings: one name per signal, each given weight replacing its default alone, none negative."""

import pytest

from toolsel.settings import FUSION_WEIGHTS, RERANK_WEIGHTS, Settings


def test_the_defaults_are_the_seeds() -> None:
    assert Settings().rerank_weights == {
        "relevance": 0.5,
        "quality": 0.35,
        "recency": 0.15,
        "popularity": 0.0,
        "user_history": 0.0,
        "performance": 0.0,
        "fitness": 0.3,
    }
    assert Settings().fusion_weights == {"vector": 1.0, "bm25": 2.0, "history": 0.0}


def test_a_weight_given_replaces_its_default_only() -> None:
    assert Settings(rerank_weights={"popularity": 0.2}).rerank_weights == {**RERANK_WEIGHTS, "popularity": 0.2}
    assert Settings(fusion_weights={"history": 0.0}).fusion_weights == {**FUSION_WEIGHTS, "history": 0.0}


def test_weights_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLSEL_RERANK_WEIGHTS", '{"fitness": 0}')
    assert Settings().rerank_weights == {**RERANK_WEIGHTS, "fitness": 0.0}


@pytest.mark.parametrize("setting", ["rerank_weights", "fusion_weights"])
@pytest.mark.parametrize("weight", [-0.1, -1.0, -0.001])
def test_weights_reject_negatives(setting: str, weight: float) -> None:
    with pytest.raises(ValueError, match=">= 0"):
        Settings(**{setting: {"relevance" if setting == "rerank_weights" else "bm25": weight}})  # type: ignore[arg-type]


def test_weights_accept_zero() -> None:
    assert Settings(rerank_weights={"relevance": 0}).rerank_weights["relevance"] == 0
