"""Reason: one short sentence per chosen tool, from the evidence that put it there (seed 001's
``reason``): the query's words it matched, how near its meaning is, its success in this context over how many
calls, what reviews of queries alike made of it, and whether it is pinned, explored or related to another tool.
Deterministic: the same evidence, the same sentence."""

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from toolsel.contracts import SelectRequest
from toolsel.services.selector import stages
from toolsel.services.selector.pipeline.candidates import Candidates
from toolsel.services.selector.pipeline.choose import Choice
from toolsel.services.selector.pipeline.held import Held
from toolsel.services.selector.pipeline.rerank import Scored
from toolsel.services.selector.retrieval import query_tokens
from toolsel.services.selector.signals.vector import VECTOR

MAX_WORDS = 4
"""Matched words a reason names at most."""
FITNESS_NOTED = 0.05
"""How far from neutral (1.0) historical fitness must be for a reason to mention the reviews."""


@dataclass(frozen=True)
class Evidence:
    """What put one tool in the answer."""

    words: Sequence[str]
    """The query's words its declaration holds, in the query's order."""
    similarity: float
    successes: float
    """Successes observed in this context (the posterior's alpha beyond its prior), older ones discounted
    (``TOOLSEL_POSTERIOR_DISCOUNT``): 25 successes in a row read about 20."""
    calls: float
    """Calls observed in this context (both counts beyond the prior), discounted alike."""
    fitness: float
    pinned: bool = False
    explored: bool = False
    related_to: str | None = None


def run(held: Held, request: SelectRequest, found: Candidates, scored: Scored, choice: Choice) -> list[str]:
    """The reason of each final row, in order."""
    s, cat = held.settings, held.catalog
    at = found.at(choice.final)
    alpha, beta = scored.breakdown["alpha"][at], scored.breakdown["beta"][at]
    calls = stages.evidence(alpha, beta, s.prior_alpha, s.prior_beta)
    fitness = scored.breakdown["fitness"][at] if "fitness" in scored.breakdown else np.ones(at.size)
    similarity = scored.breakdown[VECTOR.field][at]
    query_words = list(dict.fromkeys(query_tokens(request.query)))
    explored, pins = set(choice.explored.tolist()), set(choice.pinned.tolist())
    return [
        sentence(
            Evidence(
                words=matched(query_words, cat.words(row)),
                similarity=float(similarity[i]),
                successes=max(float(alpha[i]) - s.prior_alpha, 0.0),
                calls=float(calls[i]),
                fitness=float(fitness[i]),
                pinned=row in pins,
                explored=row in explored,
                related_to=None if (top := choice.related.get(row)) is None else cat.keys[top],
            )
        )
        for i, row in enumerate(choice.final.tolist())
    ]


def matched(words: list[str], held: frozenset[str]) -> list[str]:
    """The query's words a tool holds, in the query's order."""
    return [w for w in words if w in held]


def sentence(e: Evidence) -> str:
    """The reason as a person reads it: why it is here first (pinned, related, explored), then what matched."""
    parts: list[str] = []
    if e.pinned:
        parts.append("pinned")
    if e.related_to is not None:
        parts.append(f"often used with {e.related_to}")
    if e.explored:
        parts.append("offered to be tried: little is known of it here yet")
    if e.words:
        parts.append("matches " + ", ".join(f"'{w}'" for w in e.words[:MAX_WORDS]))
    if e.similarity > 0:
        parts.append(f"close in meaning ({e.similarity:.2f})")
    if e.calls >= 1:
        parts.append(f"worked {e.successes:.0f} of {e.calls:.0f} recent times in this context")
    if abs(e.fitness - 1.0) >= FITNESS_NOTED:
        parts.append("rated well in reviews of queries alike" if e.fitness > 1 else "rated poorly for queries alike")
    if not parts:
        return "Ranked among the candidates."
    text = "; ".join(parts)
    return text[0].upper() + text[1:] + "."
