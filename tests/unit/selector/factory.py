"""An in-memory catalog built from plain tool descriptions, for testing the selector without servers."""

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
from pgvector import Vector

from toolsel.contracts import SelectRequest
from toolsel.services.selector.catalog import Catalog, ReviewIndex, declared, scoped
from toolsel.services.selector.history import UserHistory
from toolsel.services.selector.retrieval import LexicalIndex, lexical_text
from toolsel.services.selector.signals.base import QueryContext, RerankContext, ReviewLookup
from toolsel.settings import Settings

DIM = 384


@dataclass
class T:
    """One tool: ``axis`` is the direction of its (unit) vector, so tests choose similarities exactly."""

    name: str
    text: str
    axis: int
    plugin: str = "p"
    tenant: str = "*"
    category: str | None = None
    pinned: bool = False
    pin_weight: int = 0
    quarantined: bool = False
    tags: list[str] = field(default_factory=list)
    server: str = ""
    related: list[str] = field(default_factory=list)
    pin_scope: dict[str, Any] | None = None


def catalog(
    tools: list[T],
    mappings: list[tuple[str, str, str, int]] | None = None,
    parents: dict[tuple[str, str], str | None] | None = None,
) -> Catalog:
    specs: list[dict[str, object]] = [
        {"name": t.name, "description": t.text, "tags": t.tags, "parameters": {"type": "object"}}
        | ({"server": t.server} if t.server else {})
        | ({"related_tools": t.related} if t.related else {})
        | ({"pin_scope": t.pin_scope} if t.pin_scope else {})
        for t in tools
    ]
    vectors = np.zeros((len(tools), DIM), dtype=np.float32)
    for i, t in enumerate(tools):
        vectors[i, t.axis] = 1.0
    n = len(tools)
    return Catalog(
        keys=[f"{t.plugin}/{t.name}" for t in tools],
        written=np.zeros(n, dtype=np.int64),
        plugin_ids=[t.plugin for t in tools],
        names=[t.name for t in tools],
        tenants=np.array([t.tenant for t in tools], dtype=np.str_),
        categories=[t.category for t in tools],
        specs=[declared(s) for s in specs],
        tags=[frozenset(t.tags) for t in tools],
        vectors=vectors,
        has_vector=np.ones(n, dtype=bool),
        pinned=np.array([t.pinned for t in tools], dtype=bool),
        pin_scoped=np.array([t.pinned and scoped(t.pin_scope) for t in tools], dtype=bool),
        pin_weight=np.array([t.pin_weight for t in tools], dtype=np.int64),
        quarantined=np.array([t.quarantined for t in tools], dtype=bool),
        rating=np.ones(n),
        calls=np.zeros(n),
        performance=np.full(n, 0.5),
        schema_tokens=np.full(n, 10, dtype=np.int64),
        lexical=LexicalIndex.of_texts([lexical_text(s) for s in specs], k1=0.9, b=0.4),
        page_mappings=mappings or [],
        category_parents=parents or {},
    )


class AxisEmbedder:
    """Embeds a query to the unit vector of the first axis whose keyword it contains (exact similarities)."""

    dim = DIM

    def __init__(self, keywords: dict[str, int]) -> None:
        self.keywords = keywords

    def embed_request(self, query: str, parts: Sequence[str] = ()) -> list[npt.NDArray[np.float32]]:
        return [self._embed(text) for text in (query, *parts)]

    def embed_requests(self, requests: Sequence[tuple[str, Sequence[str]]]) -> list[list[npt.NDArray[np.float32]]]:
        return [self.embed_request(query, parts) for query, parts in requests]

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        return self._embed(text)

    def cached(self, query: str, parts: Sequence[str] = ()) -> bool:
        """Nothing to embed ahead: it keeps no cache."""
        return True

    def _embed(self, text: str) -> npt.NDArray[np.float32]:
        vector = np.zeros(DIM, dtype=np.float32)
        for word, axis in self.keywords.items():
            if word in text:
                vector[axis] = 1.0
        norm = np.linalg.norm(vector)
        return vector / norm if norm else vector


def axis(i: int) -> npt.NDArray[np.float32]:
    """The unit vector of one axis."""
    vector = np.zeros(DIM, dtype=np.float32)
    vector[i] = 1.0
    return vector


def usage_record(
    key: str,
    centroid: int,
    version: int,
    scope: str = "acme",
    negative: int | None = None,
    positives: int = 64,
    words: list[str] | None = None,
    residual: npt.NDArray[np.float32] | None = None,
) -> dict[str, Any]:
    """A row of ``store.USAGE_VECTORS_SINCE``: the tool learnt queries along axis ``centroid``."""
    return {
        "key": key,
        "scope": scope,
        "centroid": Vector(axis(centroid).tolist()),
        "negative_centroid": None if negative is None else Vector(axis(negative).tolist()),
        "positives": positives,
        "words": words or [],
        "residual": None if residual is None else Vector(residual.tolist()),
        "version": version,
    }


def reviews(cat: Catalog, entries: list[tuple[str, int, float]]) -> ReviewLookup:
    """A review index of (tool key, centroid axis, fitness) entries, mapped onto ``cat``'s rows."""
    index = ReviewIndex(
        [key for key, _, _ in entries],
        np.array([axis(a) for _, a, _ in entries], dtype=np.float32).reshape(len(entries), DIM),
        np.array([f for _, _, f in entries], dtype=np.float64),
        np.full(len(entries), "default"),
    )
    rows = np.array([cat.rows.get(key, -1) for key in index.keys], dtype=np.int64)
    return ReviewLookup.of(index, rows, "default", neighbours=10, min_similarity=0.5)


def query_context(
    cat: Catalog,
    query: str = "",
    vector: npt.NDArray[np.float32] | None = None,
    lookup: ReviewLookup | None = None,
    **settings: Any,
) -> QueryContext:
    """One query over the whole catalog."""
    return QueryContext(Settings(**settings), cat, query, np.ones(len(cat), dtype=bool), vector, lookup)


def rerank_context(cat: Catalog, **fields: Any) -> RerankContext:
    """A request over ``cat`` with neutral inputs, but for the ``fields`` given."""
    n = len(cat)
    defaults: dict[str, Any] = {
        "settings": Settings(),
        "request": SelectRequest(query="q"),
        "catalog": cat,
        "standing": cat.standing("default"),
        "rows": np.arange(n, dtype=np.int64),
        "relevance": np.zeros(n),
        "success": np.full(n, 0.5),
        "last_success_s": np.full(n, np.nan),
        "vector": None,
        "reviews": None,
        "user_history": UserHistory(Settings()),
        "now_s": 0.0,
    }
    return RerankContext(**{**defaults, **fields})
