"""`toolsel up` supervises its services and its servers: a service that exits is restarted (and counted) while
the others keep serving; a SIGKILLed NATS or PostgreSQL is restarted too (not left <defunct>), and meanwhile
`toolsel status` says in one line which part is down and exits 1; a second `toolsel up` on the same home refuses
and leaves the running stack alone."""

import asyncio
import os
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import asyncpg
import psutil

from tests.integration.test_up_crash import _gone, _stack_file, _up, home_env
from toolsel.client import ToolselClient
from toolsel.stack import AGENT, TOOLSEL_COMMAND, restart_delay, running_stack, stack_info


def _toolsel(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*TOOLSEL_COMMAND, *args], env=home_env(home), capture_output=True, text=True, timeout=120)


def _restarted(home: Path, service: str, old_pid: int, timeout_s: float = 60) -> dict[str, object]:
    """The stack file once ``service`` runs again under a new pid."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        info = stack_info(home)
        if info is not None and info["services"][service] != old_pid:
            return info
        time.sleep(0.2)
    raise AssertionError(f"{service} was not restarted")


def _healthy(home: Path, timeout_s: float = 60) -> subprocess.CompletedProcess[str]:
    """``toolsel status`` once every service answers (a restarted one takes a while), or its last try."""
    deadline = time.monotonic() + timeout_s
    while (status := _toolsel(home, "status")).returncode != 0 and time.monotonic() < deadline:
        time.sleep(0.5)
    return status


async def _selects(home: Path) -> bool:
    endpoints = running_stack(home, AGENT)
    assert endpoints is not None
    async with ToolselClient(endpoints.nats_url) as agent:
        return (await agent.select(query="weather in Oslo", k=1)).selection_id is not None


def test_the_restart_delay_doubles_after_quick_exits_up_to_its_limit() -> None:
    assert [restart_delay(n, 0.5, 3.0) for n in range(5)] == [0.5, 1.0, 2.0, 3.0, 3.0]


def test_a_killed_service_is_restarted_and_counted_while_the_others_serve() -> None:
    home = Path(tempfile.mkdtemp(prefix="toolsel-supervise-"))  # not pytest's: PostgreSQL runs as another user
    up = _up(home, TOOLSEL_RESTART_BACKOFF_S="0.5")
    try:
        info = _stack_file(home, up)
        learner = info["services"]["learner"]  # type: ignore[index]
        os.kill(learner, signal.SIGKILL)
        assert asyncio.run(_selects(home)), "selection stopped with the learner"
        info = _restarted(home, "learner", learner)
        assert info["restarts"] == {"nats": 0, "postgres": 0, "selector": 0, "learner": 1, "indexer": 0}
        assert up.poll() is None
        status = _healthy(home)
        assert status.returncode == 0, status.stdout
        assert "learner 1" in " ".join(status.stdout.split())  # a pipe's 80 columns may wrap the line anywhere
    finally:
        up.send_signal(signal.SIGTERM)
        up.wait(60)


def _server_restarted(home: Path, server: str, old_pid: int, timeout_s: float = 60) -> dict[str, object]:
    """The stack file once ``server`` runs again under a new pid and has been counted."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        info = stack_info(home)
        if info is not None and info["servers"][server] not in (old_pid, None) and info["restarts"][server]:
            return info
        time.sleep(0.1)
    raise AssertionError(f"{server} was not restarted")


def _down_line(home: Path, server: str, kill: int) -> subprocess.CompletedProcess[str]:
    """``toolsel status`` run while ``server`` is down: SIGSTOP ``toolsel up`` (so nothing restarts it), SIGKILL
    the server, ask, then let ``toolsel up`` go on."""
    info = stack_info(home)
    assert info is not None
    os.kill(int(info["pid"]), signal.SIGSTOP)
    try:
        os.kill(kill, signal.SIGKILL)
        time.sleep(0.5)
        return _toolsel(home, "status")
    finally:
        os.kill(int(info["pid"]), signal.SIGCONT)


def test_killed_servers_are_restarted_and_status_names_what_is_down() -> None:
    home = Path(tempfile.mkdtemp(prefix="toolsel-servers-"))
    up = _up(home, TOOLSEL_RESTART_BACKOFF_S="0.2")
    try:
        info = _stack_file(home, up)
        for server in ("nats", "postgres"):
            pid = int(info["servers"][server])  # type: ignore[index]
            down = _down_line(home, server, pid)
            assert down.returncode == 1, down.stdout + down.stderr
            assert down.stderr.count("\n") == 1, down.stderr
            assert down.stderr.startswith(f"error: down: {server} ("), down.stderr
            assert "Traceback" not in down.stdout + down.stderr
            info = _server_restarted(home, server, pid)
            if server == "nats":  # toolsel up's child (PostgreSQL is adopted by whoever reaps orphans)
                gone = not psutil.pid_exists(pid) or psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
                assert gone, "the killed NATS was left <defunct>"
            status = _healthy(home)
            assert status.returncode == 0, status.stdout + status.stderr
            assert asyncio.run(_selects(home)), f"no selection after {server} came back"
        assert {k: info["restarts"][k] for k in ("nats", "postgres")} == {"nats": 1, "postgres": 1}  # type: ignore[index]
        assert "nats 1, postgres 1" in status.stdout
        assert up.poll() is None
    finally:
        up.send_signal(signal.SIGTERM)
        up.wait(60)


def test_a_second_up_on_the_same_home_refuses_and_stops_nothing() -> None:
    home = Path(tempfile.mkdtemp(prefix="toolsel-second-"))
    first = _up(home)
    try:
        info = _stack_file(home, first)
        second = subprocess.run(
            [*TOOLSEL_COMMAND, "up"], env=home_env(home), capture_output=True, text=True, timeout=60
        )
        assert second.returncode == 1
        assert f"already running on {home} (pid {first.pid})" in " ".join(second.stderr.split())
        assert stack_info(home) == info, "the first stack's file changed"
        services = [int(p) for p in info["services"].values()]  # type: ignore[union-attr]
        assert all(psutil.pid_exists(p) for p in services)
        assert asyncio.run(_selects(home))
        endpoints = running_stack(home)
        assert endpoints is not None
        assert asyncio.run(_database_answers(endpoints.database_url)), "the first stack lost its database"
    finally:
        first.send_signal(signal.SIGTERM)
        first.wait(60)
    assert _gone(services)
    assert stack_info(home) is None


async def _database_answers(url: str) -> bool:
    connection = await asyncpg.connect(url)
    try:
        return bool(await connection.fetchval("SELECT 1") == 1)
    finally:
        await connection.close()
