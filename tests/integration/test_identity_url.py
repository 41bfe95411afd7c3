"""An identity's URL, as `toolsel identity create` prints it, outlives a restart of `toolsel up`: the embedded NATS
keeps its port in the home. When another program holds that port at a start, `toolsel up` says so and `toolsel env
--user TENANT.NAME` prints the URL on the new one."""

import asyncio
import re
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

from tests.integration.test_supervision import _toolsel
from tests.integration.test_up_crash import _stack_file, home_env
from toolsel.client import ToolselClient
from toolsel.embedded import PORT_FILE
from toolsel.stack import TOOLSEL_COMMAND


def _up(home: Path) -> tuple[subprocess.Popen[bytes], Path]:
    """``toolsel up`` on ``home``, its stderr kept in a file, once its stack file is written."""
    errors = home / f"up-{len(list(home.glob('up-*.err')))}.err"
    with errors.open("wb") as log:
        up = subprocess.Popen([*TOOLSEL_COMMAND, "up"], env=home_env(home), stdout=subprocess.DEVNULL, stderr=log)
    _stack_file(home, up)
    return up, errors


def _stop(up: subprocess.Popen[bytes]) -> None:
    up.send_signal(signal.SIGTERM)
    up.wait(60)


def _pins(url: str) -> str:
    """What the identity of ``url`` gets asking its tenant's pins (an identity may)."""

    async def ask() -> str:
        async with ToolselClient(url, timeout_s=30) as identity:
            return (await identity.list_pins()).tenant_id

    return asyncio.run(ask())


def _env_url(home: Path) -> str:
    done = _toolsel(home, "env", "--user", "acme.bot")
    assert done.returncode == 0, done.stderr
    return done.stdout.removeprefix("export TOOLSEL_NATS_URL=").strip()


def test_an_identitys_url_outlives_a_restart_and_a_taken_port_is_said() -> None:
    home = Path(tempfile.mkdtemp(prefix="toolsel-port-"))  # not pytest's: PostgreSQL runs as another user
    (home / "nats").mkdir()
    with socket.socket() as probe:  # kept as by an earlier start: 4222 is every fresh home's first choice, and
        probe.bind(("127.0.0.1", 0))  # another test's `toolsel up` may take it while this one is stopped
        kept: int = probe.getsockname()[1]
    (home / "nats" / PORT_FILE).write_text(f"{kept}\n")
    up, _ = _up(home)
    try:
        made = _toolsel(home, "identity", "create", "acme", "bot")
        assert made.returncode == 0, made.stderr
        found = re.search(r"^TOOLSEL_NATS_URL=(\S+)$", made.stdout, re.M)
        assert found is not None, made.stdout
        url = found[1]
    finally:
        _stop(up)
    port = urlsplit(url).port
    assert port == kept

    up, _ = _up(home)  # the port kept: the URL given out works
    try:
        assert _pins(url) == "acme"
        assert _env_url(home) == url.replace(f":{urlsplit(url).password}@", ":SECRET@")
    finally:
        _stop(up)

    with socket.socket() as squatter:  # another program on it: a free port, said
        squatter.bind(("127.0.0.1", port))
        squatter.listen()
        up, errors = _up(home)
    try:
        moved = urlsplit(_env_url(home)).port
        assert moved not in (None, port)
        warning = f"NATS's port {port} was taken by another program: NATS is on {moved} now"
        deadline = time.monotonic() + 30  # printed once the services answer, a moment after the stack file
        while warning not in errors.read_text() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert warning in errors.read_text(), errors.read_text()
        assert _pins(url.replace(f":{port}", f":{moved}")) == "acme"
    finally:
        _stop(up)
