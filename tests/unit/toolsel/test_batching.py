"""The micro-batcher, as the learner runs it (a timer, a split of a failing batch so that only the items to blame see
the error; hypothesis varies where) and as a selector runs it (work-conserving: a lone item goes at once, the items
that arrive while every slot is busy go together in the next batch, batches run in an executor's threads)."""

import asyncio
import threading
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from typing import TypeVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolsel.batching import Batcher

T = TypeVar("T")
NEVER_S = 3600.0
"""A wait that never ends in a test: the batch starts because it is full (or a slot freed), not on the timer."""


class Poisoned(ValueError):
    pass


def _apply_unless(poison: set[int], calls: list[list[int]]) -> Callable[[Sequence[int]], Awaitable[list[int]]]:
    async def apply(batch: Sequence[int]) -> list[int]:
        calls.append(list(batch))
        if poison & set(batch):
            raise Poisoned(f"{sorted(poison & set(batch))}")
        return [item * 10 for item in batch]

    return apply


async def _submit_all(batcher: Batcher[int, int], items: Sequence[int]) -> list[int | BaseException]:
    return await _settled(asyncio.gather(*(batcher.submit(i) for i in items), return_exceptions=True))


async def _settled(waiting: Awaitable[T]) -> T:
    """What ``waiting`` comes to; a future the batcher never settles fails the test instead of hanging it."""
    return await asyncio.wait_for(waiting, 5)


async def _turns(n: int = 3) -> None:
    """Let the event loop run whatever is ready, a few times over."""
    for _ in range(n):
        await asyncio.sleep(0.01)


@settings(max_examples=200, deadline=None)
@given(size=st.integers(1, 40), data=st.data())
def test_only_the_poisoned_items_fail_and_every_other_one_is_applied(size: int, data: st.DataObject) -> None:
    poison = data.draw(st.sets(st.integers(0, size - 1), max_size=size))
    calls: list[list[int]] = []
    batcher = Batcher(_apply_unless(poison, calls), max_size=size, max_wait_s=NEVER_S, isolate=lambda e: True)
    results = asyncio.run(_submit_all(batcher, range(size)))
    for item, result in enumerate(results):
        if item in poison:
            assert isinstance(result, Poisoned)
        else:
            assert result == item * 10
    assert calls[0] == list(range(size))  # one batch of them all, then its halves
    assert len(calls) <= 2 * size  # a bisection: never more transactions than nodes of the split tree


async def test_a_failure_not_to_be_isolated_fails_the_whole_batch_once() -> None:
    calls: list[list[int]] = []
    batcher = Batcher(_apply_unless({1}, calls), max_size=3, max_wait_s=NEVER_S, isolate=lambda e: False)
    results = await _submit_all(batcher, [0, 1, 2])
    assert [type(r) for r in results] == [Poisoned] * 3
    assert calls == [[0, 1, 2]]


async def test_a_wrong_number_of_results_fails_the_batch_instead_of_leaving_it_waiting() -> None:
    async def short(batch: Sequence[int]) -> list[int]:
        return [0]

    results = await _submit_all(Batcher(short, max_size=2, max_wait_s=NEVER_S), [1, 2])
    assert [type(r) for r in results] == [RuntimeError] * 2


@pytest.mark.parametrize(("size", "wait_s", "in_flight"), [(0, 0, 1), (1, 0, 0), (1, -1, 1)])
def test_bad_sizes_are_refused(size: int, wait_s: float, in_flight: int) -> None:
    with pytest.raises(ValueError, match="max_size"):
        Batcher(_apply_unless(set(), []), max_size=size, max_wait_s=wait_s, max_in_flight=in_flight)


async def test_an_item_waits_for_the_batch_to_fill_or_for_the_timer() -> None:
    calls: list[list[int]] = []
    full = Batcher(_apply_unless(set(), calls), max_size=3, max_wait_s=NEVER_S, max_in_flight=2)
    first = [full.enqueue(0), full.enqueue(1)]
    await _turns()
    assert calls == []  # a slot is free, but the batch is neither full nor timed out
    last = full.enqueue(2)
    assert await _settled(asyncio.gather(*first, last)) == [0, 10, 20]
    assert calls == [[0, 1, 2]]
    timed = Batcher(_apply_unless(set(), calls), max_size=3, max_wait_s=0.01)
    assert await _settled(timed.submit(3)) == 30  # alone, once the timer ran out
    assert calls == [[0, 1, 2], [3]]


