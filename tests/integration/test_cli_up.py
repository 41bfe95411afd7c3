"""A plain `toolsel up` (no TOOLSEL_ADMIN_TOKEN) makes the operators' token itself: kept 0600 in the home, given
to its services, used by the CLI on the machine and printed by `toolsel env`. The demo keeps to demo-* plugins and
`toolsel demo --reset` removes them."""

import json
import os
import shlex
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from toolsel.embedded import ADMIN_TOKEN_FILE
from toolsel.stack import STACK_FILE, TOOLSEL_COMMAND


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLSEL_") and k != "COLUMNS"}
    return env | {"TOOLSEL_HOME": str(home)}


def _toolsel(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*TOOLSEL_COMMAND, *args], env=_env(home), capture_output=True, text=True, timeout=600)


def _wait_up(home: Path, up: subprocess.Popen[bytes], timeout_s: float = 180) -> None:
    deadline = time.monotonic() + timeout_s
    while not (home / STACK_FILE).exists():
        assert up.poll() is None, "toolsel up exited"
        assert time.monotonic() < deadline, "toolsel up did not come up"
        time.sleep(0.2)


def _live_plugins(home: Path) -> set[str]:
    listed = _toolsel(home, "tools", "list", "--format", "json")
    assert listed.returncode == 0, listed.stderr
    return {t["plugin_id"] for t in json.loads(listed.stdout)["tools"]}


def test_up_makes_the_token_and_the_demo_cleans_up_after_itself() -> None:
    home = Path(tempfile.mkdtemp(prefix="toolsel-cliup-"))  # not pytest's: PostgreSQL runs as another user
    up = subprocess.Popen([*TOOLSEL_COMMAND, "up"], env=_env(home), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        _wait_up(home, up)
        token = home / ADMIN_TOKEN_FILE
        assert token.stat().st_mode & 0o777 == 0o600
        assert _live_plugins(home) == set()  # the admin API answers with nothing configured

        exports = dict(line.removeprefix("export ").split("=", 1) for line in _toolsel(home, "env").stdout.splitlines())
        assert shlex.split(exports["TOOLSEL_ADMIN_TOKEN"]) == [token.read_text()]
        assert shlex.split(exports["TOOLSEL_NATS_URL"])[0].startswith("nats://operator:")

        demo = _toolsel(home, "demo")
        assert demo.returncode == 0, demo.stderr
        assert "demo-*" in demo.stdout
        assert "toolsel demo --reset" in demo.stdout
        demo_plugins = _live_plugins(home)
        assert demo_plugins
        assert all(p.startswith("demo-") for p in demo_plugins)

        reset = _toolsel(home, "demo", "--reset")
        assert reset.returncode == 0, reset.stderr
        assert "removed the demo" in reset.stdout
        assert _live_plugins(home) == set()
    finally:
        up.send_signal(signal.SIGTERM)
        up.wait(60)
