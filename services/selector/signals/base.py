"""What a signal is: a named score over the catalog rows, computed from a small per-request context.

Retrieval signals are fused into the relevance (``Settings.fusion_weights``); rerank signals are weighed into
the composite score (``Settings.rerank_weights``). Each names the ``ScoreBreakdown`` field that shows it.
"""

from dataclasses import dataclass
from typing import Protocol, TypeVar

import numpy as np
import numpy.typing as npt

from toolsel.contracts import SelectRequest
from toolsel.services.selector.catalog import Catalog, ReviewIndex
from toolsel.services.selector.history import UserHistory
from toolsel.services.selector.stages import Mask, NearReviews, Rows, Scores, Vector, nearest_reviews
from toolsel.services.selector.standing import Standing
from toolsel.services.selector.usage import UsageView
from toolsel.settings import Settings


@dataclass(frozen=True)
class ReviewLookup:
    """The review-index entries one scope may read, each with its tool's catalog row: past queries like this
    one. Another scope's entries, and those of tools not in this catalog copy, are not in it."""

    centroids: npt.NDArray[np.float32]
    rows: Rows
    fitness: Scores
    neighbours: int
    min_similarity: float

    @classmethod
    def of(cls, index: ReviewIndex, rows: Rows, scope: str, neighbours: int, min_similarity: float) -> "ReviewLookup":
        """``scope``'s entries of ``index`` (views, no copy), whose catalog rows are ``rows`` (-1: not in this
        copy, so never a neighbour); none for a scope without entries."""
        span = index.spans.get(scope, slice(0, 0))
        return cls(index.centroids[span], rows[span], index.fitness[span], neighbours, min_similarity)

    def near(self, query: Vector) -> NearReviews:
        return nearest_reviews(self.centroids, self.rows, self.fitness, query, self.neighbours, self.min_similarity)


@dataclass(frozen=True)
class QueryContext:
    """What a retrieval signal scores: one query (the request's, or one of its parts) over the catalog."""

    settings: Settings
    catalog: Catalog
    query: str
    pool: Mask
    """The rows retrieval may return."""
    vector: Vector | None
    """The query's embedding; None on the BM25 paths or when embedding failed."""
    reviews: ReviewLookup | None
    usage: UsageView | None = None
    """What the request's scope learnt from use: the vectors that replace its learnt tools' declared ones."""
    cosine: Scores | None = None
    """The vector's cosine with every catalog row, when computed with the request's other queries
    (``stages.cosines``); None: the signal computes it."""
    sentences: tuple[tuple[Vector, Scores], ...] = ()
    """For a whole query of several sentences, each sentence's vector (read in the query's context) and its cosine
    with every catalog row: the vector signal gives a tool its best over the query and these."""


@dataclass(frozen=True)
class RerankContext:
    """What a rerank signal scores: the request over the rows it may return, once retrieval has ranked them."""

    settings: Settings
    request: SelectRequest
    catalog: Catalog
    standing: Standing
    """The catalog as the request's tenant sees it: what its own calls and ratings made of each tool."""
    rows: Rows
    """The catalog rows scored, ascending (the candidates and what the reply may add): every array here and every
    score a rerank signal returns is aligned with them, not with the whole catalog."""
    relevance: Scores
    """Retrieval's fused relevance, the best over the query's parts."""
    success: Scores
    """Each row's success rate in this context: its posterior mean, or a Thompson draw to explore."""
    last_success_s: Scores
    """Each row's last success in this tenant's context, seconds since the epoch (NaN: never)."""
    vector: Vector | None
    """The whole query's embedding, None without one."""
    reviews: ReviewLookup | None
    user_history: UserHistory
    now_s: float


Context = TypeVar("Context", contravariant=True)


class Signal(Protocol[Context]):
    """One score per catalog row, weighed by its name in the settings."""

    @property
    def name(self) -> str:
        """Its key in the registry and in the weights setting."""

    @property
    def field(self) -> str | None:
        """The ``ScoreBreakdown`` field that shows it to the caller (None: not shown)."""

    def scores(self, ctx: Context) -> Scores:
        """A float64 array over the catalog rows (a rerank signal: over ``RerankContext.rows``)."""


class RetrievalSignal(Signal[QueryContext], Protocol):
    """Scores each query (or part of one); fused into the relevance by ``Settings.fusion_weights``."""

    def trust(self, scores: Scores, ctx: QueryContext) -> float:
        """The share of its fusion weight it gets for this query (1.0: all of it)."""


class RerankSignal(Signal[RerankContext], Protocol):
    """Scores the request once retrieval ranked it; weighed into the composite by ``Settings.rerank_weights``."""

    @property
    def neutral(self) -> float:
        """The score that moves nothing: the composite weighs the distance from it."""
