"""The wire types refuse at the edge what PostgreSQL cannot store, so no validated event can fail in the store:
NUL and lone surrogates in text, timestamps out of range or without an offset, integers beyond ``int``,
non-finite numbers and deep JSON. Hypothesis throws arbitrary values at them."""

import json
import math
from datetime import UTC, datetime, timedelta, timezone
from typing import Any
from uuid import uuid4

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter, ValidationError

from toolsel.contracts import FeedbackEvent, OutcomeEvent, PluginSync, SelectionEvent, SelectRequest
from toolsel.contracts.common import (
    EARLIEST,
    INT32_MAX,
    LATEST,
    MAX_JSON_DEPTH,
    Count,
    JsonObject,
    Text,
    Timestamp,
)

TEXT, TIME, COUNT, JSON = TypeAdapter(Text), TypeAdapter(Timestamp), TypeAdapter(Count), TypeAdapter(JsonObject)


def _storable(text: str) -> bool:
    return "\x00" not in text and not any(0xD800 <= ord(c) <= 0xDFFF for c in text)


@settings(max_examples=500)
@given(st.text(alphabet=st.characters(codec=None, min_codepoint=0)))
def test_text_is_refused_exactly_when_it_holds_nul_or_a_lone_surrogate(text: str) -> None:
    if _storable(text):
        assert TEXT.validate_python(text) == text
        text.encode("utf-8")
    else:
        with pytest.raises(ValidationError, match="cannot be stored"):
            TEXT.validate_python(text)


@settings(max_examples=500)
@given(st.datetimes(timezones=st.builds(timezone, st.timedeltas(-timedelta(hours=23), timedelta(hours=23)))))
def test_a_timestamp_is_kept_in_utc_within_range_or_refused(moment: datetime) -> None:
    try:
        utc = moment.astimezone(UTC)
    except OverflowError:
        utc = None
    if utc is not None and EARLIEST <= utc < LATEST:
        stored = TIME.validate_python(moment)
        assert stored == moment
        assert stored.tzinfo is UTC
    else:
        with pytest.raises(ValidationError):
            TIME.validate_python(moment)


@pytest.mark.parametrize(
    "moment", ["9999-12-31T23:59:59-14:00", "0001-01-01T00:00:00+14:00", "2024-05-01T12:00:00", "1969-12-31T23:59Z"]
)
def test_timestamps_postgres_or_arithmetic_would_choke_on_are_refused(moment: str) -> None:
    with pytest.raises(ValidationError):
        TIME.validate_json(json.dumps(moment))


@given(st.integers())
def test_counts_fit_a_postgres_int(value: int) -> None:
    if 0 <= value <= INT32_MAX:
        assert COUNT.validate_python(value) == value
    else:
        with pytest.raises(ValidationError):
            COUNT.validate_python(value)


def _depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(_depth, value), default=0)
    return 0


def _clean(value: Any) -> bool:
    if isinstance(value, str):
        return _storable(value)
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(_storable(k) and _clean(v) for k, v in value.items())
    if isinstance(value, list):
        return all(map(_clean, value))
    return True


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(st.characters(codec=None)),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(st.characters(codec=None)), inner, max_size=3),
    max_leaves=30,
)


@settings(max_examples=300)
@given(st.dictionaries(st.text(max_size=5), JSON_VALUES, max_size=4))
def test_a_json_object_is_refused_exactly_when_jsonb_could_not_hold_it(value: dict[str, Any]) -> None:
    if _clean(value) and _depth(value) <= MAX_JSON_DEPTH + 1:
        assert JSON.validate_python(value) == value
    else:
        with pytest.raises(ValidationError):
            JSON.validate_python(value)


def test_json_nested_deeper_than_the_limit_is_refused() -> None:
    deep: dict[str, Any] = {}
    for _ in range(1000):
        deep = {"a": [deep]}
    with pytest.raises(ValidationError, match="nested deeper"):
        JSON.validate_python(deep)


def _selection(**changes: Any) -> dict[str, Any]:
    event = {
        "tenant_id": "t",
        "query": "q",
        "tier": "free",
        "context_key": "c",
        "method": "hybrid",
        "tools": [{"plugin_id": "p", "name": "n", "rank": 0, "score": 0.5}],
        "candidate_count": 1,
        "latency_ms": 1.0,
        "tokens_selected": 1,
        "tokens_catalog": 1,
    }
    return event | changes


@pytest.mark.parametrize(
    ("model", "payload"),
    [
        (SelectionEvent, _selection(query="a\x00b")),
        (SelectionEvent, _selection(page="/in\x00box")),
        (SelectionEvent, _selection(candidate_count=2**31)),
        (SelectionEvent, _selection(occurred_at="9999-12-31T23:59:59-14:00")),
        (SelectionEvent, _selection(occurred_at="2024-05-01T12:00:00")),
        (SelectionEvent, _selection(tools=[{"plugin_id": "p", "name": "n", "rank": 0, "score": "NaN"}])),
        (
            SelectionEvent,
            _selection(tools=[{"plugin_id": "p", "name": "n", "rank": 0, "score": 1, "similarity": "Infinity"}]),
        ),
        (SelectionEvent, _selection(tools=[{"plugin_id": "p", "name": "n", "rank": 0, "score": 1, "similarity": "x"}])),
        (
            SelectionEvent,
            _selection(tools=[{"plugin_id": "p", "name": "n", "rank": 0, "score": 1, "sub_query": "a\x00"}]),
        ),
        (SelectionEvent, _selection(tools=[{"plugin_id": "p", "name": "n", "rank": 0, "score": 1, "sub_query": " "}])),
        (
            SelectionEvent,
            _selection(tools=[{"plugin_id": "p", "name": "n", "rank": 0, "score": 1, "sub_query": "x" * 2001}]),
        ),
        (
            OutcomeEvent,
            {
                "selection_id": str(uuid4()),
                "calls": [{"plugin_id": "p", "name": "n", "success": False, "error": "boom\x00"}],
            },
        ),
        (OutcomeEvent, {"selection_id": str(uuid4()), "calls": [{"plugin_id": "p", "name": "n\x00", "success": True}]}),
        (FeedbackEvent, {"plugin_id": "p", "name": "n", "rating": 1.0, "comment": "nice\x00"}),
        (SelectRequest, {"query": "weather\x00"}),
        (SelectRequest, {"query": "weather \ud800"}),
        (PluginSync, {"plugin_id": "p", "plugin_version": "1.0.0", "tools": [{"name": "t", "description": "d\x00"}]}),
        (
            PluginSync,
            {
                "plugin_id": "p",
                "plugin_version": "1.0.0",
                "tools": [{"name": "t", "description": "d", "parameters": {"x": "\ud800"}}],
            },
        ),
    ],
)
def test_the_poison_pills_found_by_fault_injection_are_refused_by_the_contracts(
    model: type[Any], payload: dict[str, Any]
) -> None:
    with pytest.raises(ValidationError):
        model.model_validate(payload)
