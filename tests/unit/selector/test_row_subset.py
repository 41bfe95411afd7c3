"""Scoring only the rows a selection can return gives the answer scoring every catalog row gives: random
catalogs (tenants, pins, related tools, learnt posteriors, compound queries, score filters) answered both ways."""

import zlib
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from tests.unit.selector.factory import DIM
from toolsel.contracts import SelectRequest
from toolsel.services.selector import stages
from toolsel.services.selector.catalog import Catalog, declared
from toolsel.services.selector.confidence import best_rank
from toolsel.services.selector.pipeline import candidates
from toolsel.services.selector.retrieval import LexicalIndex, lexical_text, ranks, ranks_of
from toolsel.services.selector.selector import Selector
from toolsel.settings import Settings

WORDS = ["send", "email", "read", "inbox", "weather", "forecast", "search", "flights", "book", "hotel", "file", "city"]
QUERIES = [
    "send an email to the hotel",
    "weather forecast for a city",
    "search flights and then book a hotel room",
    "read the inbox, upload a file, and send an email",
    "unknown words only",
]


def _catalog(rng: np.random.Generator, n: int) -> Catalog:
    specs: list[dict[str, object]] = []
    for i in range(n):
        related = [f"t{j}" for j in rng.choice(n, size=int(rng.integers(0, 3)), replace=False)]
        text = " ".join(rng.choice(WORDS, size=int(rng.integers(2, 7))))
        specs.append({"name": f"t{i}", "description": text, "parameters": {"type": "object"}, "related_tools": related})
    vectors = rng.normal(size=(n, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    has_vector = rng.random(n) > 0.1
    vectors[~has_vector] = 0.0
    return Catalog(
        keys=[f"p/t{i}" for i in range(n)],
        written=np.zeros(n, dtype=np.int64),
        plugin_ids=["p"] * n,
        names=[f"t{i}" for i in range(n)],
        tenants=rng.choice(np.array(["*", "default", "other"]), size=n, p=[0.6, 0.2, 0.2]),
        categories=[None] * n,
        specs=[declared(s) for s in specs],
        tags=[frozenset()] * n,
        vectors=vectors,
        has_vector=has_vector,
        pinned=rng.random(n) < 0.05,
        pin_scoped=np.zeros(n, dtype=bool),
        pin_weight=rng.integers(0, 3, size=n),
        quarantined=rng.random(n) < 0.03,
        rating=rng.uniform(0.5, 1.0, size=n),
        calls=rng.integers(0, 50, size=n).astype(np.float64),
        performance=rng.random(n),
        schema_tokens=np.full(n, 10, dtype=np.int64),
        lexical=LexicalIndex.of_texts([lexical_text(s) for s in specs], k1=0.9, b=0.4),
    )


class _HashEmbedder:
    """A fixed random unit vector per text."""

    dim = DIM

    def embed_request(self, query: str, parts: Sequence[str] = ()) -> list[npt.NDArray[np.float32]]:
        texts = (query, *parts)
        vectors = [np.random.default_rng(zlib.crc32(t.encode())).normal(size=DIM).astype(np.float32) for t in texts]
        return [v / np.linalg.norm(v) for v in vectors]


def _draw(alpha: stages.Scores, beta: stages.Scores, rng: np.random.Generator | None) -> stages.Scores:
    """A stand-in for the Thompson draw that is a function of each row alone (the real one's random stream
    depends on how many rows draw), so both ways see the same draws and the same later ``rng.random()``."""
    result: stages.Scores = np.modf(alpha * 0.618 + beta * 0.414)[0]
    return result


def _answer(sel: Selector, request: SelectRequest) -> dict[str, object]:
    reply, event = sel.select(request)
    shown = reply.model_dump(exclude={"selection_id", "latency_ms"})
    return {**shown, "event": [t.model_dump() for t in event.tools]}


@pytest.mark.parametrize("seed", range(20))
def test_the_row_subset_answers_as_every_row_does(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(seed)
    cat = _catalog(rng, 120)
    settings = Settings(
        retrieval_candidates=6,
        exploration_depth=15,
        exploration_slots=1,
        fusion="rrf" if seed % 3 == 0 else "scores",
        context_key_template="{tier}:{page}:general",
    )
    sel = Selector(settings, cat, _HashEmbedder())
    for row in rng.choice(len(cat), size=70, replace=False):  # most rows learnt: their draws differ
        sel.learn(cat.keys[row], "default", "free:*:general", *rng.uniform(0.5, 30.0, size=2), None)
    monkeypatch.setattr(stages, "thompson", _draw)
    requests = [
        SelectRequest(query=q, k=int(rng.integers(1, 8)), seed=int(rng.integers(1000)), rerank=rerank)
        for q in QUERIES
        for rerank in (True, True, True, False)
    ]
    requests.append(SelectRequest.model_validate({"query": QUERIES[0], "seed": 1, "filters": {"min_score": 0.3}}))
    subset = [_answer(sel, r) for r in requests]
    monkeypatch.setattr(candidates, "_rows_read", lambda held, *_: np.arange(len(held.catalog), dtype=np.int64))
    assert subset == [_answer(sel, r) for r in requests]


@given(
    hnp.arrays(np.float64, st.integers(1, 60), elements=st.sampled_from([0.0, 0.1, 0.2, 0.5, 0.7, 1.0, -0.3])),
    st.data(),
)
def test_ranks_of_some_rows_are_their_ranks_among_all(scores: stages.Scores, data: st.DataObject) -> None:
    mask = data.draw(hnp.arrays(np.bool_, scores.size))
    rows = np.array(sorted(data.draw(st.sets(st.integers(0, scores.size - 1)))), dtype=np.int64)
    assert ranks_of(scores, mask, rows).tolist() == ranks(scores, mask)[rows].tolist()


@given(
    hnp.arrays(np.float64, (3, 40), elements=st.sampled_from([0.0, 0.1, 0.2, 0.5, 0.7, 1.0, -0.3])),
    st.integers(1, 3),
    st.integers(1, 10),
    st.data(),
)
def test_best_ranks_read_off_the_top_n_are_the_best_ranks_among_all(
    scores: np.ndarray, parts: int, n: int, data: st.DataObject
) -> None:
    """A compound request's parts (ties and zeros aplenty), each ranked to one depth; rows inside and past it."""
    mask = data.draw(hnp.arrays(np.bool_, scores.shape[1]))
    rows = np.array(sorted(data.draw(st.sets(st.integers(0, scores.shape[1] - 1)))), dtype=np.int64)
    relevances = list(scores[:parts])
    rankings = [stages.top_n(relevance, mask, n) for relevance in relevances]
    expected = np.minimum.reduce([ranks(relevance, mask)[rows] for relevance in relevances])
    assert best_rank(relevances, rankings, mask, rows).tolist() == expected.tolist()
