"""Offline evaluation: each retrieval mode ranks the evaluation queries; metrics overall and per subset."""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from toolsel.evaluation.dataset import Query
from toolsel.evaluation.metrics import complete_at, mean_metrics, query_metrics
from toolsel.evaluation.ranking import Retrieval

CatalogKind = Literal["text", "examples"]
ANSWER_SIZES: tuple[int | Literal["auto"], ...] = (5, 10, "auto")
"""The answer sizes ``--answer-sizes`` compares: fixed k against ``k: auto``."""


@dataclass(frozen=True)
class Mode:
    name: str
    retrieval: Retrieval
    rerank: bool
    catalog: CatalogKind
    """``text``: tools described by their text only; ``examples``: with the train split's example queries."""


def plan_modes(with_examples: bool) -> list[Mode]:
    """BM25, description vectors, Tool2Vec (with a train split), hybrid fusion and the full pipeline."""
    fused: CatalogKind = "examples" if with_examples else "text"
    modes = [Mode("bm25", "bm25", False, "text"), Mode("vector (description)", "vector", False, "text")]
    if with_examples:
        modes.append(Mode("tool2vec", "vector", False, "examples"))
    return [*modes, Mode("hybrid", "hybrid", False, fused), Mode("full pipeline", "hybrid", True, fused)]


def labels(query: Query, fields: Sequence[str]) -> list[str]:
    """The subset labels of a query, ``field=value`` as in baselines.json."""
    return [f"{f}={query.extras[f]}" for f in fields if f in query.extras]


def score(rankings: Sequence[Sequence[str]], queries: Sequence[Query], fields: Sequence[str]) -> dict[str, Any]:
    """Mean metrics overall and per subset label, with the number of queries in each."""
    rows = [query_metrics(r, q.relevant) for r, q in zip(rankings, queries, strict=True)]
    subsets: dict[str, list[dict[str, float]]] = {}
    for row, query in zip(rows, queries, strict=True):
        for label in labels(query, fields):
            subsets.setdefault(label, []).append(row)
    return {
        "n": len(rows),
        "overall": mean_metrics(rows),
        "subsets": {label: {"n": len(r), **mean_metrics(r)} for label, r in sorted(subsets.items())},
    }


def answer_size(
    rankings: Sequence[Sequence[str]], answers: Sequence[tuple[int, int]], queries: Sequence[Query]
) -> dict[str, float]:
    """What whole answers cost and hold: mean tools returned and mean tokens of their definitions (``answers``:
    each one's tools and tokens, a pin included in both), and the share of queries whose every relevant tool was
    returned (Complete@returned, over the set's tools in ``rankings``)."""
    n = max(len(queries), 1)
    return {
        "tools": sum(tools for tools, _ in answers) / n,
        "tokens": sum(tokens for _, tokens in answers) / n,
        "complete": sum(complete_at(r, q.relevant, len(r)) for r, q in zip(rankings, queries, strict=True)) / n,
    }
