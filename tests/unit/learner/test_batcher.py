"""The batcher splits a failing batch so that only the items to blame see the error; hypothesis varies where."""

import asyncio
from collections.abc import Awaitable, Callable, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolsel.services.learner.batcher import Batcher


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
    return await asyncio.gather(*(batcher.submit(i) for i in items), return_exceptions=True)


@settings(max_examples=200, deadline=None)
@given(size=st.integers(1, 40), data=st.data())
def test_only_the_poisoned_items_fail_and_every_other_one_is_applied(size: int, data: st.DataObject) -> None:
    poison = data.draw(st.sets(st.integers(0, size - 1), max_size=size))
    calls: list[list[int]] = []
    batcher = Batcher(_apply_unless(poison, calls), max_size=size, max_wait_s=0, isolate=lambda e: True)
    results = asyncio.run(_submit_all(batcher, range(size)))
    for item, result in enumerate(results):
        if item in poison:
            assert isinstance(result, Poisoned)
        else:
            assert result == item * 10
    assert len(calls) <= 2 * size  # a bisection: never more transactions than nodes of the split tree


async def test_a_failure_not_to_be_isolated_fails_the_whole_batch_once() -> None:
    calls: list[list[int]] = []
    batcher = Batcher(_apply_unless({1}, calls), max_size=3, max_wait_s=0, isolate=lambda e: False)
    results = await _submit_all(batcher, [0, 1, 2])
    assert [type(r) for r in results] == [Poisoned] * 3
    assert calls == [[0, 1, 2]]


async def test_a_wrong_number_of_results_fails_the_batch_instead_of_leaving_it_waiting() -> None:
    async def short(batch: Sequence[int]) -> list[int]:
        return [0]

    results = await _submit_all(Batcher(short, max_size=2, max_wait_s=0), [1, 2])
    assert [type(r) for r in results] == [RuntimeError] * 2


@pytest.mark.parametrize(("size", "in_flight"), [(0, 1), (1, 0)])
def test_bad_sizes_are_refused(size: int, in_flight: int) -> None:
    with pytest.raises(ValueError, match="max_size"):
        Batcher(_apply_unless(set(), []), max_size=size, max_wait_s=0, max_in_flight=in_flight)


def _held(calls: list[list[int]], release: asyncio.Event) -> Callable[[Sequence[int]], Awaitable[list[int]]]:
    """An apply that records each batch and finishes only once ``release`` is set: its slot stays busy."""

    async def apply(batch: Sequence[int]) -> list[int]:
        calls.append(list(batch))
        await release.wait()
        return list(batch)

    return apply


async def test_items_arriving_while_every_slot_is_busy_form_one_next_batch() -> None:
    calls: list[list[int]] = []
    release = asyncio.Event()
    batcher = Batcher(_held(calls, release), max_size=100, max_wait_s=0, max_in_flight=1)
    first = batcher.enqueue(0)
    await asyncio.sleep(0.01)  # the first batch is being applied
    later = [batcher.enqueue(i) for i in range(1, 6)]
    for _ in range(3):
        await asyncio.sleep(0.01)
    assert calls == [[0]]  # they wait for the slot instead of starting batches of their own
    release.set()
    assert await asyncio.gather(first, *later) == [0, 1, 2, 3, 4, 5]
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
    batcher = Batcher(_held(started, release), max_size=2, max_wait_s=0, max_in_flight=2)
    futures = [batcher.enqueue(i) for i in range(5)]
    await asyncio.sleep(0.01)
    assert started == [[0, 1], [2, 3]]  # both slots busy; item 4 waits for one
    release.set()
    assert await asyncio.gather(*futures) == [0, 1, 2, 3, 4]
    assert started == [[0, 1], [2, 3], [4]]
