"""A request whose reply NATS will not carry (over the server's max_payload) still gets an answer: a typed error
saying the reply is too large, from any request/reply handler (``rpc_router``). Against a real nats-server whose
max_payload is small, so a reply of a few kilobytes is over it."""

import json
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import nats
import pytest
from faststream.nats import NatsBroker

from toolsel.contracts import HealthReply
from toolsel.embedded import nats_server_binary
from toolsel.messaging import rpc_router

MAX_PAYLOAD = 4096


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.fixture
def small_nats(tmp_path: Path) -> Iterator[str]:
    """A nats-server carrying messages of at most ``MAX_PAYLOAD`` bytes."""
    config = tmp_path / "small.conf"
    config.write_text(f"max_payload: {MAX_PAYLOAD}\n")
    port = _free_port()
    server = subprocess.Popen([str(nats_server_binary()), "-c", str(config), "-a", "127.0.0.1", "-p", str(port)])
    try:
        deadline = time.monotonic() + 10
        while socket.socket().connect_ex(("127.0.0.1", port)) != 0:
            assert time.monotonic() < deadline, "nats-server did not start"
            time.sleep(0.05)
        yield f"nats://127.0.0.1:{port}"
    finally:
        server.terminate()
        server.wait(10)


async def test_a_reply_over_the_payload_limit_becomes_a_typed_error(small_nats: str) -> None:
    router = rpc_router()

    @router.subscriber("test.reply.size")
    async def answer(size: int) -> HealthReply:
        return HealthReply(service="test", version="1", details={"filler": "x" * size})

    broker = NatsBroker(small_nats)
    broker.include_router(router)
    await broker.start()
    client = await nats.connect(small_nats)
    try:
        small = json.loads((await client.request("test.reply.size", b"100", timeout=10)).data)
        assert small["details"]["filler"] == "x" * 100
        large = json.loads((await client.request("test.reply.size", str(MAX_PAYLOAD * 2).encode(), timeout=10)).data)
        assert large["error"]["code"] == "invalid_request"
        assert "too large for one message" in large["error"]["message"]
    finally:
        await client.close()
        await broker.stop()
