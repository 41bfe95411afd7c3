"""Budget: the chosen tools within the request's ``token_budget``, counted as the reply's ``tokens``
counts them. In the answer's order (pins first, then the ranking, then related tools), each tool that still fits
is kept and each that would take the total past the budget is left out, so a large schema does not keep out the
smaller ones after it; the reply names those left out (and keeps what put them in the answer: related to which
tool, whether it fits), so that a budget that left out what fits is not read as nothing fitting."""

import numpy as np
import numpy.typing as npt

from toolsel.contracts import SelectRequest
from toolsel.services.selector import stages
from toolsel.services.selector.pipeline.choose import Choice
from toolsel.services.selector.pipeline.held import Held


def run(held: Held, request: SelectRequest, choice: Choice) -> Choice:
    if request.token_budget is None:
        return choice
    keep = within(held.catalog.schema_tokens[choice.final], request.token_budget)
    kept = choice.kept(keep)
    return Choice(kept.final, kept.explored, choice.related, kept.pinned, kept.needs, choice.final[~keep])


def within(tokens: npt.NDArray[np.int64], budget: int) -> stages.Mask:
    """Which of these tools, in order, fit together in ``budget`` tokens: each is kept while it still fits."""
    keep = np.zeros(tokens.size, dtype=bool)
    spent = 0
    for i, cost in enumerate(tokens.tolist()):
        if spent + cost <= budget:
            keep[i] = True
            spent += cost
    return keep
