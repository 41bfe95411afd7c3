"""Tool shapes: names both LLM APIs accept and map back, and parameter schemas with an object root."""

import hashlib
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from jsonschema import Draft7Validator, Draft202012Validator

from toolsel.contracts import ScoreBreakdown, ScoredTool, ToolRef
from toolsel.tool_shapes import (
    NAME_PATTERN,
    ROOT_KEYWORDS_REFUSED,
    ToolNames,
    anthropic_tools,
    function_name,
    openai_tools,
    parameters_schema,
)

plugin_ids = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}", fullmatch=True)
tool_names = st.from_regex(r"[^\s/\x00-\x1f\x7f-\x9f][^/\x00-\x1f\x7f-\x9f]{0,127}", fullmatch=True)


def scored(plugin: str, name: str, parameters: dict[str, Any], hint: str | None = None) -> ScoredTool:
    return ScoredTool(
        plugin_id=plugin,
        name=name,
        description="Does it.",
        parameters=parameters,
        score=0.5,
        breakdown=ScoreBreakdown(),
        usage_hint=hint,
    )


def test_a_valid_name_is_plugin_double_underscore_name() -> None:
    assert function_name(ToolRef(plugin_id="mail", name="send_email")) == "mail__send_email"


@pytest.mark.parametrize(
    ("plugin", "name"),
    [("mail.v2", "send email"), ("a:b", "x-yé"), ("p" * 60, "n" * 60)],
)
def test_invalid_characters_and_long_names_become_valid_and_distinct(plugin: str, name: str) -> None:
    made = function_name(ToolRef(plugin_id=plugin, name=name))
    assert NAME_PATTERN.match(made)
    assert made != function_name(ToolRef(plugin_id=plugin, name=name + "x"))


@given(plugin_ids, tool_names)
def test_every_tool_gets_a_valid_name_that_maps_back(plugin: str, name: str) -> None:
    ref = ToolRef(plugin_id=plugin, name=name)
    made = function_name(ref)
    assert NAME_PATTERN.match(made), made
    assert ToolNames.of([ref]).resolve(made) == ref


def test_a_double_underscore_in_either_part_cannot_make_two_tools_one_name() -> None:
    """``P/mail__forecast`` and ``P__mail/forecast`` would both be ``P__mail__forecast``: neither keeps it."""
    left, right = ToolRef(plugin_id="P", name="mail__forecast"), ToolRef(plugin_id="P__mail", name="forecast")
    names = ToolNames.of([left, right])
    assert len(names.tools) == 2
    assert (names.resolve(function_name(left)), names.resolve(function_name(right))) == (left, right)
    assert "P__mail__forecast" not in names.tools
    assert NAME_PATTERN.match(function_name(left))


def test_a_hashed_name_is_never_another_tools_plain_name() -> None:
    """``mail/send.email`` is hashed; ``mail/send_email_<that hash>`` is plain, and must not read the same."""
    hashed = ToolRef(plugin_id="mail", name="send.email")
    digest = hashlib.sha256(hashed.key.encode()).hexdigest()[:8]
    plain = ToolRef(plugin_id="mail", name=f"send_email_{digest}")
    assert function_name(plain) == f"mail__send_email_{digest}"
    assert function_name(hashed) != function_name(plain)


@given(st.from_regex(r"[ab][ab_]{2,10}", fullmatch=True))
def test_two_tools_never_share_a_name(text: str) -> None:
    """Every tool whose ``plugin__name`` would read ``text`` (any ``__`` in it taken as the separator, underscores
    running into it from either side) gets a name of its own."""
    cuts = [at for at in range(1, len(text) - 2) if text[at : at + 2] == "__"]
    refs = [ToolRef(plugin_id=text[:at], name=text[at + 2 :]) for at in cuts]
    assert len({function_name(ref) for ref in refs}) == len(refs)


def test_names_that_clean_to_the_same_text_stay_apart() -> None:
    a, b = ToolRef(plugin_id="mail", name="send.email"), ToolRef(plugin_id="mail", name="send:email")
    names = ToolNames.of([a, b])
    assert len(names.tools) == 2
    assert {names.resolve(function_name(a)), names.resolve(function_name(b))} == {a, b}
    assert names.get("mail__unknown") is None


@pytest.mark.parametrize(
    "schema",
    [
        {},
        {"type": "string"},
        {"properties": {"q": {"type": "string"}}, "required": ["q", "gone"]},
        {"type": "object", "anyOf": [{"required": ["a"]}], "properties": {"a": {"type": "string"}}},
        {"type": "object", "properties": "not a mapping", "required": "q"},
        {"oneOf": [{"type": "object"}], "enum": [1], "const": 1, "not": {}, "allOf": []},
    ],
)
def test_schemas_get_an_object_root_without_refused_keywords(schema: dict[str, Any]) -> None:
    cleaned = parameters_schema(schema)
    assert cleaned["type"] == "object"
    assert isinstance(cleaned["properties"], dict)
    assert not set(ROOT_KEYWORDS_REFUSED) & set(cleaned)
    assert set(cleaned.get("required", [])) <= set(cleaned["properties"])


