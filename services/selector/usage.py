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

from contracts import SHARED_TENANT
from services.selector.catalog import Catalog
from services.selector.retrieval import LexicalIndex, tokenize
from services.selector.stages import Rows, Vector

Matrix = npt.NDArray[np.float32]


@dataclass(frozen=True)
class Learnt:
    """One tool's learnt vectors in one scope."""

    centroid: Vector
    negative: Vector | None
    version: int
    positives: int
    """How many examples the centroid is the mean of."""
    words: tuple[tuple[str, ...], ...] = ()
    """The tokens of each query it served alone, newest first."""


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
class LearntWords:
    """BM25 over the learnt words of a scope's tools that have some: one document per tool (``rows``), each
    tool's score weighed by ``weights`` (``Blending.learnt_weights`` of its count of queries)."""

    rows: Rows
    index: LexicalIndex
    weights: npt.NDArray[np.float64]

    def scores(self, query: str, size: int) -> npt.NDArray[np.float64]:
        """Every catalog row's weighted score for the query (0 for a tool without learnt words)."""
        result = np.zeros(size, dtype=np.float64)
        result[self.rows] = self.index.scores(query) * self.weights
        return result


@dataclass(frozen=True)
class UsageView:
    """One scope's learnt tools over one catalog copy: their rows, blended vectors and negative centroids
    (zero where a tool has none, ``has_negative`` False), and their learnt words (None: none yet)."""

    rows: Rows
    blended: Matrix
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


def build_view(catalog: Catalog, learnt: Mapping[str, Learnt], blending: Blending) -> UsageView:
    """The view of one scope's learnt tools that are in this catalog copy."""
    present = [(row, entry) for key, entry in learnt.items() if (row := catalog.rows.get(key)) is not None]
    dim = catalog.vectors.shape[1]
    rows = np.array([row for row, _ in present], dtype=np.int64)
    centroids = np.zeros((rows.size, dim), dtype=np.float32)
    negative = np.zeros((rows.size, dim), dtype=np.float32)
    has_negative = np.zeros(rows.size, dtype=bool)
    for i, (_, entry) in enumerate(present):
        centroids[i] = entry.centroid
        if entry.negative is not None:
            negative[i] = entry.negative
            has_negative[i] = True
    declared = np.where(catalog.has_vector[rows, None], catalog.vectors[rows], 0.0).astype(np.float32)
    weights = blending.declared_weights(np.array([entry.positives for _, entry in present], dtype=np.int64))
    return UsageView(
        rows, blend(declared, centroids, weights), negative, has_negative, learnt_words(catalog, present, blending)
    )


def learnt_words(catalog: Catalog, present: Sequence[tuple[int, Learnt]], blending: Blending) -> LearntWords | None:
    """The BM25 index of these tools' learnt words, with the catalog index's parameters; None when none has any."""
    worded = [(row, entry) for row, entry in present if entry.words]
    if not worded:
        return None
    documents = [[token for query in entry.words for token in query] for _, entry in worded]
    counts = np.array([len(entry.words) for _, entry in worded], dtype=np.int64)
    index = LexicalIndex(documents, k1=catalog.lexical.k1, b=catalog.lexical.b)
    return LearntWords(np.array([row for row, _ in worded], dtype=np.int64), index, blending.learnt_weights(counts))


def usage_cosine(view: UsageView, query: Vector, negative_similarity: float) -> npt.NDArray[np.float64]:
    """The learnt tools' cosine with the query, lowered by how much closer the query is to a tool's negative
    examples than to its blend when that closeness reaches ``negative_similarity``."""
    learnt = (view.blended @ query).astype(np.float64)
    against = (view.negative @ query).astype(np.float64)
    penalised = view.has_negative & (against >= negative_similarity) & (against > learnt)
    result: npt.NDArray[np.float64] = np.where(penalised, 2 * learnt - against, learnt)
    return result


@dataclass
class UsageMemory:
    """Every scope's learnt vectors; ``version`` is the watermark: the highest version merged so far."""

    scopes: dict[str, dict[str, Learnt]] = field(default_factory=dict)
    version: int = 0
    _views: dict[str, tuple[Catalog, Blending, UsageView]] = field(default_factory=dict)
    """Per scope, the view last built, with the catalog copy and blending it was built for."""

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
            negative = r["negative_centroid"]
            scope[r["key"]] = Learnt(
                r["centroid"].to_numpy().astype(np.float32),
                None if negative is None else negative.to_numpy().astype(np.float32),
                version,
                int(r["positives"]),
                tuple(tuple(tokens) for tokens in tokenize(r["words"] or [])),
            )
            self._views.pop(r["scope"], None)
            changed += 1
        return changed

    def view(self, catalog: Catalog, scope: str, blending: Blending) -> UsageView | None:
        """The scope's view over this catalog copy; None when nothing was learnt in it."""
        learnt = self.scopes.get(scope)
        if not learnt:
            return None
        cached = self._views.get(scope)
        if cached is not None and cached[0] is catalog and cached[1] == blending:
            return cached[2]
        view = build_view(catalog, learnt, blending)
        self._views[scope] = (catalog, blending, view)
        return view
