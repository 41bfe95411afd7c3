"""Bad input gets a typed error reply at once; an event that cannot be applied is kept on the dead-letter stream."""

import json
from uuid import uuid4

import pytest

from tests.integration.catalog import dead_letters, eventually
from toolsel.client import ToolselClient, ToolselError
from toolsel.contracts import ErrorCode, ErrorReply, OutcomeEvent, SelectReply, ToolCall, subjects


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"query": ""}, "query"),
        ({"query": "x" * 2001}, "query"),
        ({"query": "send mail", "k": 0}, "k"),
        ({"query": "send mail", "k": 51}, "k"),
        ({"query": "send mail", "colour": "red"}, "colour"),
        ({"query": "send mail", "filters": {"min_score": 2}}, "filters.min_score"),
        ({"query": "send mail", "tenant_id": "no spaces allowed"}, "tenant_id"),
    ],
)
async def test_invalid_select_names_the_field(client: ToolselClient, payload: dict[str, object], field: str) -> None:
    with pytest.raises(ToolselError) as error:
        await client.request(subjects.SELECT, json.dumps(payload).encode(), SelectReply, timeout_s=2)
    assert (error.value.detail.code, error.value.detail.field) == (ErrorCode.INVALID_REQUEST, field)


@pytest.mark.parametrize("body", [b"not json", b"[1, 2]", b""])
async def test_select_body_that_is_not_an_object(client: ToolselClient, body: bytes) -> None:
    with pytest.raises(ToolselError) as error:
        await client.request(subjects.SELECT, body, SelectReply, timeout_s=2)
    assert error.value.detail.code == ErrorCode.INVALID_REQUEST


@pytest.mark.parametrize(
    ("content_type", "body"),
    [
        ("text/plain", b"\xff\xfe"),
        ("application/json", b"1" * 5000),
        ("application/json", b"\xff\xfe"),
        ("application/json", b"not json"),
    ],
)
async def test_a_body_its_content_type_cannot_decode_is_an_invalid_request(
    client: ToolselClient, content_type: str, body: bytes
) -> None:
    """Raw bytes, as a FastStream client sends them (it sets a content type): the same typed error as without one,
    not ``internal``."""
    subject = client.subject(subjects.SELECT)
    typed = await client.nc.request(subject, body, timeout=10, headers={"content-type": content_type})
    bare = await client.nc.request(subject, body, timeout=10)
    error = ErrorReply.model_validate_json(typed.data).error
    assert error.code == ErrorCode.INVALID_REQUEST, error
    assert error == ErrorReply.model_validate_json(bare.data).error


async def test_malformed_outcome_goes_to_the_dead_letter_stream(client: ToolselClient) -> None:
    marker = uuid4().hex
    await client.nc.jetstream().publish(subjects.OUTCOME_EVENTS, json.dumps({"oops": marker}).encode())

    async def kept() -> list[tuple[bytes, str]]:
        return [d for d in await dead_letters(client.url, "outcome") if marker.encode() in d[0]]

    letters = await eventually(kept)
    assert len(letters) == 1
    assert letters[0][1].startswith("malformed")


async def test_outcome_of_an_unknown_selection_is_dead_lettered_after_retries(client: ToolselClient) -> None:
    event = OutcomeEvent(selection_id=uuid4(), calls=[ToolCall(plugin_id="p", name="t", success=True)])
    await client.report([event])

    async def kept() -> list[tuple[bytes, str]]:
        return [d for d in await dead_letters(client.url, "outcome") if str(event.event_id).encode() in d[0]]

    letters = await eventually(kept, timeout_s=40)
    assert len(letters) == 1
    assert "unknown selection" in letters[0][1]
