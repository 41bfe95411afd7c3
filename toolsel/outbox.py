"""The outbox: events published in order, a batch at a time, that outlive a NATS or JetStream outage."""

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")
OUTBOX_FIRST_RETRY_S = 0.05
"""The first wait after a failed publish (doubled after each failure in a row)."""


class Outbox(Generic[T]):
    """Events that must outlive a NATS or JetStream outage: ``put`` never waits; one task publishes them in
    order, a batch at a time, and keeps the ones that failed for its next attempt (backing off up to
    ``retry_max_s``). Memory is bounded: beyond ``capacity`` new events are dropped and counted."""

    def __init__(self, publish: Callable[[T], Awaitable[object]], capacity: int, batch: int, retry_max_s: float):
        self.publish, self.capacity, self.batch, self.retry_max_s = publish, capacity, batch, retry_max_s
        self.queue: deque[T] = deque()
        self.published = 0
        self.dropped = 0
        self._waiting = asyncio.Event()
        self._empty = asyncio.Event()
        self._empty.set()
        self._task: asyncio.Task[None] | None = None
        self._closed = False

    def put(self, event: T) -> None:
        if self._closed:  # nothing would publish it: counted, never queued in silence
            self.dropped += 1
            log.error("an event came after the outbox closed: %d dropped so far", self.dropped)
            return
        if len(self.queue) >= self.capacity:
            self.dropped += 1
            if self.dropped == 1 or self.dropped % 1000 == 0:
                log.error("outbox full (%d events): %d dropped so far", self.capacity, self.dropped)
            return
        self.queue.append(event)
        self._empty.clear()
        self._waiting.set()

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def close(self, timeout_s: float) -> None:
        """Give what is buffered ``timeout_s`` to go out, then stop; what is left, and what comes after, is counted
        as dropped."""
        self._closed = True
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._empty.wait(), timeout_s)
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        if self.queue:
            log.error("%d events not published at shutdown", len(self.queue))
            self.dropped += len(self.queue)
            self.queue.clear()

    async def _run(self) -> None:
        failures = 0
        while True:
            if not self.queue:
                self._empty.set()
                self._waiting.clear()
                await self._waiting.wait()
            batch = [self.queue.popleft() for _ in range(min(self.batch, len(self.queue)))]
            try:
                results = await asyncio.gather(*(self.publish(event) for event in batch), return_exceptions=True)
            except asyncio.CancelledError:  # closed mid-batch: not known to be published, so counted with the rest
                self.queue.extendleft(reversed(batch))
                raise
            failed = [event for event, result in zip(batch, results, strict=True) if isinstance(result, BaseException)]
            self.published += len(batch) - len(failed)
            self.queue.extendleft(reversed(failed))
            if failed:
                failures += 1
                if failures == 1:
                    error = next(r for r in results if isinstance(r, BaseException))
                    log.warning("publishing failed (%r); %d events buffered, retrying", error, len(self.queue))
                await asyncio.sleep(min(OUTBOX_FIRST_RETRY_S * 2**failures, self.retry_max_s))
            elif failures:
                log.info("publishing again after %d failed attempts", failures)
                failures = 0
