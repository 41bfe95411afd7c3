"""The registry: every signal by name, each showing in its own breakdown field, weights checked by name."""

import pytest

from toolsel.contracts import ScoreBreakdown
from toolsel.services.selector.signals.registry import RERANK, RETRIEVAL, SHOWN_ELSEWHERE
from toolsel.settings import FUSION_WEIGHTS, RERANK_WEIGHTS, Settings


def test_the_signals_in_the_order_they_are_summed() -> None:
    assert list(RETRIEVAL) == ["vector", "bm25", "history"]
    assert list(RERANK) == ["relevance", "quality", "recency", "popularity", "user_history", "performance", "fitness"]
    assert all(name == signal.name for name, signal in [*RETRIEVAL.items(), *RERANK.items()])


def test_each_shown_signal_fills_its_own_breakdown_field() -> None:
    fields = [s.field for s in [*RETRIEVAL.values(), *RERANK.values()] if s.field is not None]
    assert len(fields) == len(set(fields))
    assert set(fields) | SHOWN_ELSEWHERE == set(ScoreBreakdown.model_fields)


def test_the_default_weights_name_registered_signals() -> None:
    assert set(FUSION_WEIGHTS) == set(RETRIEVAL)
    assert set(RERANK_WEIGHTS) == set(RERANK)


@pytest.mark.parametrize(
    ("weights", "message"),
    [
        ({"rerank_weights": {"similarity": 0.5}}, "rerank_weights\n.*no signal named similarity; the signals are"),
        ({"fusion_weights": {"cosine": 1.0, "bm26": 1.0}}, "fusion_weights\n.*no signal named bm26, cosine"),
    ],
)
def test_a_weight_for_an_unknown_signal_is_refused_with_the_settings(
    weights: dict[str, dict[str, float]], message: str
) -> None:
    """Refused when the settings are read, so a service does not start (the selector refused it only once it
    was built, exiting 1 with no variable named)."""
    with pytest.raises(ValueError, match=message):
        Settings(**weights)  # type: ignore[arg-type]
