"""A stack that fails to start says why: each dead service's exit code and the end of its log, or before any
service starts, the server the environment names that does not answer."""

import asyncio
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import yaml

from toolsel import stack as stack_module
from toolsel.embedded import EmbeddedPostgres
from toolsel.settings import Settings
from toolsel.stack import (
    START_LOG_LINES,
    TEMPORARY_STACK_START_S,
    Endpoints,
    Stack,
    Unreachable,
    port_taken,
    rotated,
    stop_wait_s,
    temporary_stack,
    why_unreachable,
)

COMPOSE = Path(__file__).parents[3] / "compose.yaml"


def test_a_failed_start_quotes_the_dead_services_exit_code_and_the_end_of_its_log(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    lines = [f"line {i}" for i in range(START_LOG_LINES + 5)]
    (logs / "indexer.log").write_text("\n".join(lines))
    stack = Stack(Settings(home=tmp_path, nats_url=None, database_url=None))
    stack.services["indexer"] = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    stack.services["indexer"].wait()

    message = stack.start_failure(stack.dead_services())

    assert "services did not start (indexer)" in message
    assert "indexer exited with 3" in message
    assert message.endswith(lines[-1])
    assert lines[-START_LOG_LINES] in message.splitlines()
    assert lines[-START_LOG_LINES - 1] not in message.splitlines()


def _closed_port() -> int:
    """A port nothing listens on (it was free a moment ago)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def test_a_stopped_stacks_exports_are_named_as_the_servers_it_cannot_reach_without_their_passwords(
    tmp_path: Path,
) -> None:
    """`toolsel up` in a shell where `eval "$(toolsel env)"` had run against a stack since stopped said only
    "FileNotFoundError: [Errno 2] No such file or directory"."""
    with tempfile.TemporaryDirectory(prefix="gone-") as short:  # a socket's path is short (tmp_path's is not)
        socket_dir = Path(short) / "pg"
        gone = f"postgresql://postgres:secret@/toolsel?host={socket_dir}"
        nats_url = f"nats://operator:secret@127.0.0.1:{_closed_port()}"
        stack = Stack(Settings(home=tmp_path, nats_url=nats_url, database_url=gone))
        try:
            with pytest.raises(Unreachable) as refused:
                asyncio.run(stack.start())
        finally:
            stack.stop()
    said = str(refused.value)
    assert said.startswith(
        f"cannot reach PostgreSQL at TOOLSEL_DATABASE_URL (postgresql://postgres:***@/toolsel?host={socket_dir}):"
        " FileNotFoundError: [Errno 2]"
    )
    assert "the servers that TOOLSEL_DATABASE_URL and TOOLSEL_NATS_URL name instead of the home's own" in said
    assert "unset them" in said
    assert "secret" not in said
    assert not stack.services


def test_a_nats_the_environment_names_that_does_not_answer_is_named_before_any_service_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def store_reached(self: Stack, database_url: str) -> None:
        pass

    monkeypatch.setattr(Stack, "check_store", store_reached)
    monkeypatch.setattr(Stack, "start_services", lambda self: pytest.fail("a service was started"))
    nats_url = f"nats://operator:secret@127.0.0.1:{_closed_port()}"
    stack = Stack(Settings(home=tmp_path, nats_url=nats_url, database_url="postgresql://postgres@/toolsel"))
    try:
        with pytest.raises(Unreachable) as refused:
            asyncio.run(stack.start())
    finally:
        stack.stop()
    assert str(refused.value).startswith(
        f"cannot reach NATS at TOOLSEL_NATS_URL ({nats_url.replace('secret', '***')}): no NATS server answers there."
    )


def test_one_export_is_named_alone_and_a_failure_of_the_homes_own_server_is_not_blamed_on_it(tmp_path: Path) -> None:
    said = why_unreachable("NATS", "TOOLSEL_NATS_URL", "nats://agent:pw@host:4222", "why", ["TOOLSEL_NATS_URL"])
    assert "(nats://agent:***@host:4222): why. toolsel uses the server that TOOLSEL_NATS_URL names" in said
    assert "unset it to start the home's own" in said
    stack = Stack(Settings(home=tmp_path, nats_url="nats://agent:pw@host:4222", database_url=None))
    stack.postgres = EmbeddedPostgres(tmp_path / "pg")  # the home's own, started by the stack
    with pytest.raises(FileNotFoundError), stack.reaching("PostgreSQL", "TOOLSEL_DATABASE_URL", "postgresql://x"):
        raise FileNotFoundError(2, "No such file or directory")


def test_a_stopping_service_is_given_its_shutdown_grace_and_the_margin_before_it_is_killed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`toolsel up` killed a stopping service after a fixed 15 s, whatever TOOLSEL_SHUTDOWN_GRACE_S said."""
    monkeypatch.setattr(stack_module, "STOP_MARGIN_S", 0.3)
    stack = Stack(Settings(home=tmp_path, shutdown_grace_s=1.0))
    deaf = (
        "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('ready', flush=True); time.sleep(60)"
    )
    proc = subprocess.Popen([sys.executable, "-c", deaf], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    assert proc.stdout.readline() == "ready\n"
    stack.services["selector"] = proc
    began = time.monotonic()
    stack.stop_services()
    waited = time.monotonic() - began
    assert proc.returncode == -signal.SIGKILL
    assert 1.3 <= waited < 5.0, waited


def test_the_stop_waits_leave_room_for_the_grace_and_the_outbox() -> None:
    """Compose's stop_grace_period and `toolsel up`'s wait both outlast the default grace (FastStream's
    graceful_timeout) and the selector's outbox flush that follows it: Docker's default of 10 s killed a busy
    selector mid-way."""
    from toolsel.services.selector.app import OUTBOX_SHUTDOWN_S

    needed = Settings().shutdown_grace_s + OUTBOX_SHUTDOWN_S
    assert stop_wait_s(Settings()) > needed
    assert stop_wait_s(Settings(shutdown_grace_s=60)) > 60 + OUTBOX_SHUTDOWN_S
    services = yaml.safe_load(COMPOSE.read_text())["services"]
    toolsel = [name for name, service in services.items() if "build" in service and name != "migrate"]
    assert sorted(toolsel) == ["indexer", "learner", "selector"]
    for name in toolsel:
        period = re.fullmatch(r"(\d+)s", str(services[name].get("stop_grace_period", "10s")))
        assert period, services[name].get("stop_grace_period")
        assert int(period[1]) > needed + 5, name


def test_a_service_log_that_reached_its_bound_is_kept_once_and_begun_again(tmp_path: Path) -> None:
    """A service in a crash loop appended its traceback at every restart, and the log grew for good."""
    log = tmp_path / "learner.log"
    log.write_bytes(b"x" * 100)
    assert rotated(log, 1000) == log
    assert log.read_bytes() == b"x" * 100
    assert rotated(log, 100) == log
    assert not log.exists()
    assert (tmp_path / "learner.log.1").read_bytes() == b"x" * 100
    log.write_bytes(b"y" * 100)
    rotated(log, 100)
    assert (tmp_path / "learner.log.1").read_bytes() == b"y" * 100  # one old log, the newest
    log.write_bytes(b"z" * 100)
    assert rotated(log, 0) == log
    assert log.exists()


def test_a_dashboard_port_another_program_listens_on_is_not_taken_over_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another stack's dashboard on the port: this stack printed and exported that one's address as its own, while
    its own dashboard restarted for good."""
    started: list[str] = []
    monkeypatch.setattr(Stack, "spawn", lambda self, name, log_name=None: started.append(name) or None)
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        port = other.getsockname()[1]
        assert port_taken("127.0.0.1", port)
        stack = Stack(Settings(home=tmp_path, dashboard_host="127.0.0.1", dashboard_port=port))
        stack.start_services()
    assert "dashboard" not in started
    assert stack.dashboard_url() is None
    assert stack.dashboard_not_started is not None
    assert f"port {port} on 127.0.0.1 is taken" in stack.dashboard_not_started
    assert not port_taken("127.0.0.1", port)  # closed: free again
    free = Stack(Settings(home=tmp_path, dashboard_host="127.0.0.1", dashboard_port=port))
    free.start_services()
    assert started.count("dashboard") == 1
    assert free.dashboard_url() == f"http://127.0.0.1:{port}"


def test_a_temporary_stack_runs_with_its_env_and_servers_of_its_own_and_restores_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``temporary_stack``: ``before_start`` in the fresh home, then the start; on leaving, the stop and the
    process's environment as it was (a plugin credential of the shell's never reaches the services)."""
    done: list[str] = []

    class FakeStack:
        def __init__(self, settings: Settings) -> None:
            self.settings = settings

        async def start(self, timeout_s: float) -> Endpoints:
            assert timeout_s == TEMPORARY_STACK_START_S
            done.append("start")
            return Endpoints("nats://x", "postgresql://x")

        def stop(self) -> None:
            done.append("stop")

    async def before_start(settings: Settings) -> None:
        assert settings.home.is_dir()
        assert settings.nats_url is None
        assert settings.database_url is None
        done.append("before_start")

    async def run() -> Path:
        async with temporary_stack({"TOOLSEL_X_TEST": "1"}, "toolsel-test-", before_start) as (endpoints, stack):
            assert endpoints.nats_url == "nats://x"
            assert os.environ["TOOLSEL_X_TEST"] == "1"
            assert "TOOLSEL_SIGNED_PLUGINS" not in os.environ
            assert stack.settings.home.name.startswith("toolsel-test-")
            return stack.settings.home

    monkeypatch.setattr(stack_module, "Stack", FakeStack)
    monkeypatch.setenv("TOOLSEL_SIGNED_PLUGINS", '["p"]')
    monkeypatch.delenv("TOOLSEL_X_TEST", raising=False)
    home = asyncio.run(run())
    assert done == ["before_start", "start", "stop"]
    assert not home.exists()
    assert os.environ["TOOLSEL_SIGNED_PLUGINS"] == '["p"]'
    assert "TOOLSEL_X_TEST" not in os.environ
