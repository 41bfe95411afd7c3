"""The micro-batcher: a model failure reaches every request of its batch, and a batch after the workers stopped
fails at once instead of leaving its requests waiting."""

import asyncio
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


async def test_a_failed_model_call_fails_every_request_of_its_batch() -> None:
    with ThreadPoolExecutor(1) as workers:
        batcher = Batcher(cast(Embedder, Failing({})), workers, 0.05, 8)
        done = await asyncio.gather(batcher.embed("a", []), batcher.embed("b", []), return_exceptions=True)
    assert [str(d) for d in done] == ["the model is gone"] * 2


async def test_a_batch_after_the_workers_stopped_fails_at_once() -> None:
    workers = ThreadPoolExecutor(1)
    workers.shutdown()
    batcher = Batcher(cast(Embedder, AxisEmbedder({})), workers, 0.01, 8)  # flushed by its timer
    with pytest.raises(RuntimeError):
        await asyncio.wait_for(batcher.embed("a", []), 2)
