"""``rewards_by_key``, the learner's hot path, is the reward model of ``rewards`` (tested in test_reward.py)."""

from contracts import SelectedTool, ToolCall
from services.learner.reward import Reward, rewards, rewards_by_key


def test_by_key_equals_the_model_on_selected_tools() -> None:
    selected = [SelectedTool(plugin_id="p", name=n, rank=i, score=0.5) for i, n in enumerate("abc")]
    calls = [ToolCall(plugin_id="p", name=n, success=ok) for n, ok in [("a", True), ("b", False), ("a", False)]]
    by_key = rewards_by_key([t.key for t in selected], calls, not_called_penalty=0.5)
    assert by_key == rewards(selected, calls, not_called_penalty=0.5)
    assert by_key == [
        Reward("p/a", 1.0, 1.0, 1, 1, 0),
        Reward("p/b", 0.0, 1.0, 0, 1, 0),
        Reward("p/c", 0.0, 0.5, 0, 0, 1),
    ]


def test_calls_to_tools_the_selection_did_not_offer_are_ignored() -> None:
    assert rewards_by_key(["p/a"], [ToolCall(plugin_id="p", name="zzz", success=True)]) == [
        Reward("p/a", 0.0, 0.0, 0, 0, 1)
    ]
