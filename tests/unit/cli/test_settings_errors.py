"""A service (or command) started with a setting it cannot use stops at once with one line naming the variable and
exit code 2: not a traceback that names no variable, and not a log level the logging module refuses later, which
made every service crash-loop under compose."""

import os
import subprocess
from pathlib import Path

import pytest

from toolsel.cli.running import NO_STACK, USAGE
from toolsel.stack import SERVICE_COMMAND, TOOLSEL_COMMAND


def _run(command: tuple[str, ...], home: Path, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("TOOLSEL_")}
    return subprocess.run(
        command, env=clean | {"TOOLSEL_HOME": str(home)} | env, cwd=home, capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize(
    ("command", "variable", "value", "says"),
    [
        ((*SERVICE_COMMAND, "selector"), "TOOLSEL_LOG_LEVEL", "verbose", "Input should be 'DEBUG'"),
        ((*SERVICE_COMMAND, "learner"), "TOOLSEL_LEARNER_BATCH_SIZE", "0", "greater than or equal to 1"),
        ((*SERVICE_COMMAND, "indexer"), "TOOLSEL_PLUGIN_SECRETS", "notjson", "not valid JSON"),
        ((*TOOLSEL_COMMAND, "learner"), "TOOLSEL_LEARNER_ACK_WAIT_S", "0", "greater than 0"),
        ((*TOOLSEL_COMMAND, "up"), "TOOLSEL_QUALITY_WINDOW", "-1", "greater than or equal to 1"),
        ((*TOOLSEL_COMMAND, "status"), "TOOLSEL_GATEWAY_URLS", "[", "not valid JSON"),
    ],
)
def test_a_bad_setting_is_one_line_naming_it_and_exit_2(
    tmp_path: Path, command: tuple[str, ...], variable: str, value: str, says: str
) -> None:
    done = _run(command, tmp_path, **{variable: value})
    assert done.returncode == USAGE, done.stderr
    assert done.stderr.startswith(f"error: {variable}: "), done.stderr
    assert says in done.stderr, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr


def test_a_pair_out_of_order_names_both(tmp_path: Path) -> None:
    done = _run((*SERVICE_COMMAND, "selector"), tmp_path, TOOLSEL_AUTO_K_FLOOR="10", TOOLSEL_AUTO_K_CEILING="2")
    assert done.returncode == USAGE, done.stderr
    assert "TOOLSEL_AUTO_K_FLOOR (10) may not be above TOOLSEL_AUTO_K_CEILING (2)" in done.stderr, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr


def test_a_bad_setting_in_dot_env_is_named_with_the_file(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("TOOLSEL_GATEWAY_SECRETS={\n")
    done = _run((*SERVICE_COMMAND, "indexer"), tmp_path)
    assert done.returncode == USAGE, done.stderr
    assert done.stderr.startswith("error: TOOLSEL_GATEWAY_SECRETS (in .env): not valid JSON"), done.stderr


def test_an_empty_value_and_a_lower_case_level_are_fine(tmp_path: Path) -> None:
    """So the service goes on to look for its stack (none here), instead of refusing its settings."""
    done = _run((*SERVICE_COMMAND, "indexer"), tmp_path, TOOLSEL_PLUGIN_SECRETS="", TOOLSEL_LOG_LEVEL="debug")
    assert done.returncode == NO_STACK, done.stderr
    assert "no database" in done.stderr
