"""Warnings that senders cause, kept to a few lines a minute per kind: one line for each bad event would let anyone
who can send events grow a service's log without end (it is rotated only when the service starts)."""

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass
class _Window:
    start: float
    logged: int = 0
    held: int = 0


class LogBudget:
    """At most ``lines`` warnings of one key every ``window_s`` seconds; past them the warnings are counted, and the
    count is logged when the window ends (on the running event loop; without one, with the next warning of that
    key), so that a flood that stops is still told."""

    def __init__(
        self, log: logging.Logger, lines: int, window_s: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._log = log
        self._lines = lines
        self._window_s = window_s
        self._clock = clock
        self._windows: dict[str, _Window] = {}

    def warning(self, key: str, message: str, *args: object) -> None:
        now = self._clock()
        window = self._windows.get(key)
        if window is None or now - window.start >= self._window_s:
            if window is not None:
                self._tell(key, window, now)
            window = self._windows[key] = _Window(now)
        if window.logged < self._lines:
            window.logged += 1
            self._log.warning(message, *args)
            if window.logged == self._lines:
                self._log.warning("further %s warnings are counted, not logged, for %.0f s", key, self._window_s)
        else:
            window.held += 1
            if window.held == 1:
                with contextlib.suppress(RuntimeError):  # no running loop: told with the next warning
                    ending = window.start + self._window_s - now
                    asyncio.get_running_loop().call_later(ending, lambda: self._tell(key, window, self._clock()))

    def _tell(self, key: str, window: _Window, now: float) -> None:
        """Log how many warnings of ``key`` the ended ``window`` counted, once."""
        if window.held:
            self._log.warning("%d more %s warnings were not logged in %.0f s", window.held, key, now - window.start)
            window.held = 0
