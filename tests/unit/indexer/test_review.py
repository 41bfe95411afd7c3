"""The status that keeps a flagged tool out of selections until an operator approves it."""

from toolsel.services.indexer.review import status_after_approval, status_after_update


def test_a_flagged_tool_is_held_back_only_when_flagged_tools_are_not_selectable() -> None:
    assert status_after_update("active", flagged=True, flagged_selectable=False) == "draft"
    assert status_after_update("active", flagged=True, flagged_selectable=True) == "active"
    assert status_after_update("deprecated", flagged=False, flagged_selectable=False) == "deprecated"


def test_approval_returns_held_back_tools_only() -> None:
    assert status_after_approval("draft") == "active"
    assert status_after_approval("retired") == "retired"
