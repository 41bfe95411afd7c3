"""The reward model, in one place: what an outcome means for each selected tool's Beta posterior.

- called and worked: a success (alpha += 1);
- called and failed: a failure (beta += 1);
- selected but not called: an impression; beta += ``not_called_penalty`` (default 0: no update);
- called but not among the selection's tools: ignored (the selection did not offer it).

Each update of a posterior first discounts the evidence it holds above the prior (``discounted``), so the
last 1/(1 - discount) outcomes or so decide it: a tool that starts failing falls, one that recovers comes back.
"""

from collections.abc import Iterable
from typing import NamedTuple

from toolsel.contracts import ToolCall


class Reward(NamedTuple):
    tool_key: str
    alpha: float
    beta: float
    success: int
    failure: int
    impression: int


def rewards_by_key(shown: Iterable[str], calls: Iterable[ToolCall], not_called_penalty: float = 0.0) -> list[Reward]:
    """One reward per selected tool (by its ``plugin/name`` key, in selection order), from the calls the model
    made (several calls to one tool add up)."""
    outcome: dict[str, list[int]] = {}
    for call in calls:
        wins_losses = outcome.setdefault(call.key, [0, 0])
        wins_losses[0 if call.success else 1] += 1
    result = []
    for key in shown:
        won, lost = outcome.get(key, (0, 0))
        if won or lost:
            result.append(Reward(key, float(won), float(lost), won, lost, 0))
        else:
            result.append(Reward(key, 0.0, not_called_penalty, 0, 0, 1))
    return result


def discounted(value: float, prior: float, discount: float, evidence: float) -> float:
    """One update of a Beta parameter: what it holds above the prior decays by ``discount``, ``evidence`` adds."""
    return prior + discount * (value - prior) + evidence
