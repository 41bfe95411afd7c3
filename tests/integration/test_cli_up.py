"""A plain `toolsel up` (no TOOLSEL_ADMIN_TOKEN) makes the operators' token itself: kept 0600 in the home, given
to its services, used by the CLI on the machine and printed by `toolsel env`. The demo keeps to demo-* plugins of
its own tenant and `toolsel demo --reset` removes them. Then the README's quickstart runs as a reader runs it,
block by block, against that stack."""

import asyncio
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import asyncpg
import httpx

from tests.integration.catalog import free_port
from toolsel.embedded import ADMIN_TOKEN_FILE
from toolsel.embedder import EARLIER_TOOLS_MODELS
from toolsel.stack import OPERATOR, STACK_FILE, TOOLSEL_COMMAND, running_stack, stopped_stack_database
from toolsel.store import migrate, space

README = Path(__file__).resolve().parents[2] / "README.md"
DASHBOARD_PORT = str(free_port())
"""The dashboard's port (the default one may be taken on a shared machine)."""


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLSEL_") and k != "COLUMNS"}
    path = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"  # `toolsel` and `python` as installed
    return env | {"TOOLSEL_HOME": str(home), "PATH": path, "TOOLSEL_DASHBOARD_PORT": DASHBOARD_PORT}


def quickstart_blocks() -> list[str]:
    """The shell blocks of the README's quickstart, but the one that starts the stack (it runs already)."""
    section = README.read_text().split("\n## Quickstart", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"^```bash\n(.*?)^```", section, flags=re.M | re.S)
    return [b for b in blocks if b.strip() != "toolsel up"]


def _toolsel(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*TOOLSEL_COMMAND, *args], env=_env(home), capture_output=True, text=True, timeout=600)


def _wait_up(home: Path, up: subprocess.Popen[bytes], timeout_s: float = 180) -> None:
    deadline = time.monotonic() + timeout_s
    while not (home / STACK_FILE).exists():
        assert up.poll() is None, "toolsel up exited"
        assert time.monotonic() < deadline, "toolsel up did not come up"
        time.sleep(0.2)


def _dashboard_answers(url: str, timeout_s: float = 60) -> bool:
    """Whether the dashboard ``toolsel up`` started answers its health check, and refuses its API unsigned."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/health", timeout=2).json().get("dashboard") == "ok":
                return httpx.get(f"{url}/api/tools", timeout=10).status_code == 401
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    return False


def _live_plugins(home: Path) -> set[str]:
    listed = _toolsel(home, "tools", "list", "--format", "json")
    assert listed.returncode == 0, listed.stderr
    return {t["plugin_id"] for t in json.loads(listed.stdout)["tools"]}


DEMO_LEARNT = """
SELECT (SELECT count(*) FROM tool_bandit_stats s JOIN tools t ON t.id = s.tool_id WHERE t.tenant_id = 'demo')
     + (SELECT count(*) FROM tool_quality q JOIN tools t ON t.id = q.tool_id WHERE t.tenant_id = 'demo')
     + (SELECT count(*) FROM tool_quarantine q JOIN tools t ON t.id = q.tool_id WHERE t.tenant_id = 'demo')
"""


def _demo_learnt(home: Path) -> int:
    """Rows of what was learnt of the demo tenant's tools: posteriors, quality, quarantine."""
    endpoints = running_stack(home, OPERATOR)
    assert endpoints is not None

    async def count() -> int:
        conn = await asyncpg.connect(endpoints.database_url)
        try:
            learnt: int = await conn.fetchval(DEMO_LEARNT)
            return learnt
        finally:
            await conn.close()

    return asyncio.run(count())


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
        dashboard = shlex.split(exports["TOOLSEL_DASHBOARD_URL"])[0]
        assert dashboard == f"http://127.0.0.1:{DASHBOARD_PORT}"
        assert _dashboard_answers(dashboard)

        demo = _toolsel(home, "demo")
        assert demo.returncode == 0, demo.stderr
        assert "demo-*" in demo.stdout
        assert "toolsel demo --reset" in demo.stdout
        assert "page_filter.empty" not in demo.stdout  # it asked only once the selector served what it synced
        assert "did not show the learnt posterior" not in demo.stdout  # the learnt key is the one the query reads
        assert "Warning" not in demo.stderr
        demo_plugins = _live_plugins(home)
        assert demo_plugins
        assert all(p.startswith("demo-") for p in demo_plugins)
        assert _demo_learnt(home) > 0

        blocks = quickstart_blocks()
        assert len(blocks) >= 3, blocks
        said = []
        with tempfile.TemporaryDirectory(prefix="toolsel-quickstart-") as work:
            for block in blocks:
                done = subprocess.run(
                    ["bash", "-e", "-o", "pipefail", "-c", block],
                    cwd=work,
                    env=_env(home),
                    capture_output=True,
                    text=True,
                    timeout=300,
                )
                assert done.returncode == 0, f"{block}\n{done.stdout}\n{done.stderr}"
                said.append(done.stdout)
        output = "\n".join(said)
        assert "reported a success of mail send_email" in output  # not a demo tool: they are the demo tenant's
        assert "removed the demo" in output
        assert _live_plugins(home) == set()
        assert _demo_learnt(home) == 0  # --reset forgot what the demo taught
    finally:
        up.send_signal(signal.SIGTERM)
        up.wait(60)
    assert up.stderr is not None
    assert "Warning" not in up.stderr.read().decode()  # no library's warning about its runtime directory


def test_up_and_the_demo_on_another_models_store_say_what_to_do_in_one_line_before_any_service_starts() -> None:
    """An upgrade's first `toolsel up` (and `toolsel demo`) said "RuntimeError: services did not start (indexer)",
    then 40 lines cut from a traceback, the advice last."""
    earlier = EARLIER_TOOLS_MODELS[-1]

    async def record(url: str) -> None:  # what an earlier release's services left
        await migrate(url)
        conn = await asyncpg.connect(url)
        try:
            await space.claim(conn, earlier, 384)
        finally:
            await conn.close()

    with tempfile.TemporaryDirectory(prefix="toolsel-upgraded-") as folder:  # PostgreSQL's socket needs a short path
        home = Path(folder)
        with stopped_stack_database(home) as url:
            asyncio.run(record(url))
        for command in ("up", "demo"):
            done = _toolsel(home, command)
            assert done.returncode == 1, done.stdout + done.stderr
            (line,) = done.stderr.strip().splitlines()
            assert line.startswith(f"error: this store's vectors come from {earlier}, an earlier revision"), line
            assert "stop every service and run `toolsel indexer --switch-model`" in line
        assert not (home / "logs").exists()  # no service was started
