"""One exit code per kind of outcome (docs/operators.md#exit-codes), as a shell sees them: each command here runs
as its own process with no stack to reach, so what it answers is decided before any reply could come."""

import os
import re
import subprocess
import tempfile
from pathlib import Path

import pytest

from toolsel.cli.running import FAILED, INTERRUPTED, NO_STACK, USAGE
from toolsel.stack import TOOLSEL_COMMAND

DOCS = Path(__file__).resolve().parents[3] / "docs" / "operators.md"


def _toolsel(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    with tempfile.TemporaryDirectory(prefix="toolsel-unit-") as home:
        clean = {k: v for k, v in os.environ.items() if not k.startswith("TOOLSEL_")}
        return subprocess.run(
            [*TOOLSEL_COMMAND, *args],
            env=clean | {"TOOLSEL_HOME": home} | env,
            capture_output=True,
            text=True,
            timeout=60,
        )


@pytest.mark.parametrize("args", [("status",), ("env",), ("select", "book a hotel"), ("tools", "list")])
def test_no_running_toolsel_is_one_code_for_every_command(args: tuple[str, ...]) -> None:
    done = _toolsel(*args)
    assert done.returncode == NO_STACK, done.stderr
    assert "no running toolsel" in done.stderr


def test_nats_out_of_reach_is_no_stack_too() -> None:
    unreachable = {"TOOLSEL_NATS_URL": "nats://127.0.0.1:9", "TOOLSEL_DATABASE_URL": "postgresql://x@127.0.0.1:9/x"}
    done = _toolsel("tools", "list", **unreachable)
    assert done.returncode == NO_STACK, done.stderr
    assert "cannot reach NATS" in done.stderr


def test_status_names_the_part_that_is_down_and_fails() -> None:
    """``status`` is asked what is down: a configured stack with NATS out of reach is a failure it reports in one
    line, not a missing stack."""
    unreachable = {"TOOLSEL_NATS_URL": "nats://127.0.0.1:9", "TOOLSEL_DATABASE_URL": "postgresql://x@127.0.0.1:9/x"}
    done = _toolsel("status", **unreachable)
    assert done.returncode == FAILED, done.stderr
    assert done.stderr.startswith("error: down: "), done.stderr
    assert done.stderr.count("\n") == 1, done.stderr


def test_bad_input_is_usage() -> None:
    assert _toolsel("select", "x", "--k", "99").returncode == USAGE
    assert _toolsel("selekt").returncode == USAGE


def test_test_selection_takes_the_answer_size_select_takes() -> None:
    """``admin test-selection`` is ``select --dry-run --explain``: ``--k auto`` is asked (of no stack here)."""
    assert _toolsel("admin", "test-selection", "x", "--k", "auto").returncode == NO_STACK
    assert _toolsel("admin", "test-selection", "x", "--k", "99").returncode == USAGE


def test_the_documented_table_names_every_code_once() -> None:
    table = DOCS.read_text().split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    codes = [int(code) for code in re.findall(r"^\| (\d+) \|", table, flags=re.M)]
    assert codes == [0, FAILED, USAGE, NO_STACK, INTERRUPTED]
