"""A reply that fits in one NATS message. NATS refuses to send a message over the server's ``max_payload`` (1 MB by
default), so a reply over it would never reach the agent, which would wait for it until its timeout. Such a reply
is cut instead, saying how: the largest schemas summarised first (the tools stay, with what to call them for),
then the lowest-ranked tools left out."""

from typing import Any

from pydantic_core import to_json

from toolsel.contracts import ReplyCut, ScoredTool, SelectionEvent, SelectReply

CUT_STAGE = "reply.size"
"""What ``degraded`` names on a cut reply."""


def size(reply: SelectReply) -> int:
    """The reply's bytes as JSON on the wire."""
    return len(reply.model_dump_json().encode())


def summary(tool: ScoredTool, full_bytes: int) -> dict[str, Any]:
    """What stands for a schema too large for the reply: an object schema that says so and where the whole one is."""
    return {
        "type": "object",
        "description": (
            f"schema of {full_bytes:,} bytes left out of this reply to fit the message size; "
            f"the whole one: `toolsel tools show {tool.plugin_id} {tool.name}`"
        ),
    }


def fit(reply: SelectReply, room: int) -> SelectReply:
    """``reply`` if it takes at most ``room`` bytes, else a copy cut to fit: schemas summarised (largest first,
    those a summary makes smaller) until it fits, then tools left out from the lowest rank up. The cut is recorded
    in ``reply.cut``."""
    full = size(reply)
    if full <= room:
        return reply
    tools = list(reply.tools)
    schema_bytes = [len(to_json(t.parameters)) for t in tools]
    cut = ReplyCut(limit_bytes=room, full_bytes=full)
    degraded = [*reply.degraded, CUT_STAGE]

    def current() -> SelectReply:
        return reply.model_copy(update={"tools": tools, "cut": cut, "degraded": degraded})

    for i in sorted(range(len(tools)), key=lambda i: -schema_bytes[i]):
        if size(current()) <= room:
            return current()
        shorter = summary(tools[i], schema_bytes[i])
        if len(to_json(shorter)) < schema_bytes[i]:
            tools[i] = tools[i].model_copy(update={"parameters": shorter})
            cut.schemas_summarised.append(tools[i].key)
    while tools and size(current()) > room:
        cut.tools_dropped.insert(0, tools.pop().key)
    return current()


def offered(event: SelectionEvent, reply: SelectReply) -> SelectionEvent:
    """The selection's event without the tools its cut left out: the agent was never offered them, so nothing it
    reports may teach about them."""
    if reply.cut is None or not reply.cut.tools_dropped:
        return event
    dropped = set(reply.cut.tools_dropped)
    return event.model_copy(update={"tools": [t for t in event.tools if t.key not in dropped]})
