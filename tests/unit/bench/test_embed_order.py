"""The embedder batches texts by length yet returns one row per text in the order given."""

from collections.abc import Iterator, Sequence

import numpy as np

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
