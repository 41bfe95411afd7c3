"""Field limits and validators of the wire messages."""

from typing import Any
from uuid import uuid4

import pytest
from pydantic import ValidationError

from toolsel.contracts import (
    CategorySpec,
    FeedbackEvent,
    PageMappingSpec,
    PluginSync,
    ReviewEvent,
    SelectFilters,
    SelectRequest,
    ToolCall,
    ToolRef,
    ToolReview,
    ToolSpec,
    Verdict,
)


def _sync(**overrides: Any) -> PluginSync:
    fields: dict[str, Any] = {"plugin_id": "billing", "plugin_version": "1.0.0", "tools": []}
    fields.update(overrides)
    return PluginSync.model_validate(fields)


@pytest.mark.parametrize("query", ["", "   ", "x" * 2001])
def test_select_request_rejects_empty_or_overlong_query(query: str) -> None:
    with pytest.raises(ValidationError):
        SelectRequest(query=query)


def test_select_request_accepts_query_at_max_length_and_strips_it() -> None:
    assert SelectRequest(query="x" * 2000).query == "x" * 2000
    assert SelectRequest(query="  find invoices  ").query == "find invoices"


@pytest.mark.parametrize("k", [0, 51, -1])
def test_select_request_rejects_k_out_of_range(k: int) -> None:
    with pytest.raises(ValidationError):
        SelectRequest(query="q", k=k)


@pytest.mark.parametrize("k", [1, 50])
def test_select_request_accepts_k_at_bounds(k: int) -> None:
    assert SelectRequest(query="q", k=k).k == k


def test_select_request_defaults() -> None:
    request = SelectRequest(query="q")
    assert request.schema_version == 1
    assert request.tenant_id == "default"
    assert request.tier == "free"
    assert request.page == ""
    assert request.k is None
    assert request.user_id is None
    assert request.role is None
    assert request.session_id is None
    assert request.filters == SelectFilters()
    assert request.filters.min_score is None
    assert request.filters.exclude == []
    assert request.dry_run is False
    assert request.seed is None
    assert request.retrieval == "hybrid"
    assert request.rerank is True


@pytest.mark.parametrize(
    ("model", "data"),
    [
        (SelectRequest, {"query": "q", "quey": "typo"}),
        (SelectFilters, {"min_scor": 0.5}),
        (ToolRef, {"plugin_id": "p", "name": "t", "extra": 1}),
        (ToolSpec, {"name": "t", "description": "d", "descripton": "typo"}),
        (PluginSync, {"plugin_id": "p", "plugin_version": "1.0.0", "tools": [], "tool": []}),
    ],
)
def test_unknown_fields_are_rejected(model: type, data: dict[str, Any]) -> None:
    with pytest.raises(ValidationError, match="extra"):
        model.model_validate(data)


@pytest.mark.parametrize("version", [0, 2])
def test_schema_version_must_be_1(version: int) -> None:
    with pytest.raises(ValidationError):
        SelectRequest(query="q", schema_version=version)
    assert SelectRequest(query="q", schema_version=1).schema_version == 1


@pytest.mark.parametrize("rating", [1.01, 2.0, -0.1])
def test_rating_outside_unit_interval_is_rejected(rating: float) -> None:
    with pytest.raises(ValidationError):
        ToolCall(plugin_id="p", name="t", success=True, rating=rating)
    with pytest.raises(ValidationError):
        FeedbackEvent(plugin_id="p", name="t", rating=rating)


@pytest.mark.parametrize("rating", [0.0, 1.0])
def test_rating_at_bounds_is_accepted(rating: float) -> None:
    assert ToolCall(plugin_id="p", name="t", success=True, rating=rating).rating == rating
    assert FeedbackEvent(plugin_id="p", name="t", rating=rating).rating == rating


def test_tool_ref_key_is_plugin_slash_name() -> None:
    assert ToolRef(plugin_id="billing", name="create_invoice").key == "billing/create_invoice"
    assert ToolCall(plugin_id="crm", name="lookup", success=False).key == "crm/lookup"


@pytest.mark.parametrize("name", ["", "a/b", " leading-space", "x" * 129])
def test_tool_ref_rejects_bad_names(name: str) -> None:
    with pytest.raises(ValidationError):
        ToolRef(plugin_id="p", name=name)


def test_plugin_sync_rejects_duplicate_tool_names() -> None:
    tools = [{"name": "a", "description": "1"}, {"name": "b", "description": "2"}, {"name": "a", "description": "3"}]
    with pytest.raises(ValidationError, match=r"duplicate tool names \['a'\]"):
        _sync(tools=tools)


def test_plugin_sync_rejects_tool_category_not_declared() -> None:
    with pytest.raises(ValidationError, match=r"tools\.1\.category: unknown category 'payments'"):
        _sync(
            categories=[{"name": "invoices"}],
            tools=[
                {"name": "a", "description": "d", "category": "invoices"},
                {"name": "b", "description": "d", "category": "payments"},
            ],
        )


def test_plugin_sync_rejects_page_mapping_category_not_declared() -> None:
    with pytest.raises(ValidationError, match=r"page_mappings\.0\.category: unknown category 'payments'"):
        _sync(categories=[{"name": "invoices"}], page_mappings=[{"page_pattern": "/pay*", "category": "payments"}])


def test_plugin_sync_accepts_consistent_declaration() -> None:
    sync = _sync(
        categories=[CategorySpec(name="invoices"), CategorySpec(name="drafts", parent="invoices")],
        tools=[ToolSpec(name="a", description="d", category="drafts"), ToolSpec(name="b", description="d")],
        page_mappings=[PageMappingSpec(page_pattern="/billing*", category="invoices")],
    )
    assert [t.name for t in sync.tools] == ["a", "b"]
    assert sync.tenant_id == "*"
    assert sync.credential is None


def test_review_event_needs_reviews_or_none_of_these() -> None:
    with pytest.raises(ValidationError, match="at least one review or none_of_these"):
        ReviewEvent(selection_id=uuid4())
    assert ReviewEvent(selection_id=uuid4(), none_of_these=True).reviews == []
    review = ToolReview(plugin_id="p", name="t", verdict=Verdict.PERFECT)
    assert ReviewEvent(selection_id=uuid4(), reviews=[review]).none_of_these is False


def test_messages_are_frozen() -> None:
    request = SelectRequest(query="q")
    with pytest.raises(ValidationError):
        request.k = 3  # type: ignore[misc]
