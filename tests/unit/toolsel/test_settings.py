"""Settings refuse values that would break a selection, with pydantic's typed error naming the field."""

import pytest
from pydantic import ValidationError

from toolsel.settings import Settings


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("usage_declared_prior", -1.0),
        ("usage_declared_weight", 1.5),
        ("fusion_zscore_bm25_factor", -0.1),
        ("fusion", "harmonic"),
        ("embedding_workers", 0),
        ("select_concurrency", 0),
        ("learner_batches_in_flight", 0),
    ],
)
def test_a_bad_value_is_refused_naming_its_setting(field: str, value: object) -> None:
    with pytest.raises(ValidationError) as refused:
        Settings(**{field: value})
    assert refused.value.errors()[0]["loc"] == (field,)


@pytest.mark.parametrize(("name", "value"), [("prior_alpha", 0.0), ("prior_beta", -1.0), ("not_called_penalty", -0.5)])
def test_a_prior_or_penalty_that_breaks_the_beta_posterior_is_refused(name: str, value: float) -> None:
    """A Beta prior of 0 or less made every posterior mean NaN; a negative penalty raised a tool for being ignored."""
    with pytest.raises(ValidationError, match=name):
        Settings(**{name: value})  # type: ignore[arg-type]
