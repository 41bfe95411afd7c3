"""Validation errors become typed replies naming the field, without the handler's parameter name; slow work keeps
telling the server its message is in progress; a service's health is asked of any copy or of one."""

import asyncio
import json
import socket
import threading
from typing import Any

import pytest
from faststream.nats import NatsBroker, TestNatsBroker
from pydantic import BaseModel, ValidationError

from toolsel import messaging
from toolsel.contracts import ErrorCode, ErrorReply, HealthReply, PluginSync, SelectRequest, subjects
from toolsel.messaging import (
    DOCUMENTED_INSTANCE,
    RequestError,
    add_health,
    in_progress_while,
    rpc_router,
    this_instance,
    validation_reply,
)


class SelectHandlerArgs(BaseModel):
    request: SelectRequest


class SyncHandlerArgs(BaseModel):
    sync: PluginSync


def _error(model: type[BaseModel], data: Any) -> ValidationError:
    with pytest.raises(ValidationError) as caught:
        model.model_validate(data)
    return caught.value


def test_top_level_field() -> None:
    reply = validation_reply(_error(SelectRequest, {"query": "q", "k": 0}))
    assert reply.error.code == ErrorCode.INVALID_REQUEST
    assert reply.error.field == "k"
    assert "greater than or equal to 1" in reply.error.message


def test_nested_field_path_is_dotted() -> None:
    reply = validation_reply(_error(SelectRequest, {"query": "q", "filters": {"min_score": 2}}))
    assert reply.error.field == "filters.min_score"


def test_handler_parameter_name_is_dropped() -> None:
    reply = validation_reply(_error(SelectHandlerArgs, {"request": {"query": "q", "k": 51}}))
    assert reply.error.field == "k"
    reply = validation_reply(_error(SelectHandlerArgs, {"request": {"query": "q", "filters": {"min_score": -1}}}))
    assert reply.error.field == "filters.min_score"


def test_sync_parameter_name_is_dropped_from_list_paths() -> None:
    data = {"sync": {"plugin_id": "p", "plugin_version": "1.0.0", "tools": [{"name": "t"}]}}
    reply = validation_reply(_error(SyncHandlerArgs, data))
    assert reply.error.field == "tools.0.description"


@pytest.mark.parametrize("body", ["not an object", 42, [1, 2]])
def test_non_object_body_says_so(body: Any) -> None:
    reply = validation_reply(_error(SelectRequest, body))
    assert reply.error.message == "the request body must be a JSON object"
    assert reply.error.field is None


def test_non_object_body_through_a_handler_parameter() -> None:
    reply = validation_reply(_error(SelectHandlerArgs, {"request": "text"}))
    assert reply.error.message == "the request body must be a JSON object"
    assert reply.error.field is None


def test_reply_is_a_schema_version_1_message() -> None:
    reply = validation_reply(_error(SelectRequest, {"query": ""}))
    assert reply.schema_version == 1
    assert reply.error.field == "query"


def test_request_error_carries_a_typed_detail() -> None:
    error = RequestError(ErrorCode.NOT_FOUND, "no such tool", "name")
    assert str(error) == "no such tool"
    assert (error.detail.code, error.detail.message, error.detail.field) == (
        ErrorCode.NOT_FOUND,
        "no such tool",
        "name",
    )


async def test_a_refusal_is_answered_from_the_event_loop_without_a_worker_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A burst's excess selects are refused at once (``rate_limited``): each reply built in FastStream's thread pool,
    as a plain function's handler is, cost a thread hop while the burst was being taken in."""
    built_in: list[str] = []

    class Recorded(ErrorReply):
        def __init__(self, **fields: Any) -> None:
            built_in.append(threading.current_thread().name)
            super().__init__(**fields)

    monkeypatch.setattr(messaging, "ErrorReply", Recorded)
    broker, router = NatsBroker(), rpc_router()

    @router.subscriber("refusing")
    async def refusing(body: dict[str, Any]) -> None:
        raise RequestError(ErrorCode.RATE_LIMITED, "too many waiting")

    broker.include_router(router)
    async with TestNatsBroker(broker) as connected:
        reply = await connected.request({}, "refusing", timeout=5)
    assert json.loads(reply.body)["error"]["code"] == "rate_limited"
    assert built_in == [threading.current_thread().name]


class Progress:
    """A message that counts what its consumer told the server."""

    def __init__(self) -> None:
        self.in_progress_told = 0

    async def in_progress(self) -> None:
        self.in_progress_told += 1


async def test_work_longer_than_the_interval_tells_the_server_it_is_in_progress_and_returns_its_result() -> None:
    """An indexer applying a sync whose embedding outlasted the consumer's ack wait got it delivered again to
    another indexer, which published a second report."""
    msg = Progress()
    work = asyncio.ensure_future(asyncio.sleep(0.25, result="report"))
    assert await in_progress_while(msg, work, every_s=0.05) == "report"  # type: ignore[arg-type]
    assert msg.in_progress_told >= 3
    quick = Progress()
    assert await in_progress_while(quick, asyncio.ensure_future(asyncio.sleep(0, result=1)), 5) == 1  # type: ignore[arg-type]
    assert quick.in_progress_told == 0


async def test_a_service_answers_its_health_on_the_queue_groups_subject_and_on_its_copys_own() -> None:
    """A container's health check asks its own copy (``toolsel.rpc.health.<service>.<host>``): through the queue
    group any copy answered, so a hung copy passed its check whenever another one answered it."""
    broker = NatsBroker()
    router = rpc_router()
    add_health(router, "selector", lambda: {"selections": 3})
    broker.include_router(router)
    served = {s.subject.broker_address: getattr(s, "queue", None) for s in broker.subscribers}  # type: ignore[attr-defined]
    own = subjects.instance_health("selector", this_instance())
    assert served == {subjects.health("selector"): "toolsel-selector-health", own: ""}
    async with TestNatsBroker(broker) as connected:
        for subject in (subjects.health("selector"), own):
            reply = HealthReply.model_validate_json((await connected.request(None, subject, timeout=5)).body)
            assert (reply.service, reply.details) == ("selector", {"selections": 3})


def test_the_instance_is_the_hosts_name_unless_the_documents_are_made() -> None:
    assert this_instance() == subjects.instance_name(socket.gethostname())
    broker = NatsBroker()
    router = rpc_router()
    add_health(router, "learner", dict, instance="copy-2")
    documented = DOCUMENTED_INSTANCE.set(subjects.INSTANCE)
    try:
        add_health(router, "indexer", dict)
    finally:
        DOCUMENTED_INSTANCE.reset(documented)
    broker.include_router(router)
    named = {s.subject.template for s in broker.subscribers}  # type: ignore[attr-defined]
    assert subjects.instance_health("learner", "copy-2") in named
    assert subjects.instance_health("indexer", "{instance}") in named  # as the AsyncAPI documents show it
