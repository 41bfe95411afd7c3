"""Schema hygiene at sync: declared schemas are rewritten to today's forms where that loses nothing, and refused
with the path of their fault where they are not JSON Schema."""

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from jsonschema.validators import Draft202012Validator
from pydantic import ValidationError

from toolsel.contracts import ToolSpec
from toolsel.contracts.schemas import checked_schema

TYPES = ("string", "integer", "number", "boolean", "object", "array", "null")
NAMES = st.text(alphabet="abcdefghij_", min_size=1, max_size=6)


def shouted(schema: Any) -> Any:
    """The same schema with every ``type`` in upper case (as some generators write them)."""
    if not isinstance(schema, dict):
        return schema
    out = {k: shouted(v) if k in ("items", "not") else v for k, v in schema.items()}
    if isinstance(out.get("type"), str):
        out["type"] = out["type"].upper()
    for key in ("properties",):
        if key in out:
            out[key] = {name: shouted(sub) for name, sub in out[key].items()}
    for key in ("anyOf", "oneOf"):
        if key in out:
            out[key] = [shouted(sub) for sub in out[key]]
    return out


schemas = st.recursive(
    st.builds(lambda t, d: {"type": t, "description": d}, st.sampled_from(TYPES), st.text(max_size=10)),
    lambda inner: st.one_of(
        st.builds(lambda p: {"type": "object", "properties": p}, st.dictionaries(NAMES, inner, max_size=4)),
        st.builds(lambda i: {"type": "array", "items": i}, inner),
        st.builds(lambda options: {"anyOf": options}, st.lists(inner, min_size=1, max_size=3)),
    ),
    max_leaves=12,
)


def property_paths(schema: Any, at: str = "") -> set[str]:
    if not isinstance(schema, dict):
        return set()
    found: set[str] = set()
    for name, sub in schema.get("properties", {}).items():
        found |= {f"{at}/{name}"} | property_paths(sub, f"{at}/{name}")
    for key in ("items", "not"):
        found |= property_paths(schema.get(key), f"{at}/{key}")
    for i, sub in enumerate(schema.get("anyOf", [])):
        found |= property_paths(sub, f"{at}/anyOf{i}")
    return found


@given(schemas)
def test_a_valid_schema_passes_unchanged_and_one_in_upper_case_comes_back_the_same(schema: dict[str, Any]) -> None:
    assert checked_schema(schema) == schema
    assert checked_schema(shouted(schema)) == schema  # no argument lost, every type restored
    assert property_paths(checked_schema(shouted(schema))) == property_paths(schema)
    Draft202012Validator.check_schema(checked_schema(shouted(schema)))


def test_draft_04_bounds_become_todays_and_data_is_left_alone() -> None:
    declared = {
        "$schema": "http://json-schema.org/draft-04/schema#",
        "type": "object",
        "properties": {
            "pages": {"type": "array", "items": {"type": "integer", "minimum": 1, "exclusiveMinimum": True}},
            "ratio": {"type": "number", "maximum": 1, "exclusiveMaximum": False},
            "mode": {"type": "string", "enum": ["STRING", "Object"], "default": {"type": "OBJECT"}},
        },
    }
    assert checked_schema(declared) == {
        "type": "object",
        "properties": {
            "pages": {"type": "array", "items": {"type": "integer", "exclusiveMinimum": 1}},
            "ratio": {"type": "number", "maximum": 1},
            "mode": {"type": "string", "enum": ["STRING", "Object"], "default": {"type": "OBJECT"}},
        },
    }


@pytest.mark.parametrize(
    ("parameters", "where"),
    [
        ({"type": "strng"}, "at type:"),
        ({"type": "object", "properties": {"q": {"pattern": "("}}}, "at properties/q/pattern:"),
        ({"type": "object", "required": "q"}, "at required:"),
        ({"type": "object", "properties": {"n": {"minimum": "one"}}}, "at properties/n/minimum:"),
    ],
)
def test_a_schema_that_is_not_json_schema_is_refused_at_sync_with_its_path(
    parameters: dict[str, Any], where: str
) -> None:
    with pytest.raises(ValidationError) as refused:
        ToolSpec(name="t", description="d", parameters=parameters)
    assert "parameters" in str(refused.value)
    assert where in str(refused.value)


@pytest.mark.parametrize(
    ("schema", "where"),
    [
        ({"$schema": ["x"], "type": "object"}, "at $schema:"),  # unhashable: a TypeError in jsonschema's look-up
        ({"$schema": 5, "type": "object"}, "at $schema:"),  # not text: an AttributeError there
        ({"type": "string", "pattern": "a{4294967296}"}, "at pattern:"),  # too large for re: an OverflowError
        ({"type": "object", "patternProperties": {"a{4294967296}": {}}}, "at patternProperties:"),
    ],
)
@pytest.mark.parametrize("field", ["parameters", "return_schema"])
def test_a_hostile_schema_is_refused_as_invalid_with_where(schema: dict[str, Any], where: str, field: str) -> None:
    with pytest.raises(ValidationError) as refused:
        ToolSpec.model_validate({"name": "t", "description": "d", field: schema})
    assert refused.value.errors()[0]["loc"] == (field,)
    assert where in str(refused.value)


def test_a_schema_too_deep_to_check_is_a_value_error_not_a_recursion_error() -> None:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(5000):  # deeper than the store allows (``storable_json``); checked_schema must cope alone
        schema = {"type": "array", "items": schema}
    with pytest.raises(ValueError, match="cannot be checked"):
        checked_schema(schema)
