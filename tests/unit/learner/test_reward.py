"""What an outcome means for each selected tool's Beta posterior (``rewards_by_key``, the learner's hot path)."""

import pytest

from toolsel.contracts import SelectedTool, ToolCall
from toolsel.services.learner.reward import Reward, rewards_by_key


def _selected(*keys: str) -> list[str]:
    """The ``plugin/name`` keys of selected tools, as the contract spells them."""
    return [
        SelectedTool(plugin_id=key.split("/")[0], name=key.split("/")[1], rank=i, score=1.0 - i / 10).key
        for i, key in enumerate(keys)
    ]


def _call(key: str, success: bool) -> ToolCall:
    plugin_id, name = key.split("/")
    return ToolCall(plugin_id=plugin_id, name=name, success=success)


def test_success_adds_one_to_alpha() -> None:
    assert rewards_by_key(_selected("p/a"), [_call("p/a", True)]) == [Reward("p/a", 1.0, 0.0, 1, 0, 0)]


def test_failure_adds_one_to_beta() -> None:
    assert rewards_by_key(_selected("p/a"), [_call("p/a", False)]) == [Reward("p/a", 0.0, 1.0, 0, 1, 0)]


def test_several_calls_to_one_tool_add_up() -> None:
    calls = [_call("p/a", True), _call("p/a", False), _call("p/a", True), _call("p/a", True)]
    assert rewards_by_key(_selected("p/a"), calls) == [Reward("p/a", 3.0, 1.0, 3, 1, 0)]


@pytest.mark.parametrize(("penalty", "beta"), [(0.0, 0.0), (0.5, 0.5)])
def test_selected_but_not_called_is_an_impression(penalty: float, beta: float) -> None:
    result = rewards_by_key(_selected("p/a", "p/b"), [_call("p/a", True)], not_called_penalty=penalty)
    assert result == [Reward("p/a", 1.0, 0.0, 1, 0, 0), Reward("p/b", 0.0, beta, 0, 0, 1)]


def test_default_penalty_is_zero() -> None:
    assert rewards_by_key(_selected("p/a"), []) == [Reward("p/a", 0.0, 0.0, 0, 0, 1)]


def test_call_to_a_tool_outside_the_selection_is_ignored() -> None:
    result = rewards_by_key(_selected("p/a"), [_call("p/a", False), _call("p/zzz", True), _call("q/a", True)])
    assert result == [Reward("p/a", 0.0, 1.0, 0, 1, 0)]


def test_same_name_in_two_plugins_is_kept_apart() -> None:
    calls = [_call("crm/search", True), _call("docs/search", False), _call("docs/search", False)]
    assert rewards_by_key(_selected("crm/search", "docs/search"), calls) == [
        Reward("crm/search", 1.0, 0.0, 1, 0, 0),
        Reward("docs/search", 0.0, 2.0, 0, 2, 0),
    ]


def test_one_reward_per_selected_tool_in_selection_order() -> None:
    result = rewards_by_key(_selected("p/c", "p/a", "p/b"), [_call("p/b", True)])
    assert [r.tool_key for r in result] == ["p/c", "p/a", "p/b"]


def test_no_selection_gives_no_rewards_by_key() -> None:
    assert rewards_by_key([], [_call("p/a", True)]) == []


def test_successes_failures_and_impressions_in_one_outcome() -> None:
    calls = [_call("p/a", True), _call("p/b", False), _call("p/a", False)]
    assert rewards_by_key(_selected("p/a", "p/b", "p/c"), calls, not_called_penalty=0.5) == [
        Reward("p/a", 1.0, 1.0, 1, 1, 0),
        Reward("p/b", 0.0, 1.0, 0, 1, 0),
        Reward("p/c", 0.0, 0.5, 0, 0, 1),
    ]


def test_calls_to_tools_the_selection_did_not_offer_are_ignored() -> None:
    assert rewards_by_key(["p/a"], [_call("p/zzz", True)]) == [Reward("p/a", 0.0, 0.0, 0, 0, 1)]
