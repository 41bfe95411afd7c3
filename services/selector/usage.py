"""Usage memory (online Tool2Vec): the vectors the learner learnt from each scope's successful queries, kept by
scope and tool, merged in by version as the learner broadcasts them, never reloaded whole.

A request reads one scope's view: the rows of the tools learnt in it with their blended retrieval vectors
(``normalize(w x declared + (1 - w) x centroid)``, w shrinking as a tool's examples grow), negative centroids and
a BM25 index over their learnt words, built once per catalog copy and scope version.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from toolsel.contracts import SHARED_TENANT
from toolsel.services.selector.catalog import Catalog
from toolsel.services.selector.retrieval import LexicalIndex, tokenize
from toolsel.services.selector.stages import Rows, Vector

Matrix = npt.NDArray[np.float32]


@dataclass(frozen=True)
class Learnt:
    """One tool's learnt vectors in one scope."""

    centroid: Vector
    negative: Vector | None
    version: int
    positives: int
    """How many examples the centroid is the mean of."""
    words: tuple[str, ...] = ()
    """The queries it served alone, newest first."""
    residual: Vector | None = None
    """What reviews taught it against the tools offered beside it (``toolsel.services.learner.usage.Listwise``): its
    product with a query is added to the tool's cosine."""


@dataclass(frozen=True)
class Blending:
    """How a learnt tool's retrieval vector weighs its declared vector: as ``prior`` examples' worth against its
    ``n`` learnt ones, ``w = max(floor, prior / (n + prior))``. A centroid of a query or two is that query's
    phrasing, close to every query phrased alike, so it must not yet outweigh the description; the floor keeps
    the description's share however much was learnt."""

    floor: float
    prior: float

    def declared_weights(self, positives: npt.NDArray[np.int64]) -> npt.NDArray[np.float32]:
        shrunk = self.prior / (positives + self.prior) if self.prior > 0 else np.zeros(positives.shape)
        result: npt.NDArray[np.float32] = np.maximum(self.floor, shrunk).astype(np.float32)
        return result

    def learnt_weights(self, examples: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
        """How much ``n`` learnt examples count against the declared text, ``n / (n + prior)``: the words of a
        query or two are that query's phrasing, and count little until more queries agree."""
        result: npt.NDArray[np.float64] = (
            examples / (examples + self.prior) if self.prior > 0 else np.ones(examples.shape)
        )
        return result


@dataclass(frozen=True)
class ScopeWords:
    """BM25 over the learnt words of a scope's tools that have some, one document per tool (``keys``), with how
    many queries taught each; independent of the catalog copy, so a new copy does not rebuild it."""

    keys: tuple[str, ...]
    index: LexicalIndex
    queries: npt.NDArray[np.int64]


@dataclass(frozen=True)
class LearntWords:
    """A scope's learnt words over one catalog copy: document ``documents[i]`` is catalog row ``rows[i]``, its
    score weighed by ``weights[i]`` (``Blending.learnt_weights`` of its count of queries)."""

    rows: Rows
    documents: Rows
    index: LexicalIndex
    weights: npt.NDArray[np.float64]

    def scores(self, query: str, size: int) -> npt.NDArray[np.float64]:
        """Every catalog row's weighted score for the query (0 for a tool without learnt words)."""
        result = np.zeros(size, dtype=np.float64)
        result[self.rows] = self.index.scores(query)[self.documents] * self.weights
        return result


def words_over(catalog: Catalog, words: ScopeWords, blending: Blending) -> LearntWords:
    """The scope's words placed on this catalog copy's rows (a tool not in it is left out)."""
    found = [(i, row) for i, key in enumerate(words.keys) if (row := catalog.rows.get(key)) is not None]
    documents = np.array([i for i, _ in found], dtype=np.int64)
    rows = np.array([row for _, row in found], dtype=np.int64)
    return LearntWords(rows, documents, words.index, blending.learnt_weights(words.queries[documents]))


@dataclass(frozen=True)
class UsageView:
    """One scope's learnt tools over one catalog copy: their rows, what a query's product with scores them (the
    blended vector plus the residual, summed once here rather than per request), negative centroids (zero where a
    tool has none, ``has_negative`` False), and their learnt words (None: none yet)."""

    rows: Rows
    scored: Matrix
    negative: Matrix
    has_negative: npt.NDArray[np.bool_]
    words: LearntWords | None = None


def scope_of(tenant_id: str, sharing: str) -> str:
    """The scope a tenant's requests read: its own, or the shared one when learning is shared globally."""
    return SHARED_TENANT if sharing == "global" else tenant_id


def blend(declared: Matrix, centroids: Matrix, declared_weight: float | npt.NDArray[np.float32]) -> Matrix:
    """Each row's ``normalize(w x declared + (1 - w) x centroid)`` (w one for all rows or one per row); a tool
    without a declared vector (zero row) is its centroid."""
    weight = np.asarray(declared_weight, dtype=np.float32).reshape(-1, 1)
    mixed = weight * declared + (1.0 - weight) * centroids
    norms = np.linalg.norm(mixed, axis=1, keepdims=True)
    result: Matrix = (mixed / np.where(norms > 0, norms, 1.0)).astype(np.float32)
    return result


def build_view(
    catalog: Catalog, learnt: Mapping[str, Learnt], blending: Blending, words: ScopeWords | None = None
) -> UsageView:
    """The view of one scope's learnt tools that are in this catalog copy, with its indexed words if any."""
    present = [(row, entry) for key, entry in learnt.items() if (row := catalog.rows.get(key)) is not None]
    dim = catalog.vectors.shape[1]
    rows = np.array([row for row, _ in present], dtype=np.int64)
    centroids = np.zeros((rows.size, dim), dtype=np.float32)
    negative = np.zeros((rows.size, dim), dtype=np.float32)
    has_negative = np.zeros(rows.size, dtype=bool)
    residual = np.zeros((rows.size, dim), dtype=np.float32)
    for i, (_, entry) in enumerate(present):
        centroids[i] = entry.centroid
        if entry.negative is not None:
            negative[i] = entry.negative
            has_negative[i] = True
        if entry.residual is not None:
            residual[i] = entry.residual
    declared = np.where(catalog.has_vector[rows, None], catalog.vectors[rows], 0.0).astype(np.float32)
    weights = blending.declared_weights(np.array([entry.positives for _, entry in present], dtype=np.int64))
    placed = None if words is None else words_over(catalog, words, blending)
    return UsageView(rows, blend(declared, centroids, weights) + residual, negative, has_negative, placed)


def usage_cosine(view: UsageView, query: Vector, negative_similarity: float) -> npt.NDArray[np.float64]:
    """The learnt tools' cosine with the query plus their residual's product with it, lowered by how much closer
    the query is to a tool's negative examples than to that when that closeness reaches ``negative_similarity``."""
    learnt = (view.scored @ query).astype(np.float64)
    against = (view.negative @ query).astype(np.float64)
    penalised = view.has_negative & (against >= negative_similarity) & (against > learnt)
    result: npt.NDArray[np.float64] = np.where(penalised, 2 * learnt - against, learnt)
    return result


@dataclass
class UsageMemory:
    """Every scope's learnt vectors and words; ``version`` is the watermark: the highest version merged so far.

    Merging is cheap and happens on the event loop; indexing the words of the scopes that changed
    (``index_words``) costs up to seconds for a scope with thousands of learnt tools, so the app runs it in a
    worker thread after each merge, one at a time, while requests read the index built before."""

    scopes: dict[str, dict[str, Learnt]] = field(default_factory=dict)
    version: int = 0
    _views: dict[str, tuple[Catalog, Blending, ScopeWords | None, UsageView]] = field(default_factory=dict)
    """Per scope, the view last built, with the catalog copy, blending and words it was built from."""
    _words: dict[str, ScopeWords] = field(default_factory=dict)
    _unindexed: set[str] = field(default_factory=set)
    """Scopes whose words changed since they were last indexed."""
    _tokens: dict[tuple[str, str], tuple[int, list[str]]] = field(default_factory=dict)
    """Per (scope, tool key), the version of its words last tokenised and their tokens, one document."""

    def __len__(self) -> int:
        """How many learnt entries it holds, over every scope (what the store counts as its usage vectors)."""
        return sum(len(learnt) for learnt in self.scopes.values())

    def merge(self, rows: Sequence[Mapping[str, Any]]) -> int:
        """Take in rows of ``toolsel.store.catalog.usage_vectors_since``; an older or repeated version of a
        tool's vectors changes nothing. Returns how many entries changed."""
        changed = 0
        for r in rows:
            scope = self.scopes.setdefault(r["scope"], {})
            current = scope.get(r["key"])
            version = int(r["version"])
            self.version = max(self.version, version)
            if current is not None and current.version >= version:
                continue
            negative, residual = r["negative_centroid"], r["residual"]
            scope[r["key"]] = Learnt(
                r["centroid"].to_numpy().astype(np.float32),
                None if negative is None else negative.to_numpy().astype(np.float32),
                version,
                int(r["positives"]),
                tuple(r["words"] or ()),
                None if residual is None else residual.to_numpy().astype(np.float32),
            )
            self._views.pop(r["scope"], None)
            if r["words"] or (current is not None and current.words):
                self._unindexed.add(r["scope"])
            changed += 1
        return changed

    def index_words(self, k1: float, b: float) -> None:
        """Index the words of every scope that changed since (BM25 with these parameters); each scope's index is
        swapped in whole, so a request reads the old one or the new one."""
        while self._unindexed:
            scope = self._unindexed.pop()
            worded = [(key, entry) for key, entry in self.scopes.get(scope, {}).items() if entry.words]
            if not worded:
                self._words.pop(scope, None)
                continue
            documents = [self._document(scope, key, entry) for key, entry in worded]
            queries = np.array([len(entry.words) for _, entry in worded], dtype=np.int64)
            self._words[scope] = ScopeWords(tuple(k for k, _ in worded), LexicalIndex(documents, k1=k1, b=b), queries)

    def _document(self, scope: str, key: str, entry: Learnt) -> list[str]:
        """The tool's words as one document of tokens, tokenised once per version."""
        cached = self._tokens.get((scope, key))
        if cached is None or cached[0] != entry.version:
            cached = (entry.version, [token for query in tokenize(entry.words) for token in query])
            self._tokens[(scope, key)] = cached
        return cached[1]

    def view(self, catalog: Catalog, scope: str, blending: Blending) -> UsageView | None:
        """The scope's view over this catalog copy; None when nothing was learnt in it."""
        learnt = self.scopes.get(scope)
        if not learnt:
            return None
        words = self._words.get(scope)
        cached = self._views.get(scope)
        if cached is not None and cached[0] is catalog and cached[1] == blending and cached[2] is words:
            return cached[3]
        view = build_view(catalog, learnt, blending, words)
        self._views[scope] = (catalog, blending, words, view)
        return view
