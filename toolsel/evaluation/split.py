"""Seeded, reproducible train/evaluation split: training queries become their tools' example queries."""

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass

from toolsel.evaluation.dataset import Query

MAX_EXAMPLES_PER_TOOL = 200
MAX_EXAMPLE_CHARS = 1000
"""The sync contract's limits on a tool's example queries."""


@dataclass(frozen=True)
class Split:
    train: list[Query]
    evaluate: list[Query]
    examples: dict[str, list[str]]
    """Tool name -> example queries (training query texts, in shuffled order, capped per tool)."""
    overlap_dropped: int
    """Evaluation queries dropped because their text is also a training query's (``same_text``)."""
    capped: int
    """Example queries left out by the per-tool cap."""

    def describe(self, fraction: float, seed: int) -> str:
        """How the split was made, in one paragraph for the output."""
        if not self.train:
            return f"no train split: all {len(self.evaluate)} queries evaluated, tools described by their text only"
        used = sum(len(v) for v in self.examples.values())
        return (
            f"seed {seed}: shuffled the {len(self.train) + len(self.evaluate) + self.overlap_dropped} queries, "
            f"moved the first {len(self.train)} (fraction {fraction:g}) into the example queries of their relevant "
            f"tools ({used} examples over {len(self.examples)} tools, at most {MAX_EXAMPLES_PER_TOOL} per tool: "
            f"{self.capped} left out), evaluated on the other {len(self.evaluate)}; "
            f"{self.overlap_dropped} whose text is a training query's (case, spacing and punctuation aside) were "
            "dropped (no evaluated query is an example)"
        )


def same_text(text: str) -> str:
    """What two queries' texts are compared by: their lower-case words of letters and digits, so that texts that
    differ only in case, spacing or punctuation ("ethereum." and "Ethereum") count as one. Words in any script
    (not ASCII alone, which would make every Chinese query one text); a text without a word is compared whole."""
    return " ".join(re.findall(r"[^\W_]+", text.lower())) or text


def split_queries(queries: Sequence[Query], fraction: float, seed: int) -> Split:
    """Shuffle with ``seed``; the first ``round(fraction · n)`` train, the rest (minus text duplicates) evaluate."""
    if not 0.0 <= fraction < 1.0:
        raise ValueError("train fraction must be in [0, 1)")
    order = list(queries)
    random.Random(seed).shuffle(order)
    cut = round(fraction * len(order))
    train, rest = order[:cut], order[cut:]
    seen = {same_text(q.text) for q in train}
    evaluate = [q for q in rest if same_text(q.text) not in seen]
    examples: dict[str, list[str]] = {}
    capped = 0
    for q in train:
        for name in sorted(q.relevant):
            own = examples.setdefault(name, [])
            if len(own) < MAX_EXAMPLES_PER_TOOL:
                own.append(q.text[:MAX_EXAMPLE_CHARS])
            else:
                capped += 1
    return Split(train, evaluate, examples, len(rest) - len(evaluate), capped)


def sample(queries: Sequence[Query], limit: int, seed: int) -> list[Query]:
    """A seeded sample of at most ``limit`` queries in their original order (0: all)."""
    if limit <= 0 or limit >= len(queries):
        return list(queries)
    keep = set(random.Random(seed).sample(range(len(queries)), limit))
    return [q for i, q in enumerate(queries) if i in keep]


def evaluated_sample(queries: Sequence[Query], limit: int, seed: int) -> list[Query]:
    """The queries ``toolsel eval`` ranks without a train split (its seeded shuffle, then its seeded sample): the
    in-process scripts measure the same queries as the product's numbers beside theirs."""
    return sample(split_queries(queries, 0.0, seed).evaluate, limit, seed)
