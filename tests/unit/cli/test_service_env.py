"""Where the service commands and ``toolsel env`` look for the stack when none runs on the home: they name what to
do (``toolsel up``, ``toolsel env``) with the no-stack code; an agent's environment is never given database
credentials, nor the operator's NATS URL; an identity's is its URL on the running stack, its secret left out."""

import json
import os
from pathlib import Path

import pytest

from tests.unit.cli.test_exit_codes import _toolsel
from toolsel import identities
from toolsel.cli.running import FAILED, NO_STACK
from toolsel.settings import Settings
from toolsel.stack import STACK_FILE, Endpoints, configured_endpoints

OPERATOR_ENV = {
    "TOOLSEL_NATS_URL": "nats://operator:secret@127.0.0.1:9",
    "TOOLSEL_DATABASE_URL": "postgresql://postgres:secret@127.0.0.1:9/toolsel",
}
"""What ``eval "$(toolsel env)"`` leaves in a shell (the operator's URLs)."""


@pytest.mark.parametrize("args", [("migrate",), ("selector",), ("learner",), ("indexer",)])
def test_a_service_command_without_a_stack_names_toolsel_up_and_env(args: tuple[str, ...]) -> None:
    done = _toolsel(*args)
    assert done.returncode == NO_STACK, done.stderr
    assert "`toolsel up`" in done.stderr, done.stderr
    assert "`toolsel env" in done.stderr, done.stderr


def test_up_in_a_shell_left_with_a_stopped_stacks_exports_names_the_url_and_the_exports_to_unset() -> None:
    """It said only "FileNotFoundError: [Errno 2] No such file or directory" (the embedded PostgreSQL's socket)."""
    done = _toolsel("up", **OPERATOR_ENV)
    assert done.returncode == NO_STACK, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith(
        "error: cannot reach PostgreSQL at TOOLSEL_DATABASE_URL (postgresql://postgres:***@127.0.0.1:9/toolsel): "
    ), line
    assert "TOOLSEL_DATABASE_URL and TOOLSEL_NATS_URL name instead of the home's own: unset them" in line
    assert "secret" not in done.stdout + done.stderr


@pytest.mark.parametrize("user", ["agent", "selector"])
def test_another_users_env_never_hands_out_the_operators_urls(user: str) -> None:
    done = _toolsel("env", "--user", user, **OPERATOR_ENV)
    assert done.returncode == NO_STACK, done.stdout
    assert "secret" not in done.stdout + done.stderr
    assert "TOOLSEL_DATABASE_URL" not in done.stdout


def test_a_nats_url_alone_is_kept_and_brings_no_database(tmp_path: Path) -> None:
    agent = "nats://default.agent:pw@127.0.0.1:9"
    assert configured_endpoints(Settings(home=tmp_path, nats_url=agent, database_url=None)) == Endpoints(agent, "")


def test_another_users_env_is_refused_when_the_stack_runs_on_a_nats_of_its_own(tmp_path: Path) -> None:
    stack = {
        "pid": os.getpid(),
        "nats_embedded": False,
        **{k.removeprefix("TOOLSEL_").lower(): v for k, v in OPERATOR_ENV.items()},
    }
    (tmp_path / STACK_FILE).write_text(json.dumps(stack))
    operator = _toolsel("env", TOOLSEL_HOME=str(tmp_path))
    assert operator.returncode == 0, operator.stderr
    assert "nats://operator:secret@" in operator.stdout
    agent = _toolsel("env", "--user", "agent", TOOLSEL_HOME=str(tmp_path))
    assert agent.returncode == FAILED, agent.stdout
    assert "secret" not in agent.stdout + agent.stderr
    assert "a NATS server of its own" in agent.stderr


def test_an_identitys_env_is_its_url_on_the_running_stack_with_a_placeholder_for_its_secret(tmp_path: Path) -> None:
    """The home keeps only the secret's hash, and `toolsel env --user acme.bot` answered "unknown NATS user": a
    restarted stack's URL of an identity was nowhere to be found."""
    identities.create(tmp_path, "acme", "bot")
    stack = {"pid": os.getpid(), "nats_embedded": True, "nats_url": "nats://127.0.0.1:4222", "database_url": "pg"}
    (tmp_path / STACK_FILE).write_text(json.dumps(stack))
    done = _toolsel("env", "--user", "acme.bot", TOOLSEL_HOME=str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert done.stdout == "export TOOLSEL_NATS_URL=nats://acme.bot:SECRET@127.0.0.1:4222\n"
    assert "SECRET stands for acme.bot's secret" in done.stderr
    (tmp_path / STACK_FILE).unlink()
    stopped = _toolsel("env", "--user", "acme.bot", TOOLSEL_HOME=str(tmp_path))
    assert stopped.returncode == NO_STACK, stopped.stdout
    assert "no toolsel running on" in stopped.stderr
