"""The dashboard's throttle on wrong admin tokens, on a clock the test moves: an address is refused after its
failures fill the window, and again allowed once the oldest leaves it; other addresses are untouched."""

import pytest

from toolsel import throttle as module
from toolsel.errors import TooManyAttempts
from toolsel.throttle import Throttle


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_an_address_is_refused_past_its_failures_until_the_oldest_leaves_the_window() -> None:
    clock = Clock()
    throttle = Throttle(attempts=3, window_s=60, what="wrong admin tokens", clock=clock)
    for _ in range(3):
        throttle.check("10.0.0.1")
        throttle.failed("10.0.0.1")
        clock.now += 10
    with pytest.raises(TooManyAttempts, match="3 wrong admin tokens from this address in 60 s: wait 30 s"):
        throttle.check("10.0.0.1")
    assert (throttle.wait_s("10.0.0.1"), throttle.wait_s("10.0.0.2")) == (30, 0)  # Retry-After over MCP
    throttle.check("10.0.0.2")  # another address is not held back
    clock.now += 29.5
    with pytest.raises(TooManyAttempts):
        throttle.check("10.0.0.1")
    clock.now += 0.5  # the first failure is now 60 s old
    throttle.check("10.0.0.1")
    throttle.failed("10.0.0.1")
    with pytest.raises(TooManyAttempts, match="wait 10 s"):
        throttle.check("10.0.0.1")


def test_the_addresses_remembered_are_bounded_the_oldest_forgotten_first(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(module, "CLIENTS_TRACKED", 3)
    throttle = Throttle(attempts=1, window_s=60, what="wrong admin tokens", clock=Clock())
    for address in ("a", "b", "c", "a", "d"):
        throttle.failed(address)
    throttle.check("b")  # forgotten: "b" failed longest ago once "a" failed again
    for address in ("a", "c", "d"):
        with pytest.raises(TooManyAttempts):
            throttle.check(address)
