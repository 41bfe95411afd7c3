"""compose's health checks on a real nats-server with toolsel's users and permissions: two copies of the selector
(two containers of `--scale selector=2`), each answering the service's queue group and a health subject of its own.
With one copy frozen (SIGSTOP: a hung container), `toolsel selector --health`, run as the selector's NATS user as
compose runs it, answers for its own copy every time: the frozen copy's check fails and the other's passes, where
the queue group's subject passed or failed by whichever copy NATS picked."""

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import nats
import nats.errors
import pytest

from tests.integration.test_nats_auth import Connection
from toolsel.contracts import HealthReply, subjects
from toolsel.embedded import EmbeddedNats
from toolsel.messaging import this_instance
from toolsel.stack import TOOLSEL_COMMAND

pytestmark = pytest.mark.integration

HERE = this_instance()
"""The copy in this "container": the one whose host name the check reads."""
OTHER = "another-container"
COPY = """
import asyncio, sys
from faststream import FastStream
from toolsel.messaging import add_health, make_broker, rpc_router

url, instance = sys.argv[1:]
broker = make_broker(url, "selector")
router = rpc_router()
add_health(router, "selector", lambda: {"copy": instance or "here"}, instance=instance or None)
broker.include_router(router)
app = FastStream(broker)


@app.after_startup
async def ready() -> None:
    print("ready", flush=True)


asyncio.run(app.run())
"""
"""One copy of the selector's health, as ``add_health`` serves it in the selector app, on ``instance`` (empty:
this host's name)."""


@pytest.fixture
def copies(server: EmbeddedNats, tmp_path: Path) -> Iterator[dict[str, subprocess.Popen[str]]]:
    """This host's copy (``HERE``) and another container's (``OTHER``), both as the selector's NATS user."""
    started: dict[str, subprocess.Popen[str]] = {}
    try:
        for instance in ("", OTHER):
            log = (tmp_path / f"copy-{instance or 'here'}.log").open("w")
            process = subprocess.Popen(
                [sys.executable, "-c", COPY, server.login("selector"), instance],
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
            )
            started[instance or HERE] = process
            assert process.stdout is not None
            assert process.stdout.readline().strip() == "ready", (tmp_path / log.name).read_text()
        yield started
    finally:
        for process in started.values():
            process.send_signal(signal.SIGCONT)
            process.terminate()
            process.wait(30)


def check(server: EmbeddedNats, home: Path) -> subprocess.CompletedProcess[str]:
    """compose's health check of the selector, in this "container": as the selector's NATS user, no `.env`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLSEL_")}
    env |= {"TOOLSEL_NATS_URL": server.login("selector"), "TOOLSEL_HOME": str(home)}
    return subprocess.run(
        [*TOOLSEL_COMMAND, "selector", "--health"], env=env, cwd=home, capture_output=True, text=True, timeout=120
    )


async def ask(url: str, subject: str, timeout_s: float = 2.0) -> str:
    """The copy that answered ``subject`` (as the selector's user), or why none did."""
    connection = await nats.connect(url)
    try:
        reply = await connection.request(subject, b"{}", timeout=timeout_s)
    except (nats.errors.TimeoutError, nats.errors.NoRespondersError) as error:
        return type(error).__name__
    finally:
        await connection.close()
    return str(HealthReply.model_validate_json(reply.data).details["copy"])


def answered(check: subprocess.CompletedProcess[str]) -> str:
    assert check.returncode == 0, check.stderr
    return str(HealthReply.model_validate(json.loads(check.stdout)).details["copy"])


async def test_each_copys_health_check_answers_for_that_copy_alone(
    server: EmbeddedNats, copies: dict[str, subprocess.Popen[str]], tmp_path: Path
) -> None:
    url = server.login("selector")
    own = subjects.instance_health("selector", OTHER)
    assert answered(check(server, tmp_path)) == "here"
    assert await ask(url, own) == OTHER

    copies[HERE].send_signal(signal.SIGSTOP)  # this container's selector hangs
    started = time.monotonic()
    hung = check(server, tmp_path)
    assert hung.returncode == 1, hung.stdout
    assert f"the selector on {HERE} does not answer on {subjects.instance_health('selector', HERE)}" in hung.stderr
    assert time.monotonic() - started < 30  # within compose's timeout (10 s) but for the CLI's start
    assert [await ask(url, own) for _ in range(5)] == [OTHER] * 5  # the other container stays healthy

    copies[HERE].send_signal(signal.SIGCONT)
    copies[OTHER].send_signal(signal.SIGSTOP)  # now the other one hangs: this container's check passes
    assert answered(check(server, tmp_path)) == "here"
    assert await ask(url, own) == "TimeoutError"


async def test_a_service_user_may_not_answer_another_services_copy(server: EmbeddedNats) -> None:
    selector = await Connection().connect(server.login("selector"))
    try:
        subject = subjects.instance_health("learner", HERE)
        await selector.nc.subscribe(subject)
        assert await selector.refused(f'subscription to "{subject}"')
    finally:
        await selector.nc.close()
