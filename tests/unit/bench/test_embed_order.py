"""The embedder batches texts by token length, within a bound of texts and tokens per call, yet returns one
row per text in the order given."""

import sys
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from toolsel.embedder import BATCH_TOKENS, Embedder, token_batches


class LengthModel:
    """Stands in for fastembed: a text has one token per character and its vector is (its length, 1); records
    the texts of the last call and every call's batch. Its inner model pools no token vectors we can read
    (``model`` None), so a request's parts are embedded alone."""

    model = None

    def __init__(self) -> None:
        self.seen: list[str] = []
        self.batches: list[list[str]] = []

    def token_count(self, text: str) -> int:
        return len(text)

    def embed(self, texts: Sequence[str], batch_size: int) -> Iterator[np.ndarray]:
        assert batch_size == len(texts)
        self.seen = list(texts)
        self.batches.append(self.seen)
        return iter([np.array([len(t), 1.0]) for t in texts])


def embedder_of(model: LengthModel, batch_size: int, batch_tokens: int = BATCH_TOKENS) -> Embedder:
    embedder = Embedder.__new__(Embedder)
    embedder._model, embedder._batch_size, embedder._batch_tokens, embedder.dim = model, batch_size, batch_tokens, 2
    embedder._batches = None
    return embedder


def unit_rows(lengths: Sequence[int]) -> np.ndarray:
    expected = np.array([[n, 1] for n in lengths], dtype=np.float32)
    return expected / np.linalg.norm(expected, axis=1, keepdims=True)


def test_token_batches_bound_texts_and_padded_tokens() -> None:
    assert token_batches([1, 1, 2, 2, 3], max_texts=2, max_tokens=100, max_padding=1.0) == [
        range(0, 2),
        range(2, 4),
        range(4, 5),
    ]
    # padded to the longest: 3 x 3 tokens fit in 10, a fourth of 4 would make 16
    assert token_batches([2, 3, 3, 4, 9, 20], max_texts=8, max_tokens=10, max_padding=1.0) == [
        range(0, 3),
        range(3, 4),
        range(4, 5),
        range(5, 6),
    ]
    assert token_batches([], max_texts=8, max_tokens=10) == []


def test_token_batches_split_where_padding_would_be_wasted() -> None:
    # 10 and 11 pad to 22 tokens, 1 wasted; 30 beside them would pad to 90 with 39 wasted
    assert token_batches([10, 11, 30], max_texts=8, max_tokens=512, max_padding=0.1) == [range(0, 2), range(2, 3)]
    # a query's short parts and the whole query: each length class its own call
    assert token_batches([12, 13, 36, 61], max_texts=8, max_tokens=512, max_padding=0.1) == [
        range(0, 2),
        range(2, 3),
        range(3, 4),
    ]
    assert token_batches([5, 5, 5], max_texts=8, max_tokens=512, max_padding=0.0) == [range(0, 3)]


def test_rows_come_back_in_the_callers_order() -> None:
    model = LengthModel()
    texts = ["a" * 30, "a" * 10, "a" * 11]
    rows = embedder_of(model, batch_size=2).embed(texts)
    assert model.batches == [["a" * 10, "a" * 11], ["a" * 30]]
    np.testing.assert_allclose(rows, unit_rows([30, 10, 11]), rtol=1e-6)


def test_batches_run_side_by_side_with_workers_and_rows_keep_the_callers_order() -> None:
    model = LengthModel()
    embedder = embedder_of(model, batch_size=2)
    embedder._batches = ThreadPoolExecutor(3)
    lengths = [7, 3, 12, 5, 9, 1, 4, 8, 2]
    rows = embedder.embed(["x" * n for n in lengths])
    assert len(model.batches) > 3  # several calls, to run side by side
    assert sorted(len(t) for batch in model.batches for t in batch) == sorted(lengths)
    np.testing.assert_allclose(rows, unit_rows(lengths), rtol=1e-6)


def test_long_texts_go_in_small_batches() -> None:
    model = LengthModel()
    texts = ["a" * 50, "b" * 5, "c" * 5, "d" * 50, "e" * 5, "f" * 120]
    rows = embedder_of(model, batch_size=32, batch_tokens=100).embed(texts)
    assert model.batches == [["b" * 5, "c" * 5, "e" * 5], ["a" * 50, "d" * 50], ["f" * 120]]
    np.testing.assert_allclose(rows, unit_rows([50, 5, 5, 50, 5, 120]), rtol=1e-6)


