"""``toolsel identity nats-config --out FILE``: compose's NATS configuration changes only once a whole one was made,
never to one without its users. A shell redirect (``> compose.nats.conf``) emptied the file before the command
ran; when the command then failed, NATS reloaded the empty file and admitted anyone."""

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from toolsel import identities
from toolsel.cli import identities as identity_commands
from toolsel.cli.main import app
from toolsel.cli.running import FAILED, USAGE
from toolsel.embedded import nats_config, password_variable
from toolsel.nats_permissions import NATS_USERS
from toolsel.settings import get_settings
from toolsel.stack import TOOLSEL_COMMAND

BEFORE = "# the configuration NATS runs now\nauthorization { users = [ ] }\n"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh home for the commands run in this process (their settings read again)."""
    monkeypatch.setenv("TOOLSEL_HOME", str(tmp_path / "home"))
    get_settings.cache_clear()
    yield tmp_path / "home"
    get_settings.cache_clear()


def _toolsel(home: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("TOOLSEL_")}
    return subprocess.run(
        [*TOOLSEL_COMMAND, *args],
        env=clean | {"TOOLSEL_HOME": str(home)} | env,
        cwd=home,
        capture_output=True,
        text=True,
        timeout=60,
    )


def _expected(home: Path) -> str:
    return nats_config({u: f"${password_variable(u)}" for u in NATS_USERS}, identities.admitted(home))


def test_out_writes_the_configuration_with_every_identity(tmp_path: Path) -> None:
    assert _toolsel(tmp_path, "identity", "create", "acme", "bot").returncode == 0
    out = tmp_path / "compose.nats.conf"
    done = _toolsel(tmp_path, "identity", "nats-config", "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert out.read_text() == _expected(tmp_path) == _toolsel(tmp_path, "identity", "nats-config").stdout
    assert '{user: "acme.bot"' in out.read_text()
    assert oct(out.stat().st_mode & 0o777) == oct(0o644)  # no password in it: NATS reads them from its environment
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".compose")) == []


def test_an_existing_file_is_rewritten_in_place(tmp_path: Path) -> None:
    """compose bind-mounts the file alone: a file renamed over it would never be seen by the running NATS."""
    out = tmp_path / "compose.nats.conf"
    out.write_text(BEFORE)
    inode = out.stat().st_ino
    done = _toolsel(tmp_path, "identity", "nats-config", "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert (out.read_text(), out.stat().st_ino) == (_expected(tmp_path), inode)


@pytest.mark.parametrize(
    ("broken", "code", "says"),
    [
        ({"TOOLSEL_LOG_LEVEL": "verbose"}, USAGE, "TOOLSEL_LOG_LEVEL"),
        ({"TOOLSEL_PLUGIN_SECRETS": "{not json"}, USAGE, "TOOLSEL_PLUGIN_SECRETS: not valid JSON"),
        ({}, FAILED, "JSONDecodeError"),  # an identities file that does not parse
    ],
)
def test_a_failure_leaves_the_existing_file_as_it_was(
    tmp_path: Path, broken: dict[str, str], code: int, says: str
) -> None:
    if not broken:
        (tmp_path / identities.IDENTITIES_FILE).write_text("{")
    out = tmp_path / "compose.nats.conf"
    out.write_text(BEFORE)
    done = _toolsel(tmp_path, "identity", "nats-config", "--out", str(out), **broken)
    assert done.returncode == code, done.stderr
    assert says in done.stderr, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert out.read_text() == BEFORE
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".compose")) == []


@pytest.mark.parametrize("out", [True, False])
def test_a_configuration_without_its_users_is_refused(
    tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch, out: bool
) -> None:
    monkeypatch.setattr(identity_commands, "nats_config", lambda *_: "authorization {\n  users = [\n  ]\n}\n")
    target = tmp_path / "compose.nats.conf"
    target.write_text(BEFORE)
    done = CliRunner().invoke(app, ["identity", "nats-config", *(["--out", str(target)] if out else [])])
    assert done.exit_code == FAILED
    assert "has no users: NATS would admit anyone" in done.stderr
    assert done.stdout == ""
    assert target.read_text() == BEFORE


def test_a_write_that_fails_leaves_the_file_and_no_temporary_one(
    tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full(_: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(identity_commands.os, "fsync", full)
    target = tmp_path / "compose.nats.conf"
    target.write_text(BEFORE)
    done = CliRunner().invoke(app, ["identity", "nats-config", "--out", str(target)])
    assert done.exit_code == FAILED
    assert "No space left on device" in done.stderr
    assert [p.name for p in tmp_path.iterdir()] == [target.name]
    assert target.read_text() == BEFORE
