"""The stack's supervision of a server, on a real nats-server: one that dies is reaped (not left <defunct>) and
started again on its port, so clients reconnect to the same URL; a start that fails (its port taken) is recorded
as the server being down, in the stack file too, and tried again after the backoff."""

import json
import os
import signal
import socket
import time
from collections.abc import Callable
from pathlib import Path

import psutil

from toolsel.embedded import EmbeddedNats
from toolsel.settings import Settings
from toolsel.stack import STACK_FILE, Endpoints, Stack, Supervision


def _supervise_until(stack: Stack, done: Callable[[], bool], timeout_s: float = 20) -> None:
    deadline = time.monotonic() + timeout_s
    while not done():
        assert time.monotonic() < deadline, "supervision did not get there"
        stack.supervise()
        time.sleep(0.05)


def test_a_killed_nats_is_reaped_and_restarted_on_its_port_and_a_failed_start_is_retried(tmp_path: Path) -> None:
    stack = Stack(Settings(home=tmp_path, restart_backoff_s=0.05, restart_backoff_max_s=0.2))
    stack.nats = EmbeddedNats(tmp_path / "nats")
    url = stack.nats.start()
    stack.endpoints = Endpoints(url, "postgresql://unused")
    stack.supervision["nats"] = Supervision()
    try:
        first = stack.nats.process
        assert first is not None
        os.kill(first.pid, signal.SIGKILL)
        with socket.socket() as squatter:  # the port taken: the restart fails, is recorded and retried
            squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            _supervise_until(stack, lambda: first.poll() is not None)
            squatter.bind(("127.0.0.1", stack.nats.port))
            squatter.listen()
            _supervise_until(stack, lambda: stack.supervision["nats"].last_error is not None)
            assert json.loads((tmp_path / STACK_FILE).read_text())["down"]["nats"].startswith("EmbeddedError")
            assert stack.supervision["nats"].restarts == 0
        _supervise_until(stack, lambda: stack.supervision["nats"].restarts == 1)
        state = stack.supervision["nats"]
        assert (state.last_error, state.down_since) == (None, None)
        assert state.last_down_s is not None
        assert stack.nats.url == url
        assert stack.nats.running()
        assert not psutil.pid_exists(first.pid)  # reaped, not left <defunct>
        info = json.loads((tmp_path / STACK_FILE).read_text())
        assert (info["restarts"], info["down"]) == ({"nats": 1}, {})
        assert info["servers"]["nats"] == stack.nats.pid
    finally:
        stack.nats.stop()
