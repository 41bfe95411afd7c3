"""The history is kept at least as long as the events stream keeps an event, or for good: a stored event's row is
what recognises a copy the stream delivers again."""

import pytest
from pydantic import ValidationError

from toolsel.settings import Settings


@pytest.mark.parametrize(("kept", "stream"), [(7.0, 30.0), (30.0, 30.5), (90.0, 365.0)])
def test_a_history_kept_for_less_than_the_streams_age_is_refused_naming_both(kept: float, stream: float) -> None:
    with pytest.raises(ValidationError) as refused:
        Settings(history_retention_days=kept, events_max_age_days=stream)
    said = str(refused.value)
    assert "TOOLSEL_HISTORY_RETENTION_DAYS" in said
    assert "TOOLSEL_EVENTS_MAX_AGE_DAYS" in said


@pytest.mark.parametrize(("kept", "stream"), [(0.0, 30.0), (30.0, 30.0), (90.0, 30.0)])
def test_a_history_kept_for_good_or_as_long_as_the_stream_keeps_events_is_taken(kept: float, stream: float) -> None:
    settings = Settings(history_retention_days=kept, events_max_age_days=stream)
    assert (settings.history_retention_days, settings.events_max_age_days) == (kept, stream)


def test_the_defaults_keep_the_history_past_the_streams_age() -> None:
    defaults = Settings()
    assert defaults.history_retention_days >= defaults.events_max_age_days > 0
    assert defaults.tool_versions_kept >= 1
