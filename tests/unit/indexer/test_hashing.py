"""Content and embedding hashes: equal content, equal hash; only what is embedded moves the embedding hash."""

import hashlib
from typing import Any

import pytest

from toolsel.contracts import ToolSpec
from toolsel.services.indexer.hashing import canonical_json, content_hash, embedding_hash, embedding_text, sha256_hex

BASE: dict[str, Any] = {
    "name": "create_invoice",
    "display_name": "Create invoice",
    "description": "Creates an invoice for a customer.",
    "parameters": {"type": "object", "properties": {"amount": {"type": "number"}, "currency": {"type": "string"}}},
    "tags": ["billing"],
    "example_queries": ["bill the customer", "make an invoice"],
}


def _spec(**overrides: Any) -> ToolSpec:
    return ToolSpec.model_validate({**BASE, **overrides})


def test_canonical_json_sorts_keys_without_whitespace() -> None:
    assert canonical_json({"b": [1, {"d": 2, "c": None}], "a": True}) == '{"a":true,"b":[1,{"c":null,"d":2}]}'


def test_canonical_json_is_key_order_independent() -> None:
    one = {"x": 1, "y": {"p": "a", "q": [1, 2]}}
    two = {"y": {"q": [1, 2], "p": "a"}, "x": 1}
    assert canonical_json(one) == canonical_json(two)
    assert sha256_hex(canonical_json(one)) == sha256_hex(canonical_json(two))


def test_canonical_json_keeps_unicode_literally() -> None:
    text = canonical_json({"city": "東京", "drink": "café"})
    assert text == '{"city":"東京","drink":"café"}'
    assert "\\u" not in text


def test_sha256_hex_is_sha256_of_utf8() -> None:
    assert sha256_hex("café") == hashlib.sha256("café".encode()).hexdigest()
    assert sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


def test_content_hash_ignores_key_order_of_nested_dicts() -> None:
    reordered = {"properties": {"currency": {"type": "string"}, "amount": {"type": "number"}}, "type": "object"}
    assert content_hash(_spec()) == content_hash(_spec(parameters=reordered))


def test_content_hash_differs_for_different_unicode_content() -> None:
    assert content_hash(_spec(description="café")) != content_hash(_spec(description="cafe"))


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("display_name", "New invoice"),
        ("description", "Creates an invoice."),
        ("parameters", {"type": "object", "properties": {}}),
        ("return_schema", {"type": "object"}),
        ("function_summary", "invoice"),
        ("tags", ["billing", "money"]),
        ("when_to_use", "when billing"),
        ("limitations", "EUR only"),
        ("example_queries", ["bill the customer"]),
        ("usage_hint", "pass cents"),
        ("related_tools", ["void_invoice"]),
        ("category", "invoices"),
        ("server", "billing-api"),
        ("execution_type", "rest"),
        ("execution_config", {"url": "https://x"}),
        ("pinned", True),
        ("pin_weight", 5),
        ("schema_version", "1.0.1"),
        ("name", "create_invoice2"),
    ],
)
def test_content_hash_changes_for_any_field(field: str, value: Any) -> None:
    assert getattr(_spec(), field) != value
    assert content_hash(_spec(**{field: value})) != content_hash(_spec())


@pytest.mark.parametrize(
    "change",
    [
        {"example_queries": ["bill the customer"]},
        {"example_queries": ["make an invoice", "bill the customer"]},
        {"example_queries": []},
    ],
)
def test_embedding_hash_changes_with_embedded_content(change: dict[str, Any]) -> None:
    assert embedding_hash(_spec(**change)) != embedding_hash(_spec())


@pytest.mark.parametrize(
    "change",
    [{"description": "Creates a bill."}, {"name": "new_invoice"}, {"tags": ["money"]}, {"when_to_use": "month end"}],
)
def test_text_counts_only_for_a_tool_without_examples(change: dict[str, Any]) -> None:
    """A tool with example queries is embedded from them alone (Tool2Vec): its text changing re-embeds nothing."""
    assert embedding_hash(_spec(**change)) == embedding_hash(_spec())
    assert embedding_hash(_spec(example_queries=[], **change)) != embedding_hash(_spec(example_queries=[]))


@pytest.mark.parametrize(
    "change",
    [
        {"limitations": "EUR only"},
        {"pin_weight": 9},
        {"pinned": True},
        {"parameters": {"type": "object", "properties": {}}},
        {"usage_hint": "amounts in cents"},
        {"category": "invoices"},
        {"schema_version": "2.0.0"},
        {"execution_type": "mcp", "execution_config": {"transport": "http", "url": "https://x/mcp", "tool": "t"}},
    ],
)
def test_embedding_hash_ignores_fields_not_embedded(change: dict[str, Any]) -> None:
    changed = _spec(**change)
    assert content_hash(changed) != content_hash(_spec())
    assert embedding_hash(changed) == embedding_hash(_spec())


def test_embedding_text_joins_non_empty_parts() -> None:
    spec = ToolSpec(name="t", description="Does t.", function_summary="", when_to_use="often", tags=["a", "b"])
    assert embedding_text(spec) == "t: Does t.\noften\na b"


def test_embedding_text_reads_the_name_as_words_and_lists_the_parameters() -> None:
    schema = {"type": "object", "properties": {"city": {"description": "Where"}, "days": {"type": "integer"}}}
    spec = ToolSpec(name="getWeather_forecast", description="Forecasts.", parameters=schema)
    assert embedding_text(spec) == "get Weather forecast: Forecasts.\nParameters: city (Where); days"


def test_embedding_hash_changes_with_the_parameters_it_embeds() -> None:
    schema = {"type": "object", "properties": {"city": {"description": "Where"}}}
    assert embedding_hash(_spec(example_queries=[], parameters=schema)) != embedding_hash(_spec(example_queries=[]))
