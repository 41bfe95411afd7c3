"""Micro-batching: events handled one by one by concurrent handlers are applied together, in one transaction.

Each handler submits its event and awaits the outcome of the batch it landed in, so it acknowledges its own
message only after the batch committed (or negatively acknowledges it when the batch failed).
"""

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Generic, TypeVar

T = TypeVar("T")
R = TypeVar("R")


class Batcher(Generic[T, R]):
    """Apply up to ``max_size`` items at once, waiting at most ``max_wait_s`` after the first one arrives."""

    def __init__(
        self, apply: Callable[[Sequence[T]], Awaitable[Sequence[R]]], *, max_size: int, max_wait_s: float
    ) -> None:
        if max_size < 1 or max_wait_s < 0:
            raise ValueError("max_size must be >= 1 and max_wait_s >= 0")
        self._apply = apply
        self._max_size = max_size
        self._max_wait_s = max_wait_s
        self._items: list[T] = []
        self._futures: list[asyncio.Future[R]] = []
        self._timer: asyncio.TimerHandle | None = None
        self._flushing: set[asyncio.Task[None]] = set()

    async def submit(self, item: T) -> R:
        """The result of applying ``item`` (as part of a batch); raises what the batch raised."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[R] = loop.create_future()
        self._items.append(item)
        self._futures.append(future)
        if len(self._items) >= self._max_size:
            self._flush()
        elif self._timer is None:
            self._timer = loop.call_later(self._max_wait_s, self._flush)
        return await future

    def _flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not self._items:
            return
        items, futures = self._items, self._futures
        self._items, self._futures = [], []
        task = asyncio.get_running_loop().create_task(self._run(items, futures))
        self._flushing.add(task)
        task.add_done_callback(self._flushing.discard)

    async def _run(self, items: list[T], futures: list[asyncio.Future[R]]) -> None:
        try:
            results = await self._apply(items)
        except Exception as error:
            for future in futures:
                if not future.done():
                    future.set_exception(error)
            return
        for future, result in zip(futures, results, strict=True):
            if not future.done():
                future.set_result(result)