class CountingModel(LengthModel):
    """LengthModel that counts its calls."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def embed(self, texts: Sequence[str], batch_size: int) -> Iterator[np.ndarray]:
        self.calls += 1
        return super().embed(texts, batch_size)


def embedder_over(model: LengthModel, cache_size: int) -> Embedder:
    embedder = embedder_of(model, batch_size=8)
    embedder._cache, embedder._cache_size, embedder._cache_lock = OrderedDict(), cache_size, threading.Lock()
    return embedder


def test_a_query_and_its_parts_are_embedded_together_unless_padding_would_waste_and_repeats_cost_nothing() -> None:
    model = CountingModel()
    embedder = embedder_over(model, cache_size=8)
    rows = embedder.embed_request("a" * 10, ["b" * 9, "c" * 10, "b" * 9])
    assert model.calls == 1
    assert model.seen == ["b" * 9, "b" * 9, "a" * 10, "c" * 10]
    assert [float(r[0] / r[1]) for r in rows] == pytest.approx([10, 9, 10, 9])
    again = embedder.embed_request("a" * 10, ["b" * 9, "c" * 10, "b" * 9])
    assert model.calls == 1  # the same request: cached
    assert [float(r[0] / r[1]) for r in again] == pytest.approx([10, 9, 10, 9])
    assert float(embedder.embed_query("d" * 2)[0]) == pytest.approx(2 / np.sqrt(5))
    assert model.calls == 2
    assert model.seen == ["d" * 2]
    embedder.embed_request("e" * 40, ["f" * 10, "g" * 10])  # a long request and its short parts: two calls
    assert model.batches[-2:] == [["f" * 10, "g" * 10], ["e" * 40]]


def test_the_query_cache_keeps_at_most_its_size_and_vectors_are_read_only() -> None:
    model = CountingModel()
    embedder = embedder_over(model, cache_size=2)
    rows = [embedder.embed_query(t) for t in ("a" * 10, "b" * 10, "c" * 10)]
    assert list(embedder._cache) == [("b" * 10,), ("c" * 10,)]
    assert not rows[0].flags.writeable
    embedder.embed_query("a" * 10)
    assert model.calls == 4  # "a" was evicted


@pytest.mark.parametrize("cache_size", [0, 1, 8])
def test_requests_read_together_cost_one_model_call_however_few_the_cache_keeps(cache_size: int) -> None:
    model = CountingModel()
    requests = [("a" * 20, ()), ("b" * 21, ()), ("a" * 20, ()), ("c" * 22, ())]
    rows = embedder_over(model, cache_size).embed_requests(requests)
    assert model.batches == [["a" * 20, "b" * 21, "c" * 22]]
    np.testing.assert_allclose(np.vstack([r[0] for r in rows]), unit_rows([20, 21, 20, 22]), rtol=1e-6)


def test_cached_tells_whether_a_request_would_be_answered_from_the_cache() -> None:
    embedder = embedder_over(CountingModel(), cache_size=8)
    embedder.embed_request("a" * 3, ["b" * 4])
    assert embedder.cached("a" * 3, ["b" * 4])
    assert not embedder.cached("a" * 3)  # the query alone is another request
    assert not embedder.cached("c" * 5, ["b" * 4])
    assert embedder_over(CountingModel(), cache_size=0).cached("c" * 5)  # nothing kept: nothing to embed ahead


def test_threads_sharing_the_cache_get_their_own_texts_vectors() -> None:
    """The selector embeds requests in worker threads while its event loop reads the same cache; with a cache
    smaller than the texts, every call evicts what another is reading."""
    embedder = embedder_over(CountingModel(), cache_size=3)
    texts = ["x" * n for n in range(1, 13)]
    failures: list[BaseException] = []

    def hammer(seed: int) -> None:
        rng = np.random.default_rng(seed)
        try:
            for _ in range(300):
                picked = [texts[i] for i in rng.choice(len(texts), size=3)]
                rows = embedder.embed_request(picked[0], picked[1:])
                assert [round(float(r[0] / r[1])) for r in rows] == [len(t) for t in picked]
        except BaseException as error:
            failures.append(error)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as the interpreter allows
    try:
        workers = [threading.Thread(target=hammer, args=(seed,)) for seed in range(4)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
    finally:
        sys.setswitchinterval(interval)
    assert failures == []
    assert len(embedder._cache) <= 3
