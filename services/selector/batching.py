"""Micro-batched embeddings: the requests a selector takes at once have their queries embedded in one model call.

A request that finds nothing waiting opens a batch and waits ``TOOLSEL_EMBEDDING_BATCH_WAIT_MS`` for others to join
it (a full batch goes at once); the batch then runs in a worker thread, off the event loop, and each request's
vectors land in the model's cache, where its selection finds them. With 16 requests in flight the model reads
them several at a time, at its batch rate; a lone request waits the short bound, no more.
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
    wait_s: float
    size: int
    """Requests per batch at most."""
    _waiting: list[tuple[Request, "asyncio.Future[None]"]] = field(default_factory=list)
    _timer: asyncio.TimerHandle | None = None

    async def embed(self, query: str, parts: Sequence[str]) -> None:
        """Once this request's vectors are in the model's cache; raises what the model raised."""
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.append(((query, parts), done))
        if len(self._waiting) >= self.size or self.wait_s <= 0:
            self._flush()
        elif self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self.wait_s, self._flush)
        await done

    def _flush(self) -> None:
        """The waiting requests to the model, in one worker thread's call."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        batch, self._waiting = self._waiting, []
        if not batch:
            return
        waiting = [f for _, f in batch]
        try:
            running = asyncio.get_running_loop().run_in_executor(
                self.executor, self.embedder.embed_requests, [r for r, _ in batch]
            )
        except RuntimeError as stopped:  # the workers were shut down (the app is stopping): nobody waits in vain
            for done in waiting:
                if not done.done():
                    done.set_exception(stopped)
            return
        running.add_done_callback(lambda ran: _settle(ran, waiting))


def _settle(ran: "asyncio.Future[Any]", waiting: list["asyncio.Future[None]"]) -> None:
    """Each request of the batch told it is done, or of the model's failure."""
    failed = ran.exception()
    for done in waiting:
        if done.done():  # its requester gave up (cancelled)
            continue
        if failed is None:
            done.set_result(None)
        else:
            done.set_exception(failed)
