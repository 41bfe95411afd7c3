"""Wrong credentials counted per client address, so that a guesser is refused before its credential costs a check:
the dashboard's admin token (``toolsel.dashboard``) and MCP over HTTP's bearer tokens (``toolsel.mcp.tenants``)."""

import math
import time
from collections import deque
from collections.abc import Callable
from typing import Final

from toolsel.errors import TooManyAttempts

CLIENTS_TRACKED: Final = 10_000
"""Client addresses whose recent failures are remembered at most: the oldest is forgotten first, so a flood of
addresses cannot grow the server's memory."""


class Throttle:
    """Wrong credentials (``what``: "wrong admin tokens") counted per client address: past ``attempts`` within
    ``window_s``, the address's every credential is refused without being checked until its oldest failure leaves
    the window. The credentials are 32 random bytes, so guessing is hopeless anyway; this keeps a guesser from
    costing the server (a bcrypt check, a log line) more."""

    def __init__(self, attempts: int, window_s: float, what: str, clock: Callable[[], float] = time.monotonic):
        self.attempts = attempts
        self.window_s = window_s
        self.what = what
        self._clock = clock
        self._failures: dict[str, deque[float]] = {}

    def wait_s(self, client: str) -> int:
        """Whole seconds until ``client``'s oldest failure leaves the window while it is over its failures, else 0."""
        failures = self._recent(client)
        if len(failures) < self.attempts:
            return 0
        return math.ceil(failures[0] + self.window_s - self._clock())

    def check(self, client: str) -> None:
        """``TooManyAttempts`` (saying how long to wait) while ``client`` is over its failures."""
        wait = self.wait_s(client)
        if wait:
            raise TooManyAttempts.saying(
                f"{len(self._recent(client))} {self.what} from this address in {self.window_s:g} s: wait {wait} s"
            )

    def failed(self, client: str) -> None:
        failures = self._recent(client)
        failures.append(self._clock())
        self._failures.pop(client, None)
        self._failures[client] = failures  # the most recent last, so the oldest address goes first
        while len(self._failures) > CLIENTS_TRACKED:
            del self._failures[next(iter(self._failures))]

    def _recent(self, client: str) -> deque[float]:
        failures = self._failures.get(client, deque())
        since = self._clock() - self.window_s
        while failures and failures[0] <= since:
            failures.popleft()
        return failures
