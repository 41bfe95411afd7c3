"""OpenAI strict mode: a tool gets ``strict: true`` exactly where its schema converts without losing a
constraint, and every strict schema keeps strict mode's rules and every argument of the original."""

from collections.abc import Iterator
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from tests.unit.toolsel.test_tool_shapes import scored
from toolsel.tool_shapes import (
    STRICT_KEYWORDS,
    openai_function,
    openai_tools,
    parameters_schema,
    strict_parameters,
    unstrict_arguments,
)

names = st.from_regex(r"[a-z][a-z_]{0,7}", fullmatch=True)
scalars = st.one_of(
    st.builds(lambda t: {"type": t}, st.sampled_from(["string", "integer", "number", "boolean"])),
    st.just({"type": "string", "format": "date"}),
    st.just({"type": "string", "enum": ["a", "b"]}),
    st.just({"type": "integer", "minimum": 0, "maximum": 9}),
)
lossy = st.sampled_from(
    [
        {"type": "string", "minLength": 1},
        {"type": "string", "format": "uri"},
        {"allOf": [{"type": "string"}]},
        {"description": "anything"},
        {"type": "object", "additionalProperties": True},
        {"type": "object"},
        {"type": "object", "additionalProperties": {"type": "string"}},
        {"type": "string", "default": "x"},
    ]
)


