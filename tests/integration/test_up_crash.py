"""`toolsel up` killed outright leaves no service behind, and the next `toolsel up` on the same home works."""

import json
import os
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import psutil

from toolsel.stack import TOOLSEL_COMMAND


def home_env(home: Path, **settings: str) -> dict[str, str]:
    """This environment without its toolsel settings, for a stack in ``home`` with ``settings`` (and no dashboard:
    test_cli_up checks the one ``toolsel up`` starts)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLSEL_")}
    return env | {"TOOLSEL_HOME": str(home), "TOOLSEL_DASHBOARD_PORT": "0", **settings}


def _up(home: Path, **settings: str) -> subprocess.Popen[bytes]:
    env = home_env(home, **settings)
    return subprocess.Popen([*TOOLSEL_COMMAND, "up"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _stack_file(home: Path, up: subprocess.Popen[bytes], timeout_s: float = 120) -> dict[str, object]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            info: dict[str, object] = json.loads((home / "stack.json").read_text())
            if info["pid"] == up.pid:
                return info
        except (OSError, ValueError):
            pass
        assert up.poll() is None, "toolsel up exited"
        time.sleep(0.2)
    raise AssertionError("toolsel up did not come up")


def _gone(pids: list[int], timeout_s: float = 15) -> bool:
    deadline = time.monotonic() + timeout_s
    while any(psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE for p in pids):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def test_a_killed_up_leaves_nothing_and_the_next_one_starts() -> None:
    tmp_path = Path(tempfile.mkdtemp(prefix="toolsel-upcrash-"))  # not pytest's: PostgreSQL runs as another user
    first = _up(tmp_path)
    services = [int(p) for p in _stack_file(tmp_path, first)["services"].values()]  # type: ignore[union-attr]
    nats = [p.pid for p in psutil.Process(first.pid).children() if p.name() == "nats-server"]
    assert len(services) == 3
    assert len(nats) == 1
    first.send_signal(signal.SIGKILL)
    first.wait()
    assert _gone(services + nats), "services or NATS outlived a killed toolsel up"

    second = _up(tmp_path)  # stale stack file, stale ports file, PostgreSQL still running: all fine
    try:
        _stack_file(tmp_path, second)
        status = subprocess.run(
            [*TOOLSEL_COMMAND, "status"], env=home_env(tmp_path), capture_output=True, text=True, timeout=60
        )
        assert status.returncode == 0, status.stdout
    finally:
        second.send_signal(signal.SIGTERM)
        second.wait(60)
