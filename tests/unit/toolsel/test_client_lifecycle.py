"""The client outside its ``with``: with no stack to find, before entering and after leaving, every call fails at
once with a ``ToolselError`` that says why (the sync client blocked for ever, and no stack raised a bare
``RuntimeError`` or ``KeyError``)."""

import json
import os
import threading
from pathlib import Path

import pytest

from toolsel.client import SyncToolselClient, ToolselClient
from toolsel.embedded import CREDENTIALS_FILE, NATS_USERS
from toolsel.errors import NoStack, NotPermitted, ToolselError


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A TOOLSEL_HOME where no ``toolsel up`` runs, and no TOOLSEL_NATS_URL."""
    monkeypatch.setenv("TOOLSEL_HOME", str(tmp_path))
    monkeypatch.delenv("TOOLSEL_NATS_URL", raising=False)
    return tmp_path


def at_once(call: object) -> BaseException | None:
    """What ``call()`` raised, within 5 s (a call that blocks fails the test rather than hanging it)."""
    raised: list[BaseException | None] = []

    def attempt() -> None:
        try:
            call()  # type: ignore[operator]
        except BaseException as error:
            raised.append(error)
        else:
            raised.append(None)

    worker = threading.Thread(target=attempt, daemon=True)
    worker.start()
    worker.join(5)
    assert not worker.is_alive(), "the call blocked"
    return raised[0]


def test_the_sync_client_outside_with_fails_at_once() -> None:
    client = SyncToolselClient("nats://127.0.0.1:1")
    raised = at_once(lambda: client.select(query="weather in Paris"))
    assert isinstance(raised, NoStack)
    assert "inside 'with'" in str(raised)


def test_the_sync_client_that_could_not_connect_fails_at_once_and_can_be_entered_again(home: Path) -> None:
    client = SyncToolselClient(connect_timeout_s=0.2, reconnect_attempts=0)
    for _ in range(2):
        assert isinstance(at_once(client.__enter__), NoStack)
        assert isinstance(at_once(lambda: client.select(query="x")), NoStack)


async def test_no_stack_running_is_no_stack(home: Path) -> None:
    with pytest.raises(NoStack, match=r"no toolsel running in .*toolsel up"):
        async with ToolselClient():
            pass
    with pytest.raises(NoStack, match="no toolsel running"), SyncToolselClient():
        pass


async def test_a_user_whose_password_the_home_does_not_keep_is_named(home: Path) -> None:
    """Only the built-in users' passwords are kept in the home: an identity's comes with its URL."""
    (home / "nats").mkdir()
    (home / "nats" / f"nats-server_{os.getpid()}.ports").write_text(json.dumps({"nats": ["nats://127.0.0.1:1"]}))
    (home / "nats" / CREDENTIALS_FILE).write_text(json.dumps(dict.fromkeys(NATS_USERS, "secret")))
    with pytest.raises(NotPermitted, match=r"no password for NATS user acme\.bot .*identity create") as refused:
        async with ToolselClient(user="acme.bot"):
            pass
    assert isinstance(refused.value, ToolselError)