def objects(children: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    @st.composite
    def build(draw: st.DrawFn) -> dict[str, Any]:
        properties = draw(st.dictionaries(names, children, max_size=4))
        required = draw(st.lists(st.sampled_from(sorted(properties)), unique=True)) if properties else []
        shape: dict[str, Any] = {"type": "object", "properties": properties}
        if required:
            shape["required"] = required
        if draw(st.booleans()) or not properties:  # without properties it is free-form unless closed
            shape["additionalProperties"] = False
        return shape

    return build()


def nested(leaves: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    return st.recursive(
        leaves,
        lambda children: st.one_of(
            objects(children),
            st.builds(lambda items: {"type": "array", "items": items}, children),
            st.builds(lambda a, b: {"anyOf": [a, b]}, children, children),
        ),
        max_leaves=8,
    )


convertible = objects(nested(scalars))
anything = objects(nested(st.one_of(scalars, lossy)))


def subschemas(schema: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The schema and every schema inside it (through properties, items and anyOf options)."""
    yield schema
    for sub in [*(schema.get("properties") or {}).values(), *schema.get("anyOf", []), schema.get("items")]:
        if isinstance(sub, dict):
            yield from subschemas(sub)


def property_paths(schema: Any, at: str = "") -> set[str]:
    """Every declared property, by its path through properties, items and anyOf options."""
    found: set[str] = set()
    if not isinstance(schema, dict):
        return found
    for name, sub in (schema.get("properties") or {}).items():
        found |= {f"{at}/{name}"} | property_paths(sub, f"{at}/{name}")
    found |= property_paths(schema.get("items"), f"{at}[]")
    for option in schema.get("anyOf") or []:
        found |= property_paths(option, at)
    return found


def keeps_strict_rules(schema: dict[str, Any]) -> None:
    Draft202012Validator.check_schema(schema)
    for sub in subschemas(schema):
        assert set(sub) <= STRICT_KEYWORDS
        assert "type" in sub or "anyOf" in sub
        if "properties" in sub:
            assert sub["additionalProperties"] is False
            assert sub["required"] == list(sub["properties"])


@given(convertible)
def test_a_schema_strict_mode_can_hold_becomes_strict_without_losing_an_argument(schema: dict[str, Any]) -> None:
    shaped = openai_function(scored("p", "t", schema), strict=True)["function"]
    assert shaped["strict"] is True
    keeps_strict_rules(shaped["parameters"])
    assert property_paths(shaped["parameters"]) == property_paths(parameters_schema(schema))


@given(anything)
def test_strict_or_else_the_plain_shape_never_a_lossy_strict_one(schema: dict[str, Any]) -> None:
    shaped = openai_function(scored("p", "t", schema), strict=True)["function"]
    if shaped.get("strict"):
        keeps_strict_rules(shaped["parameters"])
        assert property_paths(shaped["parameters"]) == property_paths(parameters_schema(schema))
    else:
        assert shaped["parameters"] == parameters_schema(schema)


@given(convertible, lossy)
def test_one_unsupported_constraint_anywhere_keeps_the_plain_shape(schema: dict[str, Any], bad: dict[str, Any]) -> None:
    spoiled = {**schema, "properties": {**schema["properties"], "spoiler": bad}}
    shaped = openai_function(scored("p", "t", spoiled), strict=True)["function"]
    assert "strict" not in shaped
    assert shaped["parameters"] == parameters_schema(spoiled)


def test_an_optional_argument_becomes_required_and_nullable() -> None:
    schema = {
        "type": "object",
        "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["c", "f"]}},
        "required": ["city"],
    }
    [shaped] = openai_tools([scored("p", "weather", schema)], strict=True)
    assert shaped["function"]["strict"] is True
    assert shaped["function"]["parameters"] == {
        "type": "object",
        "properties": {"city": {"type": "string"}, "unit": {"type": ["string", "null"], "enum": ["c", "f", None]}},
        "required": ["city", "unit"],
        "additionalProperties": False,
    }
    validator = Draft202012Validator(shaped["function"]["parameters"])
    assert validator.is_valid({"city": "Rome", "unit": None})
    assert not validator.is_valid({"city": "Rome"})


def test_without_strict_the_shape_is_unchanged() -> None:
    schema = {"type": "object", "properties": {"city": {"type": "string"}}}
    [shaped] = openai_tools([scored("p", "weather", schema)])
    assert "strict" not in shaped["function"]
    assert shaped["function"]["parameters"] == parameters_schema(schema)


@given(convertible)
def test_the_nulls_strict_mode_sends_for_left_out_arguments_are_dropped_again(schema: dict[str, Any]) -> None:
    original = parameters_schema(schema)
    everything_null = dict.fromkeys(original["properties"])
    kept = unstrict_arguments(everything_null, original)
    assert set(kept) == set(original.get("required", []))


def test_nested_and_listed_arguments_lose_only_their_strict_nulls() -> None:
    schema = {
        "type": "object",
        "properties": {
            "stops": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"city": {"type": "string"}, "note": {"type": ["string", "null"]}},
                    "required": ["city"],
                },
            },
            "unit": {"type": "string"},
        },
        "required": ["stops"],
    }
    called = {"stops": [{"city": "Rome", "note": None}, {"city": "Pisa"}], "unit": None}
    assert unstrict_arguments(called, schema) == {"stops": [{"city": "Rome", "note": None}, {"city": "Pisa"}]}


def test_a_free_form_object_is_never_closed() -> None:
    """``{"type": "object"}`` takes any keys; strict mode closed it, refusing what the tool accepts."""
    headers = {"type": "object", "properties": {"url": {"type": "string"}, "headers": {"type": "object"}}}
    assert strict_parameters(headers) is None
    assert strict_parameters({"type": "object", "description": "anything the tool takes"}) is None
    [shaped] = openai_tools([scored("p", "fetch", headers)], strict=True)
    assert "strict" not in shaped["function"]
    assert Draft202012Validator(shaped["function"]["parameters"]).is_valid({"headers": {"Authorization": "x"}})
    closed = {"type": "object", "properties": {}, "additionalProperties": False}
    assert strict_parameters(closed) == {**closed, "required": []}


def test_a_root_all_of_strict_only_where_its_parts_merge_exactly() -> None:
    parts = [
        {"type": "object", "properties": {"hotel_id": {"type": "string"}}, "required": ["hotel_id"]},
        {"properties": {"nights": {"type": "integer"}}},
    ]
    strict = strict_parameters({"allOf": parts})
    assert strict is not None
    assert strict["properties"] == {"hotel_id": {"type": "string"}, "nights": {"type": ["integer", "null"]}}
    assert strict["required"] == ["hotel_id", "nights"]
    closed_part = [parts[0], {**parts[1], "additionalProperties": False}]
    assert strict_parameters({"allOf": closed_part}) is None
    assert strict_parameters({"allOf": [{"type": "string"}]}) is None


ADDRESS = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "zip": {"type": "string"}},
    "required": ["city"],
}


def test_the_strict_nulls_inside_refs_and_optional_objects_are_dropped_again() -> None:
    """A pydantic model's schema: its nested models are ``$ref``s, an optional one inside ``anyOf`` with null."""
    schema = {
        "type": "object",
        "$defs": {"Address": ADDRESS},
        "properties": {
            "address": {"$ref": "#/$defs/Address"},
            "billing": {"anyOf": [{"$ref": "#/$defs/Address"}, {"type": "null"}]},
            "stops": {"type": "array", "items": {"$ref": "#/$defs/Address"}},
        },
        "required": ["address"],
    }
    strict = strict_parameters(schema)
    assert strict is not None
    called = {
        "address": {"city": "Rome", "zip": None},
        "billing": {"city": "Pisa", "zip": None},
        "stops": [{"city": "Siena", "zip": None}],
    }
    assert Draft202012Validator(strict).is_valid(called)
    plain = unstrict_arguments(called, parameters_schema(schema))
    assert plain == {"address": {"city": "Rome"}, "billing": {"city": "Pisa"}, "stops": [{"city": "Siena"}]}
    assert Draft202012Validator(schema).is_valid(plain)
    assert unstrict_arguments({"address": {"city": "Rome"}, "billing": None}, schema) == {"address": {"city": "Rome"}}
