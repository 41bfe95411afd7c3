"""Finding the evaluation queries a training query repeats, exactly or nearly.

Two queries are near-duplicates when the Jaccard similarity of their word sets reaches a threshold. The
search is exact, not sampled: a query ``x`` whose Jaccard with ``y`` is at least ``t`` shares at least
``ceil(t·|x|)`` words with ``y``, so one of its first ``|x| - ceil(t·|x|) + 1`` words (rarest first) is in
``y``; only the indexed queries holding one of those words are compared.
"""

import math
import re
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping

_WORD = re.compile(r"\w+")
_ROUNDING = 1e-9
"""0.7 × 10 is 7.000000000000001 in floating point: without this, a 7-of-10 overlap would not count."""


def words(text: str) -> tuple[str, ...]:
    """The text's words, case and Unicode compatibility forms folded."""
    return tuple(_WORD.findall(unicodedata.normalize("NFKC", text).casefold()))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    union = len(a | b)
    return len(a & b) / union if union else 1.0


class NearDuplicateIndex:
    """The queries of named sets, to ask which set (other than the asker's own) a text repeats."""

    def __init__(self, queries_by_set: Mapping[str, Iterable[str]], threshold: float) -> None:
        if not 0.0 < threshold <= 1.0:
            raise ValueError(f"threshold must be in (0, 1], got {threshold}")
        self.threshold = threshold
        self._exact: dict[str, set[str]] = defaultdict(set)
        self._sets: list[tuple[frozenset[str], str]] = []
        self._postings: dict[str, list[int]] = defaultdict(list)
        for owner, texts in sorted(queries_by_set.items()):
            for text in texts:
                tokens = words(text)
                self._exact[" ".join(tokens)].add(owner)
                if tokens:
                    bag = frozenset(tokens)
                    for word in bag:
                        self._postings[word].append(len(self._sets))
                    self._sets.append((bag, owner))
        self._frequency = Counter({word: len(ids) for word, ids in self._postings.items()})

    def exact(self, text: str, ignore: str | None = None) -> str | None:
        """The first set (by name) holding the same words in the same order, ``ignore`` left out."""
        owners = self._exact.get(" ".join(words(text)), set()) - {ignore}
        return min(owners) if owners else None

    def near(self, text: str, ignore: str | None = None) -> str | None:
        """The first set (by name) holding a query whose word set is at least ``threshold`` Jaccard-similar."""
        bag = frozenset(words(text))
        if not bag:
            return None
        rarest_first = sorted(bag, key=lambda w: (self._frequency[w], w))
        prefix = rarest_first[: len(bag) - math.ceil(self.threshold * len(bag) - _ROUNDING) + 1]
        owners = {
            owner
            for i in sorted({i for word in prefix for i in self._postings.get(word, ())})
            for other, owner in [self._sets[i]]
            if owner != ignore and jaccard(bag, other) >= self.threshold
        }
        return min(owners) if owners else None
