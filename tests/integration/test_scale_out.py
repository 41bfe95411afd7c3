"""Scaling out as docs/operators.md shows it: with `toolsel up` running, one more selector started from another
shell (`eval "$(toolsel env --user selector)"`, then `toolsel selector`, in a subshell that leaves the shell as it
was) serves the stack's requests, from the catalog in the store, once the stack's own selector is killed (its
restart held off). On the same stack `toolsel migrate` finds the database, and an agent's exports hold its NATS
URL alone."""

import asyncio
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

from tests.integration.catalog import plugin_sync, sync_and_wait, tool, unique
from tests.integration.test_supervision import _toolsel
from tests.integration.test_up_crash import _stack_file, _up, home_env
from toolsel.client import ToolselClient
from toolsel.stack import running_stack, stack_info

OPERATORS = Path(__file__).resolve().parents[2] / "docs" / "operators.md"
HELD_OFF = "600"
"""The restart backoff of the stack under test: its killed selector stays down for the whole test."""


def scale_out_block() -> str:
    """The shell block of docs/operators.md that starts one more selector."""
    blocks = re.findall(r"^```bash\n(.*?)^```", OPERATORS.read_text(), flags=re.M | re.S)
    return next(block for block in blocks if "toolsel env --user selector" in block)


def test_the_documented_block_leaves_the_shell_it_runs_in_as_it_was(tmp_path: Path) -> None:
    """The exports made the reader's whole shell the selector: its selects were refused and its admin commands
    waited 300 s. A stand-in ``toolsel`` checks that the copy gets them and the shell after it does not."""
    stand_in = tmp_path / "toolsel"
    stand_in.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = env ]; then echo "export TOOLSEL_NATS_URL=nats://selector:pw@127.0.0.1:9"; exit; fi\n'
        '[ "$TOOLSEL_NATS_URL" = nats://selector:pw@127.0.0.1:9 ] && echo served\n'
    )
    stand_in.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLSEL_")}
    script = scale_out_block() + 'echo "after: ${TOOLSEL_NATS_URL:-none}"\n'
    done = subprocess.run(
        ["bash", "-e", "-c", script],
        env=env | {"PATH": f"{tmp_path}{os.pathsep}{env['PATH']}"},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "served\nafter: none\n"


def exports(home: Path, user: str) -> dict[str, str]:
    """What ``toolsel env --user USER`` exports, each value unquoted."""
    done = _toolsel(home, "env", "--user", user)
    assert done.returncode == 0, done.stderr
    pairs = (line.removeprefix("export ").split("=", 1) for line in done.stdout.splitlines())
    return {name: shlex.split(value)[0] for name, value in pairs}


async def served(url: str, second: subprocess.Popen[bytes], timeout_s: float = 240) -> list[str]:
    """The tools of the first selection answered on ``url`` while ``second`` runs (it loads the model first)."""
    deadline = time.monotonic() + timeout_s
    async with ToolselClient(url) as agent:
        while True:
            assert second.poll() is None, "the second selector exited"
            try:
                reply = await agent.select(query="will it rain in Paris tomorrow", k=2)
                return [t.name for t in reply.tools]
            except Exception as error:  # no selector answers yet
                last = repr(error)
            assert time.monotonic() < deadline, f"no selection answered: {last}"
            await asyncio.sleep(0.5)


def test_a_second_selector_started_as_documented_serves_selections() -> None:
    home = Path(tempfile.mkdtemp(prefix="toolsel-scale-"))  # not pytest's: PostgreSQL runs as another user
    up = _up(home, TOOLSEL_RESTART_BACKOFF_S=HELD_OFF, TOOLSEL_RESTART_BACKOFF_MAX_S=HELD_OFF)
    second: subprocess.Popen[bytes] | None = None
    try:
        first = int(_stack_file(home, up)["services"]["selector"])  # type: ignore[index]
        migrated = _toolsel(home, "migrate")
        assert migrated.returncode == 0, migrated.stderr
        assert "up to date" in migrated.stdout

        agent = exports(home, "agent")
        assert set(agent) == {"TOOLSEL_NATS_URL"}  # no database credentials, no admin token
        assert agent["TOOLSEL_NATS_URL"].startswith("nats://default.agent:")
        selector = exports(home, "selector")
        assert selector["TOOLSEL_NATS_URL"].startswith("nats://selector:")
        assert {"TOOLSEL_DATABASE_URL", "TOOLSEL_ADMIN_TOKEN"} <= set(selector)

        operator = running_stack(home)
        assert operator is not None
        sync = plugin_sync(unique("scale"), "default", [tool("get_weather"), tool("send_email")])

        async def synced() -> None:
            async with ToolselClient(operator.nats_url) as client:
                await sync_and_wait(client, sync)

        asyncio.run(synced())

        another_shell = home_env(home) | {"PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
        with (home / "second-selector.log").open("wb") as log:
            second = subprocess.Popen(
                ["bash", "-e", "-c", scale_out_block()],
                env=another_shell,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        os.kill(first, signal.SIGKILL)
        tools = asyncio.run(served(agent["TOOLSEL_NATS_URL"], second))
        assert tools[0] == "get_weather", tools
        assert not psutil.pid_exists(first) or psutil.Process(first).status() == psutil.STATUS_ZOMBIE
        assert (stack_info(home) or {})["services"]["selector"] == first  # not restarted: the second answered
    finally:
        if second is not None:
            os.killpg(second.pid, signal.SIGTERM)
            second.wait(60)
        up.send_signal(signal.SIGTERM)
        up.wait(60)
