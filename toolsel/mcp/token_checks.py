"""Bearer tokens checked so that wrong ones cannot make the right ones wait. A token verified before is answered
on the event loop from the verifier's memory. A token not seen before costs a bcrypt check, run on threads of
its own with a bounded number waiting: past it the request is refused at once (HTTP 503) instead of queued. A
client address whose recent tokens were wrong is refused unchecked (HTTP 429) until its failures leave the
window."""

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Final

from starlette.authentication import AuthenticationError

from toolsel.errors import TooManyAttempts
from toolsel.identities import Identity, Verifier
from toolsel.throttle import Throttle

BUSY_RETRY_AFTER_S: Final = 1
"""What a request refused for want of a free check is told to wait: a check takes tens of milliseconds, so the
queue has moved on by then."""


class TokenRefused(AuthenticationError):
    """A token left unchecked: the HTTP status that says why (429: its client failed too often lately; 503: too
    many checks wait) and the whole seconds to wait before retrying (``Retry-After``)."""

    def __init__(self, why: str, status: int, retry_after_s: int):
        super().__init__(why)
        self.status = status
        self.retry_after_s = retry_after_s


class TokenChecks:
    """The identity of a client's bearer token, checked with ``threads`` of its own and at most ``waiting``
    more checks queued for them; ``throttle`` counts the client addresses' wrong tokens."""

    def __init__(self, verifier: Verifier, throttle: Throttle, threads: int, waiting: int):
        self.verifier = verifier
        self.throttle = throttle
        self._pool = ThreadPoolExecutor(threads, thread_name_prefix="token-check")
        self._slots = threading.BoundedSemaphore(threads + waiting)
        """A slot per check running or waiting, freed when its check ends, even one whose request is gone."""

    async def identity(self, token: str, client: str) -> Identity | None:
        """The token's identity, None for a wrong one; ``TokenRefused`` when it is left unchecked."""
        known = self.verifier.remembered(token)
        if known is not None:
            return known
        try:
            self.throttle.check(client)
        except TooManyAttempts as error:
            raise TokenRefused(error.detail.message, 429, self.throttle.wait_s(client)) from None
        if not self._slots.acquire(blocking=False):
            raise TokenRefused("too many bearer tokens are being checked: retry shortly", 503, BUSY_RETRY_AFTER_S)
        check = self._pool.submit(self.verifier.verify, token)
        check.add_done_callback(lambda _: self._slots.release())
        identity = await asyncio.wrap_future(check)
        if identity is None:
            self.throttle.failed(client)
        return identity
