"""Waiting for what happens elsewhere: a service applies events, a selector reloads, a copy starts. Each of those
arrives asynchronously, so the commands and tests that wait for one poll a probe until it holds."""

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")


async def eventually(probe: Callable[[], Awaitable[T]], timeout_s: float, every_s: float = 0.1) -> T:
    """Poll until ``probe`` returns something truthy, or return its last answer at the timeout (it is asked once at
    least, and once more after the deadline passes)."""
    deadline = time.monotonic() + timeout_s
    while True:
        result = await probe()
        if result or time.monotonic() > deadline:
            return result
        await asyncio.sleep(every_s)
