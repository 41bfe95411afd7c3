"""Wrong bearer tokens cannot make the right ones wait (audit F3): a token verified before is answered while every
check thread is held; a client address past its failures is refused (429) without a bcrypt check; a check past
the bounded queue is refused at once (503); over HTTP both say when to retry, and a forwarded address counts only
from a trusted proxy."""

import asyncio
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import uvicorn
from starlette.testclient import TestClient

from toolsel import identities
from toolsel.identities import Identity, Verifier
from toolsel.mcp import tenants
from toolsel.mcp.server import create_server, forwarded_options, http_app
from toolsel.mcp.tenants import IdentityTokens
from toolsel.mcp.token_checks import TokenChecks, TokenRefused
from toolsel.mcp.toolshed import Toolshed
from toolsel.settings import Settings
from toolsel.throttle import Throttle

URL = "http://127.0.0.1:8765"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


class Spy(Verifier):
    """The verifier, counting its bcrypt checks; a wrong token's check is held until ``release`` while ``hold``
    is set (``entered`` says one is held)."""

    def __init__(self, home: Path):
        super().__init__(home)
        self.checked = 0
        self.hold = False
        self.entered = threading.Event()
        self.release = threading.Event()

    def verify(self, token: str) -> Identity | None:
        self.checked += 1
        if self.hold and self.remembered(token) is None:
            self.entered.set()
            assert self.release.wait(30), "never released"
        return super().verify(token)


def no_toolshed() -> Toolshed:
    raise AssertionError("an initialize calls no tool")


@pytest.fixture
def bearer(tmp_path: Path) -> str:
    return identities.create(tmp_path, "acme", "agent").bearer


def wrong(bearer: str) -> str:
    return bearer.partition(":")[0] + ":" + "x" * 43


async def test_a_token_verified_before_is_answered_while_every_check_is_held(tmp_path: Path, bearer: str) -> None:
    verifier = Spy(tmp_path)
    checks = TokenChecks(verifier, Throttle(10, 60, "wrong bearer tokens"), threads=1, waiting=0)
    assert await checks.identity(bearer, "10.0.0.1") is not None
    verifier.hold = True
    held = asyncio.create_task(checks.identity(wrong(bearer), "10.0.0.2"))
    assert await asyncio.to_thread(verifier.entered.wait, 30)
    assert await checks.identity(bearer, "10.0.0.1") is not None  # no thread, no queue
    with pytest.raises(TokenRefused) as busy:  # the one thread is held and none may wait
        await checks.identity(wrong(bearer) + "y", "10.0.0.3")
    assert (busy.value.status, busy.value.retry_after_s) == (503, 1)
    verifier.release.set()
    assert await held is None
    assert verifier.checked == 2  # the first check of the right token and the held one
    assert await checks.identity(wrong(bearer) + "y", "10.0.0.3") is None  # the slot freed


async def test_an_address_past_its_failures_is_refused_without_a_check(tmp_path: Path, bearer: str) -> None:
    verifier = Spy(tmp_path)
    checks = TokenChecks(verifier, Throttle(2, 60, "wrong bearer tokens"), threads=1, waiting=4)
    assert await checks.identity(bearer, "10.0.0.1") is not None
    for _ in range(2):
        assert await checks.identity(wrong(bearer), "10.0.0.1") is None
    assert verifier.checked == 3
    with pytest.raises(TokenRefused, match="2 wrong bearer tokens from this address in 60 s") as refused:
        await checks.identity(wrong(bearer), "10.0.0.1")
    assert refused.value.status == 429
    assert 0 < refused.value.retry_after_s <= 60
    assert verifier.checked == 3, "a refused address's token was checked"
    assert await checks.identity(bearer, "10.0.0.1") is not None  # verified before: still served
    assert await checks.identity(wrong(bearer), "10.0.0.2") is None  # another address is checked
    assert verifier.checked == 4