def test_a_root_choice_of_objects_keeps_every_argument() -> None:
    by_id = {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}
    by_name = {"type": "object", "properties": {"name": {"type": "string"}, "id": {"type": "integer"}}}
    merged = parameters_schema({"anyOf": [by_id, by_name]})
    assert merged["properties"] == {"id": {"type": "string"}, "name": {"type": "string"}}
    assert "required" not in merged  # neither argument is needed by every choice
    assert merged["description"] == "Give one of {id} | {name, id}."
    both = parameters_schema({"oneOf": [by_id, {**by_name, "required": ["id", "name"]}]})
    assert both["required"] == ["id"]


DRAFT_07 = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "definitions": {"Day": {"type": "string", "format": "date"}},
    "properties": {
        "dates": {
            "type": "array",
            "items": [{"$ref": "#/definitions/Day"}, {"type": "string"}],
            "additionalItems": False,
        },
        "card": {"type": "string"},
        "billing": {"type": "string"},
        "tags": {"type": "array", "items": {"type": "string"}, "additionalItems": {"type": "integer"}},
    },
    "dependencies": {"card": ["billing"], "billing": {"required": ["card"]}},
}


def test_an_older_drafts_schema_goes_out_in_2020_12() -> None:
    """The Messages API refuses the whole request when one tool's schema is not valid in 2020-12."""
    shaped = parameters_schema(DRAFT_07)
    Draft202012Validator.check_schema(shaped)
    assert "$schema" not in shaped
    assert shaped["properties"]["dates"] == {
        "type": "array",
        "prefixItems": [{"$ref": "#/definitions/Day"}, {"type": "string"}],
        "items": False,
    }
    assert shaped["properties"]["tags"] == {"type": "array", "items": {"type": "string"}}
    assert (shaped["dependentRequired"], shaped["dependentSchemas"]) == (
        {"card": ["billing"]},
        {"billing": {"required": ["card"]}},
    )
    as_2020 = Draft202012Validator(shaped)
    for arguments in ({"dates": ["2026-01-01", "x"]}, {"card": "4242", "billing": "Rome"}):
        assert as_2020.is_valid(arguments)
        assert Draft7Validator(DRAFT_07).is_valid(arguments)
    for arguments in ({"dates": ["a", "b", "c"]}, {"card": "4242"}, {"billing": "Rome"}):
        assert not as_2020.is_valid(arguments)
        assert not Draft7Validator(DRAFT_07).is_valid(arguments)
    for tool in (*anthropic_tools([scored("p", "t", DRAFT_07)]), *openai_tools([scored("p", "t", DRAFT_07)], True)):
        Draft202012Validator.check_schema(tool.get("input_schema") or tool["function"]["parameters"])
    current = {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object", "properties": {}}
    assert parameters_schema(current) == {"type": "object", "properties": {}}


def test_a_root_all_of_is_merged_with_every_argument() -> None:
    """Every part of an ``allOf`` applies: the merged object takes all their properties and requires what any does."""
    booking = {"type": "object", "properties": {"hotel_id": {"type": "string"}}, "required": ["hotel_id"]}
    schema = {
        "$defs": {"Stay": {"type": "object", "properties": {"nights": {"type": "integer", "minimum": 1}}}},
        "allOf": [booking, {"$ref": "#/$defs/Stay"}, {"properties": {"hotel_id": {"minLength": 3}}}],
    }
    merged = parameters_schema(schema)
    assert "allOf" not in merged
    assert merged["properties"] == {
        "hotel_id": {"allOf": [{"type": "string"}, {"minLength": 3}]},
        "nights": {"type": "integer", "minimum": 1},
    }
    assert merged["required"] == ["hotel_id"]
    Draft202012Validator.check_schema(merged)
    assert Draft202012Validator(merged).is_valid({"hotel_id": "h-12", "nights": 2})
    assert not Draft202012Validator(merged).is_valid({"hotel_id": "h"})


def test_a_root_ref_is_inlined() -> None:
    schema = {
        "$ref": "#/$defs/Query",
        "$defs": {"Query": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}},
    }
    cleaned = parameters_schema(schema)
    assert (cleaned["properties"], cleaned["required"]) == ({"q": {"type": "string"}}, ["q"])
    choice = parameters_schema({"anyOf": [{"$ref": "#/definitions/A"}], "definitions": schema["$defs"] | {"A": {}}})
    assert choice["properties"] == {}


def test_a_clean_schema_is_kept_and_never_shared() -> None:
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {"q": {"type": "string", "enum": ["a"]}},
        "required": ["q"],
    }
    cleaned = parameters_schema(schema)
    assert cleaned == schema
    cleaned["properties"]["q"]["enum"].append("b")
    assert schema["properties"]["q"]["enum"] == ["a"]


def test_openai_and_anthropic_shapes() -> None:
    tool = scored("mail", "send_email", {"type": "object", "properties": {"to": {"type": "string"}}}, "Say hi.")
    (openai,) = openai_tools([tool])
    assert openai["type"] == "function"
    assert set(openai["function"]) == {"name", "description", "parameters"}
    assert openai["function"]["name"] == "mail__send_email"
    assert openai["function"]["description"].endswith("Usage: Say hi.")
    (anthropic,) = anthropic_tools([tool])
    assert set(anthropic) == {"name", "description", "input_schema"}
    assert anthropic["input_schema"] == openai["function"]["parameters"]
