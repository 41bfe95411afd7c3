"""Micro-batching: events handled one by one by concurrent handlers are applied together, in one transaction.

Each handler submits its event and awaits the outcome of the batch it landed in, so it acknowledges its own
message only after the batch committed (or negatively acknowledges it when the batch failed). A batch that
fails for what may be one item's fault is split in halves, each applied on its own, until the failing items
stand alone: the others commit and only the culprits see the error.

At most ``max_in_flight`` batches are applied at once. Items that arrive while every slot is busy wait and
form the next batch when one frees, so a consumer behind its stream catches up in a few large transactions
rather than many small ones queueing for the same rows.
"""

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True)
class _Failed:
    error: Exception


def _never(error: Exception) -> bool:
    return False


class Batcher(Generic[T, R]):
    """Apply up to ``max_size`` items at once, waiting at most ``max_wait_s`` after the first one arrives (or,
    with every one of the ``max_in_flight`` slots busy, until one frees).

    ``isolate`` says whether a failure may be an item's fault (then the batch is split to find it) rather than
    the whole batch's (a server away: every item gets the error, as is).
    """

    def __init__(
        self,
        apply: Callable[[Sequence[T]], Awaitable[Sequence[R]]],
        *,
        max_size: int,
        max_wait_s: float,
        max_in_flight: int = 1,
        isolate: Callable[[Exception], bool] = _never,
    ) -> None:
        if max_size < 1 or max_wait_s < 0 or max_in_flight < 1:
            raise ValueError("max_size and max_in_flight must be >= 1 and max_wait_s >= 0")
        self._apply = apply
        self._isolate = isolate
        self._max_size = max_size
        self._max_wait_s = max_wait_s
        self._max_in_flight = max_in_flight
        self._items: list[T] = []
        self._futures: list[asyncio.Future[R]] = []
        self._timer: asyncio.TimerHandle | None = None
        self._flushing: set[asyncio.Task[None]] = set()

    async def submit(self, item: T) -> R:
        """The result of applying ``item`` (as part of a batch); raises what its batch (or, split, it) raised."""
        return await self.enqueue(item)

    def enqueue(self, item: T) -> "asyncio.Future[R]":
        """Add ``item`` to the open batch now; the future holds its result once its batch is applied."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[R] = loop.create_future()
        self._items.append(item)
        self._futures.append(future)
        if len(self._items) >= self._max_size:
            self._flush()
        elif self._timer is None:
            self._timer = loop.call_later(self._max_wait_s, self._flush)
        return future

    def _flush(self) -> None:
        """Start batches of the waiting items in the free slots (what is left, the next slot to free starts)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        size = self._max_size
        while self._items and len(self._flushing) < self._max_in_flight:
            items, futures = self._items[:size], self._futures[:size]
            self._items, self._futures = self._items[size:], self._futures[size:]
            task = asyncio.get_running_loop().create_task(self._run(items, futures))
            self._flushing.add(task)
            task.add_done_callback(self._done)

    def _done(self, task: "asyncio.Task[None]") -> None:
        self._flushing.discard(task)
        if not task.cancelled():  # cancelled: shutting down, and what waits is redelivered
            self._flush()  # what waited for the slot has waited long enough

    async def _run(self, items: list[T], futures: list[asyncio.Future[R]]) -> None:
        for future, result in zip(futures, await self._settle(items), strict=True):
            if future.done():
                continue
            if isinstance(result, _Failed):
                future.set_exception(result.error)
            else:
                future.set_result(result)

    async def _settle(self, items: Sequence[T]) -> list[R | _Failed]:
        """One result (or failure) per item: the batch's, or, when it failed and may be split, its halves'."""
        try:
            results: list[R | _Failed] = list(await self._apply(items))
        except Exception as error:
            if len(items) == 1 or not self._isolate(error):
                return [_Failed(error)] * len(items)
            half = len(items) // 2
            return [*await self._settle(items[:half]), *await self._settle(items[half:])]
        if len(results) != len(items):
            return [_Failed(RuntimeError(f"{len(results)} results for {len(items)} items"))] * len(items)
        return results
