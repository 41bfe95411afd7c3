"""The micro-batcher: a lone request goes to the model at once, requests that arrive while it is busy go together in
its next call, a model failure reaches every request of its batch, and a batch after the workers stopped fails at
once instead of leaving its requests waiting."""

import asyncio
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, cast

import pytest

from tests.unit.selector.factory import AxisEmbedder
from toolsel.embedder import Embedder
from toolsel.services.selector.batching import Batcher


class Failing(AxisEmbedder):
    def embed_requests(self, requests: Sequence[tuple[str, Sequence[str]]]) -> list[list[Any]]:
        raise OSError("the model is gone")


class Recorded(AxisEmbedder):
    """The batches the model was given; a batch whose first query is "hold" waits until the test releases it."""

    def __init__(self) -> None:
        super().__init__({})
        self.batches: list[list[str]] = []
        self.release = threading.Event()

    def embed_requests(self, requests: Sequence[tuple[str, Sequence[str]]]) -> list[list[Any]]:
        self.batches.append([query for query, _ in requests])
        if requests[0][0] == "hold":
            assert self.release.wait(10)
        return super().embed_requests(requests)


async def test_a_lone_request_goes_to_the_model_at_once_and_others_gather_while_it_is_busy() -> None:
    model = Recorded()
    with ThreadPoolExecutor(1) as workers:
        batcher = Batcher(cast(Embedder, model), workers, workers=1, size=2)
        held = asyncio.create_task(batcher.embed("hold", []))
        await asyncio.sleep(0.05)
        assert model.batches == [["hold"]]  # started without waiting for company
        later = [asyncio.create_task(batcher.embed(q, [])) for q in ("a", "b", "c")]
        await asyncio.sleep(0.05)
        assert model.batches == [["hold"]]  # the one worker is busy: the others wait
        model.release.set()
        await asyncio.wait_for(asyncio.gather(held, *later), 5)
    assert model.batches == [["hold"], ["a", "b"], ["c"]]  # then together, at most `size` a call


async def test_a_failed_model_call_fails_every_request_of_its_batch() -> None:
    with ThreadPoolExecutor(1) as workers:
        batcher = Batcher(cast(Embedder, Failing({})), workers, workers=1, size=8)
        done = await asyncio.gather(batcher.embed("a", []), batcher.embed("b", []), return_exceptions=True)
    assert [str(d) for d in done] == ["the model is gone"] * 2


async def test_a_batch_after_the_workers_stopped_fails_at_once() -> None:
    workers = ThreadPoolExecutor(1)
    workers.shutdown()
    batcher = Batcher(cast(Embedder, AxisEmbedder({})), workers, workers=1, size=8)
    with pytest.raises(RuntimeError):
        await asyncio.wait_for(batcher.embed("a", []), 2)
