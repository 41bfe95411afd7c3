"""The client's method table: every subject has its row, and a row's method builds, sends and decodes."""

from collections.abc import Coroutine
from typing import Any, TypeVar
from uuid import uuid4

import pytest
from pydantic import BaseModel, ValidationError

from contracts import (
    AdminRequest,
    ReviewEvent,
    SelectRequest,
    ToolDetail,
    ToolKey,
    ToolList,
    ToolQuery,
    subjects,
)
from toolsel.client_methods import AsyncMethods, Event, Request, SyncMethods, table

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
    assert requests == {subjects.SELECT, *subjects.ADMIN_SUBJECTS}
    assert events == {subjects.OUTCOME_EVENTS, subjects.REVIEW_EVENTS, subjects.FEEDBACK_EVENTS}
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
    assert client.sent == [(subjects.SELECT, SelectRequest(query="send an email", k=3))]


async def test_events_are_published_and_returned() -> None:
    client = Recorder()
    selection = uuid4()
    event = await client.none_of_these(selection)
    assert isinstance(event, ReviewEvent)
    assert event.none_of_these
    assert client.published == [(subjects.REVIEW_EVENTS, event)]


async def test_bad_calls_fail_before_anything_is_sent() -> None:
    client = Recorder()
    with pytest.raises(TypeError, match="show_tool"):
        await client.show_tool("mail", "x", "extra")
    with pytest.raises(ValidationError):
        await client.list_tools(no_such_field=1)
    with pytest.raises(ValidationError):
        await client.review(uuid4())  # neither reviews nor none_of_these
    assert client.sent == client.published == []


def test_the_sync_wrapper_has_the_same_methods() -> None:
    client = SyncRecorder()
    reply = client.list_tools(plugin_id="mail")
    assert isinstance(reply, ToolList)
    assert client.inner.sent == [(subjects.ADMIN_TOOLS_LIST, ToolQuery(plugin_id="mail"))]
    assert client.show_tool.__name__ == "show_tool"
