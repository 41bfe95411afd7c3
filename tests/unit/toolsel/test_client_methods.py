"""The client's method table: every subject has its row, and a row's method builds, sends and decodes."""

import inspect
from collections.abc import Coroutine
from typing import Any, TypeVar
from uuid import uuid4

import pytest
from pydantic import BaseModel

from toolsel.client import ToolselClient
from toolsel.client_methods import AsyncMethods, Event, Request, SyncMethods, table
from toolsel.contracts import (
    AdminRequest,
    PinRequest,
    ReviewEvent,
    SelectRequest,
    ToolDetail,
    ToolKey,
    ToolList,
    ToolQuery,
    subjects,
)
from toolsel.contracts.identity import tenant_scope
from toolsel.errors import InvalidRequest

T = TypeVar("T")


class Recorder(AsyncMethods):
    """Answers every request with an empty reply of its type; keeps what was sent and published."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, BaseModel]] = []
        self.published: list[tuple[str, BaseModel]] = []

    async def send(self, request: Request[Any, Any], message: BaseModel) -> Any:
        self.sent.append((request.subject, message))
        return request.reply.model_construct()

    async def publish(self, subject: str, event: BaseModel) -> None:
        self.published.append((subject, event))


class SyncRecorder(SyncMethods):
    def __init__(self) -> None:
        self.inner = Recorder()

    @property
    def aio(self) -> Recorder:
        return self.inner

    def run(self, work: Coroutine[Any, Any, T]) -> T:
        try:
            work.send(None)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        raise AssertionError("the recorder never waits")


def test_every_request_subject_and_event_kind_has_a_row() -> None:
    rows = table().values()
    requests = {r.subject for r in rows if isinstance(r, Request)}
    events = {r.subject for r in rows if isinstance(r, Event)}
    assert requests == {subjects.SELECT_ROOT, subjects.PINS_ROOT, *subjects.ADMIN_SUBJECTS}
    assert events == {subjects.OUTCOME_ROOT, subjects.REVIEW_ROOT, subjects.FEEDBACK_ROOT}
    assert {subjects.SELECT_ROOT, subjects.PINS_ROOT, *events} <= set(
        subjects.SCOPED_ROOTS
    )  # sent under the client's scope
    for row in rows:
        if isinstance(row, Request):
            assert row.admin == issubclass(row.message, AdminRequest), row.name
        assert set(row.args) <= set(row.message.model_fields), row.name


async def test_positional_arguments_and_fields_build_the_request() -> None:
    client = Recorder()
    await client.show_tool("mail", "send_email")
    await client.list_tools(plugin_id="mail", flagged=True)
    whole = ToolKey(plugin_id="mail", name="x")
    await client.tool_versions(whole)
    assert client.sent == [
        (subjects.ADMIN_TOOLS_SHOW, ToolKey(plugin_id="mail", name="send_email")),
        (subjects.ADMIN_TOOLS_LIST, ToolQuery(plugin_id="mail", flagged=True)),
        (subjects.ADMIN_TOOLS_VERSIONS, whole),
    ]
    assert isinstance(await client.approve_tool("mail", "x"), ToolDetail)


async def test_select_takes_the_query_first() -> None:
    client = Recorder()
    await client.select("send an email", k=3)
    assert client.sent == [(subjects.SELECT_ROOT, SelectRequest(query="send an email", k=3))]


async def test_the_pin_methods_send_their_action_and_leave_the_tenant_to_the_sender() -> None:
    client = Recorder()
    await client.list_pins()
    await client.pin_tool("mail", "send_email")
    await client.unpin_tool("mail", "send_email", tenant_id="acme")
    await client.clear_pin("mail", "send_email")
    assert client.sent == [
        (subjects.PINS_ROOT, PinRequest(action="list")),
        (subjects.PINS_ROOT, PinRequest(action="pin", plugin_id="mail", name="send_email")),
        (subjects.PINS_ROOT, PinRequest(action="unpin", plugin_id="mail", name="send_email", tenant_id="acme")),
        (subjects.PINS_ROOT, PinRequest(action="clear", plugin_id="mail", name="send_email")),
    ]
    named = ["tenant_id" in m.model_fields_set for _, m in client.sent]
    assert named == [False, False, True, False]  # left out: the service takes the sender's tenant
    assert "action" not in inspect.signature(client.pin_tool).parameters
    with pytest.raises(InvalidRequest, match="pin names a tool"):
        await client.pin_tool(plugin_id="mail")
    with pytest.raises(InvalidRequest, match="list names no tool"):
        await client.list_pins(plugin_id="mail", name="send_email")


async def test_events_are_published_and_returned() -> None:
    client = Recorder()
    selection = uuid4()
    event = await client.none_of_these(selection)
    assert isinstance(event, ReviewEvent)
    assert event.none_of_these
    assert client.published == [(subjects.REVIEW_ROOT, event)]


async def test_bad_calls_fail_before_anything_is_sent() -> None:
    """Each as an ``InvalidRequest`` naming the field (or the arguments) in one line."""
    client = Recorder()
    with pytest.raises(InvalidRequest, match="show_tool"):
        await client.show_tool("mail", "x", "extra")
    with pytest.raises(InvalidRequest, match=r"Extra inputs are not permitted \(no_such_field\)"):
        await client.list_tools(no_such_field=1)
    with pytest.raises(InvalidRequest) as refused:
        await client.select("", k=0)
    assert (refused.value.detail.field, "\n" in str(refused.value)) == ("query", False)
    assert "and 1 more" in str(refused.value)
    with pytest.raises(InvalidRequest):
        await client.review(uuid4())  # neither reviews nor none_of_these
    assert client.sent == client.published == []


def test_the_sync_wrapper_has_the_same_methods() -> None:
    client = SyncRecorder()
    reply = client.list_tools(plugin_id="mail")
    assert isinstance(reply, ToolList)
    assert client.inner.sent == [(subjects.ADMIN_TOOLS_LIST, ToolQuery(plugin_id="mail"))]
    assert client.show_tool.__name__ == "show_tool"


@pytest.mark.parametrize(
    ("url", "select", "outcome", "inbox"),
    [
        (
            "nats://acme.bot:pw@h:4222",
            "toolsel.rpc.select.t.acme.bot",
            "toolsel.events.outcome.t.acme.bot",
            "_INBOX.t.acme.bot",
        ),
        ("nats://operator:pw@h:4222", subjects.SELECT, subjects.OUTCOME_EVENTS, "_INBOX"),
    ],
)
def test_a_client_sends_under_the_scope_of_its_user(url: str, select: str, outcome: str, inbox: str) -> None:
    client = ToolselClient(url)
    assert client.subject(subjects.SELECT_ROOT) == select
    assert client.subject(subjects.OUTCOME_ROOT) == outcome
    assert client.subject(subjects.ADMIN_TOOLS_LIST) == subjects.ADMIN_TOOLS_LIST
    assert client.scope.inbox_prefix == inbox


def test_an_operator_client_acts_for_an_identity_on_its_own_connection() -> None:
    operator = ToolselClient("nats://operator:pw@h:4222")
    acting = operator.acting_as(tenant_scope("beta", "web"))
    assert acting.subject(subjects.SELECT_ROOT) == "toolsel.rpc.select.t.beta.web"
    assert operator.subject(subjects.SELECT_ROOT) == subjects.SELECT


def test_an_agents_requests_wait_the_clients_timeout_not_an_admin_requests_minutes() -> None:
    """``pin_tool`` with the indexer stopped kept an MCP client waiting 300 s, an admin request's allowance, where a
    select with the selector stopped failed after the client's 10 s."""
    agents = {name: row for name, row in table().items() if isinstance(row, Request) and not row.admin}
    assert {"select", "list_pins", "pin_tool", "unpin_tool", "clear_pin"} <= set(agents)
    assert {name: row.timeout_s for name, row in agents.items()} == dict.fromkeys(agents)
