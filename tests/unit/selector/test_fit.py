"""A reply over the message size is cut to fit and says how: the largest schemas summarised first, then the
lowest-ranked tools left out; one that fits is untouched; the selection event keeps only the tools offered."""

from typing import Any
from uuid import uuid4

from nats.aio.client import DEFAULT_MAX_PAYLOAD_SIZE

from toolsel.contracts import SelectedTool, SelectionEvent, SelectReply
from toolsel.messaging import HEADERS_ROOM, room
from toolsel.services.selector.fit import CUT_STAGE, fit, offered, size

LIMIT = 1_000_000


def _schema(n_bytes: int) -> dict[str, Any]:
    return {"type": "object", "properties": {"q": {"type": "string", "description": "x" * n_bytes}}}


def _reply(*schema_bytes: int) -> SelectReply:
    tools = [
        {"plugin_id": "p", "name": f"tool_{i}", "description": "d", "parameters": _schema(n), "score": 1 - i / 100,
         "breakdown": {}}
        for i, n in enumerate(schema_bytes)
    ]  # fmt: skip
    return SelectReply.model_validate(
        {"selection_id": uuid4(), "tools": tools, "context_key": "free::general", "method": "hybrid",
         "tokens": {"selected": 0, "catalog": 0, "saved": 0}, "latency_ms": 1.0}
    )  # fmt: skip


def test_a_reply_that_fits_is_untouched() -> None:
    reply = _reply(1000, 2000)
    assert fit(reply, LIMIT) is reply


def test_the_largest_schemas_are_summarised_first_and_every_tool_stays() -> None:
    reply = _reply(10_000, 600_000, 20_000, 500_000)
    cut = fit(reply, LIMIT)
    assert size(cut) <= LIMIT
    assert cut.cut is not None
    assert cut.cut.schemas_summarised == ["p/tool_1"]
    assert cut.cut.tools_dropped == []
    assert (cut.cut.limit_bytes, cut.cut.full_bytes) == (LIMIT, size(reply))
    assert [t.name for t in cut.tools] == [t.name for t in reply.tools]
    assert "toolsel tools show p tool_1" in cut.tools[1].parameters["description"]
    assert cut.tools[3].parameters == reply.tools[3].parameters
    assert cut.degraded == [CUT_STAGE]


def test_tools_are_left_out_from_the_lowest_rank_when_summaries_are_not_enough() -> None:
    reply = _reply(*[10] * 5)
    room = size(reply) - 10  # small schemas: a summary would not be smaller
    cut = fit(reply, room)
    assert cut.cut is not None
    assert size(cut) <= room
    assert cut.cut.schemas_summarised == []
    assert cut.cut.tools_dropped
    assert cut.cut.tools_dropped == [t.key for t in reply.tools[len(cut.tools) :]]
    assert [t.name for t in cut.tools] == [t.name for t in reply.tools[: len(cut.tools)]]


def test_the_event_keeps_only_the_tools_offered() -> None:
    reply = _reply(100, 100, 100, 100)
    cut = fit(reply, size(reply) - 10)
    assert cut.cut is not None
    assert cut.cut.tools_dropped
    event = SelectionEvent(
        tenant_id="t", query="q", tier="free", context_key="free::general", method="hybrid",
        tools=[SelectedTool(plugin_id="p", name=t.name, rank=i, score=t.score) for i, t in enumerate(reply.tools)],
        candidate_count=4, latency_ms=1.0, tokens_selected=0, tokens_catalog=0,
    )  # fmt: skip
    assert [t.key for t in offered(event, cut).tools] == [t.key for t in cut.tools]
    assert offered(event, reply) is event


def test_the_room_is_the_servers_limit_less_the_headers_or_nats_default() -> None:
    assert room(8192) == 8192 - HEADERS_ROOM
    assert room(None) == room(object()) == room(0) == DEFAULT_MAX_PAYLOAD_SIZE - HEADERS_ROOM
