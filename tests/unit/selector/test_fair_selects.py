"""The select handler's fair admission on FastStream's in-memory broker: with one tenant's burst waiting, another
tenant's select is answered before the burst's tail, and the burst's excess is refused at once (``rate_limited``),
whichever of the tenant's identities sent it.
The store and model are test_app's stand-ins; the handler and the gate are the real ones."""

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from faststream import TestApp
from faststream.nats import NatsBroker, TestNatsBroker

from tests.unit.selector.factory import AxisEmbedder
from tests.unit.selector.test_app import REPLY_WAIT_S, FakeStore, tool_row
from toolsel.contracts import SelectReply, SelectRequest, subjects
from toolsel.services.selector import app as selector_app
from toolsel.services.selector.admission import Admission
from toolsel.settings import Settings
from toolsel.store import catalog as store

ACME, VICTIM = "t.acme.a", "t.victim.v"


class Gates(list[Admission]):
    """The gates the app made (one), to see what waits at it."""

    def __call__(self, *args: Any, **kwargs: Any) -> Admission:
        self.append(Admission(*args, **kwargs))
        return self[-1]


class Turns:
    """Stands in for the embedding ahead, the first thing a selection does once admitted: it notes each request's
    turn, and holds the one asking for ``plug`` until ``unplug`` is set."""

    def __init__(self) -> None:
        self.order: list[tuple[str, str]] = []
        """(tenant, query) of each request admitted, in turn."""
        self.unplug = asyncio.Event()

    async def __call__(self, state: selector_app.SelectorState, request: SelectRequest) -> None:
        self.order.append((request.tenant_id, request.query))
        if request.query == "plug":
            await self.unplug.wait()


@pytest.fixture
def gates(monkeypatch: pytest.MonkeyPatch) -> Gates:
    made = Gates()
    monkeypatch.setattr(selector_app, "Admission", made)
    return made


@pytest.fixture
def turns(monkeypatch: pytest.MonkeyPatch) -> Turns:
    noted = Turns()
    monkeypatch.setattr(selector_app, "_embed_ahead", noted)
    return noted


@pytest.fixture
async def broker(monkeypatch: pytest.MonkeyPatch, gates: Gates, turns: Turns) -> AsyncIterator[NatsBroker]:
    fake = FakeStore({store.LIVE_TOOLS: [tool_row("send_email", "send an email", 0)]})

    async def open_store(settings: Settings) -> FakeStore:
        return fake

    async def load_model(settings: Settings, *, cache: bool = True) -> AxisEmbedder:
        return AxisEmbedder({"email": 0})

    monkeypatch.setattr(selector_app, "open_store", open_store)
    monkeypatch.setattr(selector_app, "load_model", load_model)
    settings = Settings(nats_url="nats://in-memory:4222", select_concurrency=1, select_waiting_per_tenant=3)
    app = selector_app.create_app(settings)
    async with TestNatsBroker(app.broker) as test_broker, TestApp(app):
        yield test_broker


async def select(broker: NatsBroker, scope: str, query: str) -> dict[str, Any]:
    """The reply's body to a dry-run select sent under ``scope`` (naming no tenant: the scope's is taken)."""
    request = {"query": query, "k": 1, "dry_run": True}
    response = await broker.request(request, subjects.scoped(subjects.SELECT_ROOT, scope), timeout=REPLY_WAIT_S)
    body: dict[str, Any] = json.loads(response.body)
    return body


async def until(condition: Callable[[], bool], steps: int = 10_000) -> None:
    """Let the loop run until ``condition()`` holds (the requests have reached the gate), failing rather than
    hanging when it never does."""
    for _ in range(steps):
        if condition():
            return
        await asyncio.sleep(0)
    raise AssertionError("the requests never reached the gate")


async def test_another_tenants_select_is_served_before_a_burst_s_tail_and_the_excess_is_refused(
    broker: NatsBroker, gates: Gates, turns: Turns
) -> None:
    (gate,) = gates
    plug = asyncio.ensure_future(select(broker, ACME, "plug"))  # holds the one permit
    await until(lambda: len(turns.order) == 1)
    burst = [asyncio.ensure_future(select(broker, ACME, f"email {i}")) for i in range(5)]
    await until(lambda: gate.waiting + sum(task.done() for task in burst) == 5)
    victim = asyncio.ensure_future(select(broker, VICTIM, "victim email"))
    await until(lambda: gate.waiting == 4 or gate.waiting == 6)  # 6: a burst nothing refused

    refused = [task.result() for task in burst if task.done()]  # answered while the plug still runs
    assert [reply["error"]["code"] for reply in refused] == ["rate_limited", "rate_limited"]
    assert "acme has 3 selects waiting" in refused[0]["error"]["message"]

    turns.unplug.set()
    await asyncio.gather(plug, victim, *burst)
    assert [tenant for tenant, _ in turns.order] == ["acme", "acme", "victim", "acme", "acme"]
    for reply in [victim.result(), *(task.result() for task in burst if "error" not in task.result())]:
        assert SelectReply.model_validate(reply).tools[0].name == "send_email"
    assert (gate.waiting, gate.free) == (0, 1)


async def test_a_tenants_identities_share_its_turns(broker: NatsBroker, gates: Gates, turns: Turns) -> None:
    (gate,) = gates
    plug = asyncio.ensure_future(select(broker, ACME, "plug"))
    await until(lambda: len(turns.order) == 1)
    first = [asyncio.ensure_future(select(broker, ACME, f"email {i}")) for i in range(3)]
    await until(lambda: gate.waiting == 3)
    other = await select(broker, "t.acme.other", "email from acme's other agent")  # acme's fourth waiting: refused
    assert other["error"]["code"] == "rate_limited"
    turns.unplug.set()
    await asyncio.gather(plug, *first)


def test_a_selector_holds_more_selects_than_it_runs() -> None:
    with pytest.raises(ValueError, match="TOOLSEL_SELECT_CONCURRENCY"):
        Settings(select_concurrency=16, selects_held=8)
