"""Which updates need a person's review."""

import pytest

from toolsel.contracts import ToolSpec
from toolsel.services.indexer.review import needs_review


def _spec(schema_version: str = "1.0.0", description: str = "same") -> ToolSpec:
    return ToolSpec(name="t", description=description, schema_version=schema_version)


@pytest.mark.parametrize("approved", [False, True])
@pytest.mark.parametrize(("old", "new"), [("1.4.2", "2.0.0"), ("2.0.0", "1.9.9"), ("1.0.0", "10.0.0")])
def test_major_version_change_flags(old: str, new: str, approved: bool) -> None:
    assert needs_review({"schema_version": old, "description": "same"}, _spec(new), approved)


@pytest.mark.parametrize("approved", [False, True])
@pytest.mark.parametrize(("old", "new"), [("1.0.0", "1.1.0"), ("1.2.3", "1.2.4"), ("3.0.0", "3.0.0-beta.1")])
def test_minor_or_patch_change_does_not_flag(old: str, new: str, approved: bool) -> None:
    assert not needs_review({"schema_version": old, "description": "same"}, _spec(new), approved)


def test_missing_old_version_counts_as_1_0_0() -> None:
    assert not needs_review({"description": "same"}, _spec("1.5.0"), approved=True)
    assert needs_review({"description": "same"}, _spec("2.0.0"), approved=False)


def test_description_change_flags_only_approved_tools() -> None:
    old = {"schema_version": "1.0.0", "description": "old"}
    assert needs_review(old, _spec(description="new"), approved=True)
    assert not needs_review(old, _spec(description="new"), approved=False)
    assert not needs_review(old, _spec(description="old"), approved=True)


def test_a_new_execution_target_on_an_approved_tool_flags_it() -> None:
    """Where a call goes (the server the MCP gateway calls with the plugin's secrets) was approved with the tool."""
    server = {"transport": "http", "url": "https://tools.example/mcp", "tool": "t"}
    old = {"schema_version": "1.0.0", "description": "same", "execution_type": "mcp", "execution_config": server}
    moved = ToolSpec(
        name="t",
        description="same",
        execution_type="mcp",
        execution_config={**server, "url": "https://else.example/mcp"},
    )
    assert needs_review(old, moved, approved=True)
    assert not needs_review(old, moved, approved=False)
    same = ToolSpec(name="t", description="same", execution_type="mcp", execution_config=server)
    assert not needs_review(old, same, approved=True)
    assert needs_review(old, _spec(), approved=True)  # back to internal
    assert not needs_review({"schema_version": "1.0.0", "description": "same"}, _spec(), approved=True)  # defaults
