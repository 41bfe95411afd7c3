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