def _held(calls: list[list[int]], release: asyncio.Event) -> Callable[[Sequence[int]], Awaitable[list[int]]]:
    """An apply that records each batch and finishes only once ``release`` is set: its slot stays busy."""

    async def apply(batch: Sequence[int]) -> list[int]:
        calls.append(list(batch))
        await release.wait()
        return list(batch)

    return apply


async def test_a_lone_item_is_applied_at_once_when_nothing_waits() -> None:
    calls: list[list[int]] = []

    def apply(batch: Sequence[int]) -> Awaitable[list[int]]:  # as `run_in_executor`: the work starts on the call
        calls.append(list(batch))
        done: asyncio.Future[list[int]] = asyncio.get_running_loop().create_future()
        done.set_result(list(batch))
        return done

    batcher = Batcher(apply, max_size=8, max_wait_s=0, max_in_flight=2)
    first = batcher.enqueue(0)
    assert calls == [[0]]  # started within `enqueue`: not a timer's or a task's turn of the loop later
    second = batcher.enqueue(1)
    assert calls == [[0], [1]]  # the other slot was free too
    assert await _settled(asyncio.gather(first, second)) == [0, 1]


async def test_items_arriving_while_every_slot_is_busy_form_one_next_batch() -> None:
    calls: list[list[int]] = []
    release = asyncio.Event()
    batcher = Batcher(_held(calls, release), max_size=100, max_wait_s=0, max_in_flight=1)
    first = batcher.enqueue(0)
    await _turns(1)  # the first batch is being applied
    later = [batcher.enqueue(i) for i in range(1, 6)]
    await _turns()
    assert calls == [[0]]  # they wait for the slot instead of starting batches of their own
    release.set()
    assert await _settled(asyncio.gather(first, *later)) == [0, 1, 2, 3, 4, 5]
    assert calls == [[0], [1, 2, 3, 4, 5]]


async def test_a_full_backlog_is_cut_into_batches_of_at_most_max_size() -> None:
    calls: list[list[int]] = []
    batcher = Batcher(_apply_unless(set(), calls), max_size=4, max_wait_s=0, max_in_flight=2)
    assert await _submit_all(batcher, range(10)) == [i * 10 for i in range(10)]
    assert sorted(i for call in calls for i in call) == list(range(10))
    assert max(len(call) for call in calls) <= 4


async def test_a_backlog_fills_every_free_slot_at_once() -> None:
    started: list[list[int]] = []
    release = asyncio.Event()
    batcher = Batcher(_held(started, release), max_size=2, max_wait_s=NEVER_S, max_in_flight=2)
    futures = [batcher.enqueue(i) for i in range(5)]
    await _turns(1)
    assert started == [[0, 1], [2, 3]]  # both slots busy; item 4 waits for one, not for its timer
    release.set()
    assert await _settled(asyncio.gather(*futures)) == [0, 1, 2, 3, 4]
    assert started == [[0, 1], [2, 3], [4]]


async def test_an_item_whose_caller_gave_up_leaves_the_rest_of_its_batch_served() -> None:
    calls: list[list[int]] = []
    release = asyncio.Event()
    batcher = Batcher(_held(calls, release), max_size=3, max_wait_s=NEVER_S)
    callers = [asyncio.create_task(batcher.submit(i)) for i in range(3)]
    await _turns()
    callers[0].cancel()
    release.set()
    assert await _settled(asyncio.gather(*callers[1:])) == [1, 2]
    assert calls == [[0, 1, 2]]


