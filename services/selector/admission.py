"""Fair admission of selections: at most ``running`` at once, and when one ends its permit goes to the next request
round-robin across the requests' tenants, first come first served within a tenant. One tenant's burst then delays
another tenant's select by about one selection per tenant waiting, where a shared first-come queue made it wait
for the whole burst (docs/results.md, Fair selects).

A tenant may have ``per_tenant`` requests waiting; the next is refused at once (``rate_limited``), so what one
sender can make a selector hold is bounded whatever its rate. A request whose handler is cancelled (the subscriber
stopping) leaves its place, and a permit handed to it as it gave up goes on to the next.

Turns are shared only between the requests that have reached the gate. Selections run on the event loop, and the
NATS client hands the subscriber one request every two turns of the loop (FastStream's own semaphore and stream
each yield once), so while selections keep the loop busy a burst reaches the gate no faster than it is served, and
a request behind it waits for the whole burst before it even reaches the gate. So a selection given a permit first
lets the requests waiting at NATS (``backlog``) come in, for at most ``intake_turns`` turns of the loop: a burst is
taken in (and its excess refused) in a fraction of the time it takes to serve, and another tenant's request
behind it gets its turn.
"""

import asyncio
from collections import OrderedDict, deque
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from toolsel.contracts import ErrorCode
from toolsel.messaging import RequestError

INTAKE_WINDOW = 4
"""Turns of the event loop in which a backlog that is being taken in shrinks: the NATS client hands the subscriber
one request every two turns."""


def nothing_waiting() -> int:
    """No backlog: the requests reach the gate as they arrive."""
    return 0


class Admission:
    """The permits of selections running at once, shared fairly between the requests' tenants (a tenant's
    identities, and the operator selecting for it, take its turns)."""

    def __init__(
        self, running: int, per_tenant: int, backlog: Callable[[], int] = nothing_waiting, intake_turns: int = 0
    ) -> None:
        self.free = running
        """Permits no selection holds. Never above 0 while a request waits: a freed permit goes to a waiter."""
        self.per_tenant = per_tenant
        self.backlog = backlog
        """Requests received and not yet at the gate (the NATS client's, for the subscriber)."""
        self.intake_turns = intake_turns
        """The most turns of the event loop a selection given a permit leaves to the backlog first."""
        self.queues: OrderedDict[str, deque[asyncio.Future[None]]] = OrderedDict()
        """Tenants with requests waiting, in the order of their next turn; each tenant's requests in arrival order."""
        self.refused = 0
        """Requests refused (``rate_limited``) since the start, for the selector's health."""

    @property
    def waiting(self) -> int:
        """Requests waiting for a permit, of every tenant."""
        return sum(map(len, self.queues.values()))

    @asynccontextmanager
    async def admitted(self, tenant: str) -> AsyncIterator[None]:
        """Hold a permit for the body: at once when one is free, no one waits and nothing is left to take in (no
        wait added to an idle selector), else at ``tenant``'s turn. Raises ``RequestError`` (``rate_limited``) when
        ``tenant`` already has ``per_tenant`` requests waiting."""
        if self.free and not self.queues:
            self.free -= 1
        else:
            await self._turn(tenant)
        try:
            await self._taken_in()
            yield
        finally:
            self._release()

    async def _taken_in(self) -> None:
        """Let the backlog reach the gate before the selection takes the event loop (at most ``intake_turns``), as
        long as it drains: a backlog that did not shrink in ``INTAKE_WINDOW`` turns is one the subscriber may not take
        in (it holds all it may), and waiting on it would only spin the loop."""
        left = self.backlog()
        for turn in range(1, self.intake_turns + 1):
            if not left:
                return
            await asyncio.sleep(0)
            if turn % INTAKE_WINDOW == 0:
                now = self.backlog()
                if now >= left:
                    return
                left = now

    async def _turn(self, tenant: str) -> None:
        queue = self.queues.get(tenant)
        waiting = len(queue) if queue is not None else 0
        if waiting >= self.per_tenant:
            self.refused += 1
            raise RequestError(
                ErrorCode.RATE_LIMITED,
                f"{tenant} has {waiting} selects waiting at this selector, the most one tenant may:"
                " send more once some are answered",
            )
        if queue is None:
            queue = self.queues[tenant] = deque()
        turn = asyncio.get_running_loop().create_future()
        queue.append(turn)
        try:
            await turn
        except asyncio.CancelledError:
            if turn.cancelled():
                self._forget(tenant, turn)
            else:  # the permit was handed over as its requester gave up: the next one takes it
                self._release()
            raise

    def _release(self) -> None:
        """The permit to the first request of the tenant whose turn it is, which then goes to the back of the round;
        kept free when no one waits."""
        while self.queues:
            tenant, queue = self.queues.popitem(last=False)
            turn = queue.popleft()
            if queue:
                self.queues[tenant] = queue
            if not turn.done():  # one cancelled before it could leave its place is passed over
                turn.set_result(None)
                return
        self.free += 1

    def _forget(self, tenant: str, turn: asyncio.Future[None]) -> None:
        queue = self.queues.get(tenant)
        if queue is not None and turn in queue:
            queue.remove(turn)
            if not queue:
                del self.queues[tenant]
