"""Validation errors become typed replies naming the field, without the handler's parameter name; slow work keeps
telling the server its message is in progress."""

import asyncio
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from toolsel.contracts import ErrorCode, PluginSync, SelectRequest
from toolsel.messaging import RequestError, in_progress_while, validation_reply


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