async def test_a_check_whose_request_is_gone_holds_its_slot_until_it_ends(tmp_path: Path, bearer: str) -> None:
    """Else a flood of requests that hang up would queue unbounded work behind the freed slots."""
    verifier = Spy(tmp_path)
    verifier.hold = True
    checks = TokenChecks(verifier, Throttle(10, 60, "wrong bearer tokens"), threads=1, waiting=0)
    held = asyncio.create_task(checks.identity(wrong(bearer), "10.0.0.1"))
    assert await asyncio.to_thread(verifier.entered.wait, 30)
    held.cancel()
    with pytest.raises(asyncio.CancelledError):
        await held  # the request is gone; its check runs on
    with pytest.raises(TokenRefused):
        await checks.identity(wrong(bearer) + "y", "10.0.0.2")
    verifier.release.set()
    for _ in range(3000):  # the held check ends, and frees its slot
        try:
            assert await checks.identity(wrong(bearer) + "y", "10.0.0.2") is None
            return
        except TokenRefused:
            await asyncio.sleep(0.01)
    pytest.fail("the slot of a check whose request is gone was never freed")


@pytest.fixture
def served(tmp_path: Path, bearer: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[TestClient, Spy]]:
    """The HTTP app with one check thread, none waiting, and two failures allowed per address."""
    monkeypatch.setattr(tenants, "Verifier", Spy)
    settings = Settings(home=tmp_path, mcp_token_check_threads=1, mcp_token_checks_waiting=0, mcp_token_failures=2)
    tokens = IdentityTokens(settings)
    assert isinstance(tokens.verifier, Spy)

    with TestClient(http_app(create_server(no_toolshed, tokens, URL), "127.0.0.1"), base_url=URL) as client:
        yield client, tokens.verifier


def initialize(client: TestClient, token: str) -> tuple[int, str | None]:
    """The answer's status and Retry-After."""
    answer = client.post("/mcp", json=INITIALIZE, headers=HEADERS | {"authorization": f"Bearer {token}"})
    return answer.status_code, answer.headers.get("retry-after")


def test_over_http_a_full_queue_gets_503_and_a_flooding_address_429_each_with_retry_after(
    served: tuple[TestClient, Spy], bearer: str
) -> None:
    client, spy = served
    assert initialize(client, bearer) == (200, None)
    spy.hold = True
    with ThreadPoolExecutor(1) as other:
        held = other.submit(initialize, client, wrong(bearer))  # in the one check thread
        assert spy.entered.wait(30)
        assert initialize(client, wrong(bearer) + "y") == (503, "1")  # none may wait
        assert initialize(client, bearer) == (200, None)  # verified before: served meanwhile
        spy.release.set()
        assert held.result(30) == (401, None)
    spy.hold = False
    assert initialize(client, wrong(bearer))[0] == 401  # the address's second failure
    status, retry_after = initialize(client, wrong(bearer))
    assert (status, spy.checked) == (429, 3), "past its failures, the address's token was checked"
    assert retry_after is not None
    assert 0 < int(retry_after) <= 60
    assert initialize(client, bearer) == (200, None)


@pytest.mark.parametrize(("trusted", "answered"), [([], [401, 401, 429]), (["127.0.0.1"], [401, 401, 401])])
def test_a_local_caller_names_its_address_to_the_count_only_from_a_trusted_proxy(
    tmp_path: Path, bearer: str, trusted: list[str], answered: list[int]
) -> None:
    """As uvicorn serves the app for ``toolsel mcp``: a new ``X-Forwarded-For`` at each guess from this machine is
    not a new client, unless 127.0.0.1 is a proxy the operator named."""
    tokens = IdentityTokens(Settings(home=tmp_path, mcp_token_failures=2))
    app = http_app(create_server(no_toolshed, tokens, URL), "127.0.0.1")
    config = uvicorn.Config(app, log_config=None, **forwarded_options(trusted))
    config.load()
    with TestClient(config.loaded_app, base_url=URL, client=("127.0.0.1", 40000)) as client:
        statuses = [
            client.post(
                "/mcp",
                json=INITIALIZE,
                headers=HEADERS | {"authorization": f"Bearer {wrong(bearer)}", "x-forwarded-for": f"10.0.0.{n}"},
            ).status_code
            for n in range(3)
        ]
    assert statuses == answered
