"""The client's one error family, without a stack: every failure is a ``ToolselError`` of the subclass that says
what to do, in one line."""

import logging
import socket

import nats.errors
import pytest

from toolsel.client import SyncToolselClient, ToolselClient
from toolsel.contracts import ErrorCode, ErrorDetail
from toolsel.errors import (
    Conflict,
    InvalidRequest,
    NoStack,
    NotFound,
    NotPermitted,
    ServiceFailed,
    SyncTooLarge,
    Timeout,
    ToolselError,
    TooManyAttempts,
    from_nats,
    from_reply,
)


def closed_port() -> int:
    """A port nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


@pytest.mark.parametrize(
    ("code", "kind"),
    [
        (ErrorCode.INVALID_REQUEST, InvalidRequest),
        (ErrorCode.UNAUTHORIZED, NotPermitted),
        (ErrorCode.FORBIDDEN, NotPermitted),
        (ErrorCode.NOT_FOUND, NotFound),
        (ErrorCode.CONFLICT, Conflict),
        (ErrorCode.UNAVAILABLE, NoStack),
        (ErrorCode.RATE_LIMITED, TooManyAttempts),
        (ErrorCode.INTERNAL, ServiceFailed),
    ],
)
def test_a_service_error_reply_is_the_subclass_of_its_code(code: ErrorCode, kind: type[ToolselError]) -> None:
    error = from_reply(ErrorDetail(code=code, message="why", field="k"))
    assert (type(error), str(error), error.detail.code) == (kind, f"{code.value}: why (k)", code)


def test_nats_failures_say_what_to_do() -> None:
    timeout = from_nats(nats.errors.TimeoutError(), "toolsel.rpc.select.op", "nats://h:4222", 2.0)
    assert isinstance(timeout, Timeout)
    assert "no answer to toolsel.rpc.select.op within 2 s" in str(timeout)
    assert isinstance(from_nats(nats.errors.NoRespondersError(), "s", "u"), NoStack)
    unreachable = from_nats(nats.errors.NoServersError(), "the connection", "nats://h:4222")
    assert isinstance(unreachable, NoStack)
    assert "toolsel up" in str(unreachable)
    assert from_nats(ValueError("not about NATS"), "s", "u") is None
    assert isinstance(SyncTooLarge.saying("too big"), InvalidRequest | ValueError)


async def test_an_admin_call_without_the_operator_user_fails_at_once() -> None:
    client = ToolselClient(f"nats://acme.bot:secret@127.0.0.1:{closed_port()}")  # never connected: nothing is sent
    with pytest.raises(NotPermitted) as refused:
        await client.show_tool("mail", "send_email")
    assert "operator's NATS user" in str(refused.value)
    assert "acme.bot" in str(refused.value)


async def test_no_stack_is_one_error_and_nats_py_logs_nothing(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    with pytest.raises(NoStack, match=r"cannot reach NATS at nats://127\.0\.0\.1"):
        async with ToolselClient(f"nats://127.0.0.1:{closed_port()}", reconnect_attempts=1):
            pass
    assert [r for r in caplog.records if r.name.startswith("nats")] == []
    with pytest.raises(NoStack, match="inside 'async with'"):
        await ToolselClient("nats://127.0.0.1:4222").select("anything")


def test_the_sync_client_raises_the_same_family() -> None:
    with pytest.raises(NoStack), SyncToolselClient(f"nats://127.0.0.1:{closed_port()}", reconnect_attempts=1):
        pass
