"""Micro-batching: items submitted one by one by concurrent callers are applied together, a batch at a time.

The learner applies its events in batches, one transaction each; a selector embeds the queries of the requests in
flight in one model call. Each caller submits its item and awaits the outcome of the batch it landed in, so the
learner acknowledges an event only after its batch committed (or negatively acknowledges it when the batch
failed).

At most ``max_in_flight`` batches are applied at once. Items that arrive while every slot is busy wait and form the
next batch when one frees (at most ``max_size`` of them), so a busy consumer works through its backlog in a few
large batches rather than many small ones queueing for the same rows or the same cores. With a slot free, an item
waits at most ``max_wait_s`` for others to join it; ``0`` makes the batcher work-conserving: a lone item goes at
once, and items gather only while every slot is busy.

A batch that fails for what may be one item's fault (``isolate``) is split in halves, each applied on its own,
until the failing items stand alone: the others succeed and only the culprits see the error.
"""

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Generic, NoReturn, TypeVar

T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True)
class _Failed:
    error: BaseException


def _never(error: Exception) -> bool:
    return False


class Batcher(Generic[T, R]):
    """Apply up to ``max_size`` items at once, waiting at most ``max_wait_s`` after the first one arrives (or,
    with every one of the ``max_in_flight`` slots busy, until one frees).

    ``apply`` gets each batch and returns one result per item, in order. It is called the moment its batch starts,
    so work it hands to a thread (``loop.run_in_executor``) starts then, not a turn of the event loop later.
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
        self._in_flight = 0
        self._tasks: set[asyncio.Task[None]] = set()  # the running batches, kept from the garbage collector

    async def submit(self, item: T) -> R:
        """The result of applying ``item`` (as part of a batch); raises what its batch (or, split, it) raised."""
        return await self.enqueue(item)

    def enqueue(self, item: T) -> "asyncio.Future[R]":
        """Add ``item`` to the open batch now; the future holds its result once its batch is applied."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[R] = loop.create_future()
        self._items.append(item)
        self._futures.append(future)
        if len(self._items) >= self._max_size or self._max_wait_s == 0:
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
        while self._items and self._in_flight < self._max_in_flight:
            items, futures = self._items[:size], self._futures[:size]
            self._items, self._futures = self._items[size:], self._futures[size:]
            self._in_flight += 1
            task = asyncio.get_running_loop().create_task(self._run(items, futures, self._begin(items)))
            self._tasks.add(task)
            task.add_done_callback(self._ended)

    def _begin(self, items: Sequence[T]) -> Awaitable[Sequence[R]]:
        """``apply`` called now; what it raises at once (an executor shut down) is raised when awaited."""
        try:
            return self._apply(items)
        except Exception as error:
            return _raising(error)

    async def _run(self, items: list[T], futures: list["asyncio.Future[R]"], applying: Awaitable[Sequence[R]]) -> None:
        outcomes = await self._settle(items, applying)
        self._in_flight -= 1
        for future, outcome in zip(futures, outcomes, strict=True):
            if future.done():  # its caller gave up (cancelled)
                continue
            if isinstance(outcome, _Failed):
                future.set_exception(outcome.error)
            else:
                future.set_result(outcome)
        self._flush()  # what waited for the slot has waited long enough

    def _ended(self, task: "asyncio.Task[None]") -> None:
        self._tasks.discard(task)
        if task.cancelled():  # shutting down: its slot is free, and what waits is redelivered
            self._in_flight -= 1

    async def _settle(self, items: Sequence[T], applying: Awaitable[Sequence[R]]) -> list[R | _Failed]:
        """One result (or failure) per item: the batch's, or, when it failed and may be split, its halves'."""
        try:
            results: list[R | _Failed] = list(await applying)
        except asyncio.CancelledError as dropped:
            if _cancelled():
                raise
            return [_Failed(dropped)] * len(items)  # what it awaited was cancelled (a stopping executor dropped it)
        except Exception as error:
            if len(items) == 1 or not self._isolate(error):
                return [_Failed(error)] * len(items)
            half = len(items) // 2
            first, second = items[:half], items[half:]
            return [*await self._settle(first, self._begin(first)), *await self._settle(second, self._begin(second))]
        if len(results) != len(items):
            return [_Failed(RuntimeError(f"{len(results)} results for {len(items)} items"))] * len(items)
        return results


async def _raising(error: Exception) -> NoReturn:
    raise error


def _cancelled() -> bool:
    """Whether the running task itself was cancelled (the app stopping), not just the work it awaited."""
    task = asyncio.current_task()
    return task is None or task.cancelling() > 0