async def test_a_batch_cancelled_on_shutdown_starts_no_other_and_what_waits_stays_waiting() -> None:
    calls: list[list[int]] = []
    running: list[asyncio.Task[object] | None] = []

    async def apply(batch: Sequence[int]) -> list[int]:
        calls.append(list(batch))
        running.append(asyncio.current_task())
        await asyncio.Event().wait()
        return list(batch)

    batcher = Batcher(apply, max_size=8, max_wait_s=0)
    first = batcher.enqueue(0)
    later = [batcher.enqueue(i) for i in (1, 2)]
    await _turns(1)
    task = running[0]
    assert task is not None
    task.cancel()  # the app stopping: a redelivery will bring these events again
    await _turns()
    assert task.cancelled()
    assert calls == [[0]]
    assert not any(f.done() for f in (first, *later))


def _in_threads(
    workers: Executor, work: Callable[[Sequence[str]], list[str]]
) -> Callable[[Sequence[str]], Awaitable[list[str]]]:
    """An apply that runs each batch in one of ``workers``' threads, off the event loop, as a selector embeds."""
    return lambda batch: asyncio.get_running_loop().run_in_executor(workers, work, batch)


class Model:
    """The batches it was given, each in a worker thread; a batch whose first item is "hold" waits for the test."""

    def __init__(self) -> None:
        self.batches: list[list[str]] = []
        self.threads: set[str] = set()
        self.release = threading.Event()

    def read(self, batch: Sequence[str]) -> list[str]:
        self.batches.append(list(batch))
        self.threads.add(threading.current_thread().name)
        if batch[0] == "hold":
            assert self.release.wait(10)
        return [item.upper() for item in batch]


async def test_in_threads_a_lone_request_goes_at_once_and_others_gather_while_it_is_busy() -> None:
    model = Model()
    with ThreadPoolExecutor(1, thread_name_prefix="embed") as workers:
        batcher = Batcher(_in_threads(workers, model.read), max_size=2, max_wait_s=0, max_in_flight=1)
        held = asyncio.create_task(batcher.submit("hold"))
        await _turns()
        assert model.batches == [["hold"]]  # started without waiting for company
        later = [asyncio.create_task(batcher.submit(q)) for q in ("a", "b", "c")]
        await _turns()
        assert model.batches == [["hold"]]  # the one worker is busy: the others wait
        model.release.set()
        assert await _settled(asyncio.gather(held, *later)) == ["HOLD", "A", "B", "C"]
    assert model.batches == [["hold"], ["a", "b"], ["c"]]  # then together, at most `max_size` a call
    assert model.threads == {"embed_0"}  # never on the event loop's thread


async def test_in_threads_a_failed_call_fails_every_request_of_its_batch() -> None:
    def failing(batch: Sequence[str]) -> list[str]:
        raise OSError("the model is gone")

    with ThreadPoolExecutor(1) as workers:
        batcher = Batcher(_in_threads(workers, failing), max_size=8, max_wait_s=0)
        done = await _settled(asyncio.gather(batcher.submit("a"), batcher.submit("b"), return_exceptions=True))
    assert [str(d) for d in done] == ["the model is gone"] * 2


async def test_after_the_workers_stopped_every_request_fails_at_once() -> None:
    workers = ThreadPoolExecutor(1)
    workers.shutdown()
    batcher = Batcher(_in_threads(workers, Model().read), max_size=1, max_wait_s=0)
    done = await _settled(asyncio.gather(*(batcher.submit(q) for q in "abc"), return_exceptions=True))
    assert [type(d) for d in done] == [RuntimeError] * 3


async def test_a_batch_the_stopping_workers_dropped_fails_its_requests_and_the_next_one_starts() -> None:
    model = Model()
    workers = ThreadPoolExecutor(1)
    batcher = Batcher(_in_threads(workers, model.read), max_size=1, max_wait_s=0, max_in_flight=2)
    held, queued, waiting = (asyncio.create_task(batcher.submit(q)) for q in ("hold", "queued", "waiting"))
    await _turns()
    assert model.batches == [["hold"]]  # "queued" waits in the executor's queue, "waiting" for a slot
    workers.shutdown(wait=False, cancel_futures=True)  # the app stopping: the executor drops "queued"
    with pytest.raises(asyncio.CancelledError):
        await _settled(queued)
    with pytest.raises(RuntimeError):  # its slot freed: "waiting" went to the stopped workers, and was refused
        await _settled(waiting)
    model.release.set()
    assert await _settled(held) == "HOLD"
    assert model.batches == [["hold"]]
