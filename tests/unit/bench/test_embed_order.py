"""The embedder batches texts by length yet returns one row per text in the order given."""

from collections import OrderedDict
from collections.abc import Iterator, Sequence

import numpy as np
import pytest

from toolsel.embedder import Embedder, length_order


class LengthModel:
    """Stands in for fastembed: a text's vector is (its length, 1); records the order it was asked in."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def embed(self, texts: Sequence[str], batch_size: int) -> Iterator[np.ndarray]:
        self.seen = list(texts)
        return iter([np.array([len(t), 1.0]) for t in texts])


def test_length_order_is_shortest_first_and_stable() -> None:
    assert length_order(["ccc", "a", "bb", "d"]) == [1, 3, 2, 0]


def test_rows_come_back_in_the_callers_order() -> None:
    embedder = Embedder.__new__(Embedder)
    model = LengthModel()
    embedder._model, embedder._batch_size, embedder.dim = model, 2, 2
    texts = ["a" * 30, "a", "a" * 7]
    rows = embedder.embed(texts)
    assert model.seen == ["a", "a" * 7, "a" * 30]
    expected = np.array([[30, 1], [1, 1], [7, 1]], dtype=np.float32)
    np.testing.assert_allclose(rows, expected / np.linalg.norm(expected, axis=1, keepdims=True), rtol=1e-6)


class CountingModel(LengthModel):
    """LengthModel that counts its calls."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def embed(self, texts: Sequence[str], batch_size: int) -> Iterator[np.ndarray]:
        self.calls += 1
        return super().embed(texts, batch_size)


def embedder_over(model: LengthModel, cache_size: int) -> Embedder:
    embedder = Embedder.__new__(Embedder)
    embedder._model, embedder._batch_size, embedder.dim = model, 8, 2
    embedder._cache, embedder._cache_size = OrderedDict(), cache_size
    return embedder


def test_a_query_and_its_parts_cost_one_model_call_and_repeats_none() -> None:
    model = CountingModel()
    embedder = embedder_over(model, cache_size=8)
    texts = ["a" * 9, "a", "a" * 4, "a"]
    rows = embedder.embed_queries(texts)
    assert model.calls == 1
    assert model.seen == ["a", "a" * 4, "a" * 9]
    assert [float(r[0] / r[1]) for r in rows] == pytest.approx([9, 1, 4, 1])
    again = embedder.embed_queries(["a" * 4, "a" * 9])
    assert model.calls == 1  # all cached
    assert [float(r[0] / r[1]) for r in again] == pytest.approx([4, 9])
    embedder.embed_queries(["a" * 2, "a"])
    assert model.calls == 2
    assert model.seen == ["a" * 2]


def test_the_query_cache_keeps_at_most_its_size_and_vectors_are_read_only() -> None:
    model = CountingModel()
    embedder = embedder_over(model, cache_size=2)
    rows = embedder.embed_queries(["a", "aa", "aaa"])
    assert list(embedder._cache) == ["aa", "aaa"]
    assert not rows[0].flags.writeable
    embedder.embed_query("a")
    assert model.calls == 2  # "a" was evicted
