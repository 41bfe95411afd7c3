"""Micro-batched embeddings: the requests that arrive while the model is busy are embedded together in its next call.

A request that finds a worker free goes to the model at once, alone: an idle selector adds no wait to a request.
While every worker runs a batch, requests gather; the first worker to finish takes them all (up to ``size``) in
one call. With 16 requests in flight the model reads them several at a time, at its batch rate. Each batch runs
in a worker thread, off the event loop, and each request's vectors land in the model's cache, where its selection
finds them.
"""

import asyncio
from collections.abc import Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import Any

from toolsel.embedder import Embedder

Request = tuple[str, Sequence[str]]
"""A request's query and its parts, as ``Embedder.embed_request`` takes them."""


@dataclass
class Batcher:
    embedder: Embedder
    executor: Executor
    workers: int
    """Batches that run at once (the executor's threads)."""
    size: int
    """Requests per batch at most."""
    _waiting: list[tuple[Request, "asyncio.Future[None]"]] = field(default_factory=list)
    _running: int = 0

    async def embed(self, query: str, parts: Sequence[str]) -> None:
        """Once this request's vectors are in the model's cache; raises what the model raised."""
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.append(((query, parts), done))
        self._start_while_free()
        await done

    def _start_while_free(self) -> None:
        """The waiting requests to the model, a batch per free worker."""
        while self._waiting and self._running < self.workers:
            batch, self._waiting = self._waiting[: self.size], self._waiting[self.size :]
            self._start(batch)

    def _start(self, batch: list[tuple[Request, "asyncio.Future[None]"]]) -> None:
        """One batch to a worker thread; when it ends, its requests are told and the next batch starts."""
        waiting = [f for _, f in batch]
        try:
            running = asyncio.get_running_loop().run_in_executor(
                self.executor, self.embedder.embed_requests, [r for r, _ in batch]
            )
        except RuntimeError as stopped:  # the workers were shut down (the app is stopping): nobody waits in vain
            _settle_all(waiting, stopped)
            return
        self._running += 1
        running.add_done_callback(lambda ran: self._ended(ran, waiting))

    def _ended(self, ran: "asyncio.Future[Any]", waiting: list["asyncio.Future[None]"]) -> None:
        self._running -= 1
        _settle_all(waiting, asyncio.CancelledError() if ran.cancelled() else ran.exception())
        self._start_while_free()


def _settle_all(waiting: list["asyncio.Future[None]"], failed: BaseException | None) -> None:
    """Each request of the batch told it is done, or of the model's failure."""
    for done in waiting:
        if done.done():  # its requester gave up (cancelled)
            continue
        if failed is None:
            done.set_result(None)
        else:
            done.set_exception(failed)
