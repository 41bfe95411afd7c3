"""The selector's fair admission: permits taken at once when free, handed round-robin across scopes and in arrival
order within one, a scope's excess refused at once, and a cancelled request's place (or permit) passed on."""

import asyncio
from collections.abc import Awaitable, Callable

import pytest

from toolsel.contracts import ErrorCode
from toolsel.messaging import RequestError
from toolsel.services.selector.admission import INTAKE_WINDOW, Admission


async def run(gate: Admission, scope: str, name: str, order: list[str], hold: asyncio.Event | None = None) -> None:
    """One request: it notes when its turn came, then holds its permit until ``hold`` is set."""
    async with gate.admitted(scope):
        order.append(name)
        if hold is not None:
            await hold.wait()


async def queued(*requests: Awaitable[None]) -> list[asyncio.Task[None]]:
    """Each request started, in this order, and waiting at the gate (or done) before the next starts."""
    tasks = []
    for request in requests:
        tasks.append(asyncio.ensure_future(request))
        await asyncio.sleep(0)
    return tasks


async def test_a_request_that_finds_a_permit_free_and_no_one_waiting_runs_without_yielding() -> None:
    gate = Admission(running=2, per_tenant=1)
    admitted = gate.admitted("t.acme.a")
    entering = admitted.__aenter__()
    with pytest.raises(StopIteration):  # done at its first step: it never waited on the event loop
        entering.send(None)
    assert (gate.free, gate.queues) == (1, {})
    await admitted.__aexit__(None, None, None)
    assert gate.free == 2


async def test_permits_go_round_robin_across_scopes_and_in_arrival_order_within_one() -> None:
    gate, order, hold = Admission(running=1, per_tenant=10), [], asyncio.Event()
    tasks = await queued(
        run(gate, "op", "holder", order, hold),
        run(gate, "t.acme.a", "a1", order),
        run(gate, "t.acme.a", "a2", order),
        run(gate, "t.acme.a", "a3", order),
        run(gate, "t.victim.v", "v1", order),
        run(gate, "t.victim.v", "v2", order),
        run(gate, "t.other.o", "o1", order),
    )
    assert (order, gate.waiting) == (["holder"], 6)
    hold.set()
    await asyncio.gather(*tasks)
    assert order == ["holder", "a1", "v1", "o1", "a2", "v2", "a3"]
    assert (gate.free, gate.queues) == (1, {})


async def test_a_scope_past_its_waiting_bound_is_refused_at_once_and_others_still_wait() -> None:
    gate, order, hold = Admission(running=1, per_tenant=2), [], asyncio.Event()
    tasks = await queued(
        run(gate, "t.acme.a", "holder", order, hold),
        run(gate, "t.acme.a", "a1", order),
        run(gate, "t.acme.a", "a2", order),
    )
    (a3,) = await queued(run(gate, "t.acme.a", "a3", order))
    refused = a3.exception()  # answered at its first step, without waiting for a turn
    assert isinstance(refused, RequestError)
    assert refused.detail.code is ErrorCode.RATE_LIMITED
    assert "2 selects waiting" in refused.detail.message
    assert gate.refused == 1  # counted for the selector's health
    tasks += await queued(run(gate, "t.victim.v", "v1", order))  # the bound is the scope's, not the selector's
    assert gate.waiting == 3
    hold.set()
    await asyncio.gather(*tasks)
    assert order == ["holder", "a1", "v1", "a2"]


async def test_a_cancelled_request_leaves_its_place() -> None:
    gate, order, hold = Admission(running=1, per_tenant=2), [], asyncio.Event()
    holder, a1, a2 = await queued(
        run(gate, "op", "holder", order, hold), run(gate, "t.acme.a", "a1", order), run(gate, "t.acme.a", "a2", order)
    )
    a1.cancel()
    await asyncio.sleep(0)
    assert gate.waiting == 1
    (a3,) = await queued(run(gate, "t.acme.a", "a3", order))  # its place is free again: not refused
    hold.set()
    await asyncio.gather(holder, a2, a3)
    assert order == ["holder", "a2", "a3"]
    assert a1.cancelled()
    assert (gate.free, gate.queues) == (1, {})


async def test_a_permit_handed_to_a_request_as_it_is_cancelled_goes_on_to_the_next() -> None:
    gate, order, hold = Admission(running=1, per_tenant=2), [], asyncio.Event()
    holding = gate.admitted("op")
    await holding.__aenter__()
    a1, v1 = await queued(run(gate, "t.acme.a", "a1", order), run(gate, "t.victim.v", "v1", order, hold))
    await holding.__aexit__(None, None, None)  # hands the permit to a1 ...
    a1.cancel()  # ... which gives up before it could run
    await asyncio.wait([a1])
    await asyncio.sleep(0)
    assert order == ["v1"]
    hold.set()
    await v1
    assert a1.cancelled()
    assert (gate.free, gate.queues) == (1, {})


async def turns_until(condition: Callable[[], bool], turns: int = 100) -> bool:
    """Whether ``condition()`` holds within this many turns of the event loop."""
    for _ in range(turns):
        if condition():
            return True
        await asyncio.sleep(0)
    return condition()


async def test_a_selection_given_a_permit_lets_the_requests_waiting_upstream_reach_the_gate_first() -> None:
    upstream = list(range(40))  # requests NATS holds

    async def handed_over() -> None:  # as the client hands the subscriber one every two turns of the loop
        while upstream:
            await asyncio.sleep(0)
            await asyncio.sleep(0)
            upstream.pop()

    intake = asyncio.ensure_future(handed_over())
    gate, order = Admission(running=1, per_tenant=1, backlog=lambda: len(upstream), intake_turns=1000), []
    task = asyncio.ensure_future(run(gate, "op", "holder", order))
    assert not await turns_until(lambda: bool(order), turns=30)  # it waits while the backlog drains ...
    assert await turns_until(lambda: bool(order), turns=200)  # ... and runs once it is taken in
    assert not upstream
    await asyncio.gather(task, intake)


async def test_a_backlog_that_does_not_drain_holds_no_selection() -> None:
    gate, order = Admission(running=1, per_tenant=1, backlog=lambda: 5, intake_turns=1000), []
    task = asyncio.ensure_future(run(gate, "op", "holder", order))  # the subscriber holds all it may: none comes in
    assert await turns_until(lambda: bool(order), turns=2 * INTAKE_WINDOW)  # it runs without waiting out the bound
    await task


async def test_the_wait_for_the_requests_upstream_is_bounded() -> None:
    gate, order = Admission(running=1, per_tenant=1, backlog=lambda: 1, intake_turns=10), []
    task = asyncio.ensure_future(run(gate, "op", "holder", order))  # a backlog that never drains ...
    assert await turns_until(lambda: bool(order))  # ... holds no selection for good
    await task
