"""Where a repeated select's round trip goes on the wire, apart from the selection: NATS request/reply p50 of a bare
echo, of a nats-py handler answering a select-sized reply, and of a FastStream subscriber answering the same reply.

    python scripts/bench_wire.py [--requests 600]

Starts the packaged NATS server on a free local port (no JetStream, no users), answers in a child process and asks
from this one. The reply is a ``SelectReply`` of 10 tools with schemas about as large as the evaluation sets'
(about 11 KB); the client validates it as ``ToolselClient`` does. The difference between the rows is the reply's
size (encoding, transfer, validation) and FastStream's handling; docs/results.md gives the numbers.
"""

import argparse
import asyncio
import multiprocessing
import socket
import subprocess
import time
import uuid
from collections.abc import Sequence

import nats
import numpy as np
from nats.aio.msg import Msg

from toolsel.contracts import SelectReply, SelectRequest
from toolsel.embedded import nats_server_binary
from toolsel.messaging import make_broker, rpc_router

SUBJECTS = {"echo": "bench.wire.echo", "nats-py": "bench.wire.raw", "faststream": "bench.wire.faststream"}
WARM_UP = 100


def reply_of_ten_tools() -> SelectReply:
    """A reply the size of a real one: 10 tools, each with a description and four described parameters."""
    parameters = {f"p{j}": {"type": "string", "description": "a parameter " * 4} for j in range(4)}
    breakdown = {"relevance": 0.5, "similarity": 0.4, "bm25": 3.0, "quality": 0.5, "thompson": 0.5, "composite": 0.5}
    tools = [
        {
            "plugin_id": "bench",
            "name": f"tool_{i}",
            "description": "what the tool does, as its author wrote it " * 6,
            "parameters": {"type": "object", "properties": parameters},
            "score": 0.5,
            "confidence": 0.5,
            "breakdown": {**breakdown, "alpha": 1.0, "beta": 1.0},
        }
        for i in range(10)
    ]
    return SelectReply.model_validate(
        {
            "selection_id": uuid.uuid4(),
            "tools": tools,
            "context_key": "free:*:general",
            "method": "hybrid",
            "tokens": {"selected": 1, "catalog": 2, "saved": 1},
            "latency_ms": 1.0,
        }
    )


def answer(url: str) -> None:
    """The answering process: the three handlers, until it is terminated."""
    reply = reply_of_ten_tools()

    async def main() -> None:
        nc = await nats.connect(url)

        async def echo(msg: Msg) -> None:
            await msg.respond(msg.data)

        async def raw(msg: Msg) -> None:
            SelectRequest.model_validate_json(msg.data)
            await msg.respond(reply.model_dump_json().encode())

        await nc.subscribe(SUBJECTS["echo"], cb=echo)
        await nc.subscribe(SUBJECTS["nats-py"], cb=raw)
        broker, router = make_broker(url, "bench-wire"), rpc_router()  # as the services make theirs

        @router.subscriber(SUBJECTS["faststream"])
        async def handle(request: SelectRequest) -> SelectReply:
            return reply

        broker.include_router(router)
        await broker.start()
        await asyncio.Event().wait()

    asyncio.run(main())


async def ask(url: str, requests: int) -> dict[str, float]:
    """p50 ms of each handler's round trip, after a warm-up."""
    nc = await nats.connect(url)
    body = SelectRequest(query="find a tool that converts currencies for my trip", dry_run=True).model_dump_json()
    result = {}
    for name, subject in SUBJECTS.items():
        spent = []
        for _ in range(WARM_UP + requests):
            started = time.perf_counter()
            msg = await nc.request(subject, body.encode(), timeout=5)
            if name != "echo":
                SelectReply.model_validate_json(msg.data)
            spent.append(time.perf_counter() - started)
        result[name] = float(np.percentile(spent[WARM_UP:], 50)) * 1e3
    await nc.close()
    return result


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=600)
    args = parser.parse_args(argv)
    port = free_port()
    server = subprocess.Popen(
        [str(nats_server_binary()), "-a", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"nats://127.0.0.1:{port}"
    answering = multiprocessing.Process(target=answer, args=(url,), daemon=True)
    try:
        time.sleep(0.5)
        answering.start()
        time.sleep(3)  # FastStream's subscriber up
        print(f"reply: {len(reply_of_ten_tools().model_dump_json())} bytes; p50 of {args.requests} requests each")
        for name, p50 in asyncio.run(ask(url, args.requests)).items():
            print(f"{name:>10}: {p50:.3f} ms")
    finally:
        answering.terminate()
        server.terminate()


if __name__ == "__main__":
    main()
