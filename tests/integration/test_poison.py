"""The poison pills fault injection found, each sent beside good events: the good ones are applied, the bad one is
dead-lettered with its reason, and nothing is redelivered forever (the consumers' pending counts return to 0)."""

import json
from collections.abc import AsyncIterator, Callable
from typing import Any
from uuid import uuid4

import asyncpg
import nats.errors
import pytest
from nats.aio.subscription import Subscription
from nats.js.api import DeliverPolicy

from tests.integration.catalog import eventually, plugin_sync, sync_and_wait, tool, unique
from toolsel.client import ToolselClient
from toolsel.contracts import (
    ErrorCode,
    ErrorReply,
    FeedbackEvent,
    OutcomeEvent,
    SelectedTool,
    SelectionEvent,
    ToolCall,
    subjects,
)
from toolsel.messaging import consumer_settled

GOOD = 10
Payload = Callable[[dict[str, Any]], bytes]


def selection_event(tenant: str, plugin: str) -> SelectionEvent:
    return SelectionEvent(
        tenant_id=tenant,
        query="weather in Oslo",
        tier="free",
        context_key="free::general",
        method="hybrid",
        tools=[SelectedTool(plugin_id=plugin, name="get_weather", rank=0, score=0.5)],
        candidate_count=1,
        latency_ms=1.0,
        tokens_selected=1,
        tokens_catalog=1,
    )


def _with(**changes: Any) -> Payload:
    return lambda good: json.dumps(good | changes).encode()


def _deep(good: dict[str, Any]) -> bytes:
    return json.dumps(good).encode()[:-1] + b', "calls": ' + b"[" * 5000 + b"]" * 5000 + b"}"


def _call_error(good: dict[str, Any]) -> bytes:
    call = {"plugin_id": "p", "name": "n", "success": False, "error": "timeout\x00"}
    return json.dumps(good | {"calls": [call]}).encode()


POISON: dict[str, tuple[str, Payload]] = {
    "NUL in a selection's query": ("selection", _with(query="weather\x00")),
    "NUL in a selection's page": ("selection", _with(page="/inbox\x00")),
    "candidate_count beyond int": ("selection", _with(candidate_count=2**31)),
    "NUL in an outcome's error": ("outcome", _call_error),
    "occurred_at beyond year 9999 in UTC": ("outcome", _with(occurred_at="9999-12-31T23:59:59-14:00")),
    "a naive occurred_at among aware ones": ("outcome", _with(occurred_at="2024-05-01T12:00:00")),
    "JSON nested 5,000 deep": ("outcome", _deep),
    "NUL in a feedback comment": ("feedback", _with(comment="great\x00")),
}


@pytest.fixture
async def dead_letters(client: ToolselClient) -> AsyncIterator[Subscription]:
    sub = await client.nc.jetstream().subscribe(
        f"{subjects.DLQ_PREFIX}.>", ordered_consumer=True, deliver_policy=DeliverPolicy.NEW
    )
    yield sub
    await sub.unsubscribe()


async def _dead_lettered(sub: Subscription, body: bytes) -> tuple[str, str] | None:
    """The subject and reason of ``body``'s dead letter, once it arrives."""

    async def arrived() -> tuple[str, str] | None:
        try:
            while True:
                msg = await sub.next_msg(timeout=0.2)
                if msg.data == body:
                    return msg.subject, (msg.headers or {}).get("toolsel-reason", "")
        except nats.errors.TimeoutError:
            return None

    return await eventually(arrived, timeout_s=30)


async def settled(client: ToolselClient, durable: str) -> bool:
    """Nothing of the consumer's left to deliver or waiting for an ack: no event is stuck."""
    return await consumer_settled(client.nc, durable)


@pytest.mark.parametrize("case", list(POISON))
async def test_a_poison_pill_is_dead_lettered_and_its_batch_is_applied(
    client: ToolselClient, pool: asyncpg.Pool, dead_letters: Subscription, case: str
) -> None:
    kind, poison = POISON[case]
    tenant, plugin = unique("tenant"), unique("poison")
    await sync_and_wait(client, plugin_sync(plugin, tenant, [tool("get_weather")]))
    js = client.nc.jetstream()
    selections = [selection_event(tenant, plugin) for _ in range(GOOD)]
    good: list[SelectionEvent | OutcomeEvent | FeedbackEvent] = list(selections)
    if kind != "selection":
        for selection in selections:
            await js.publish(subjects.SELECTION_EVENTS, selection.model_dump_json().encode())
        call = ToolCall(plugin_id=plugin, name="get_weather", success=True)
        good = (
            [OutcomeEvent(selection_id=s.selection_id, calls=[call]) for s in selections]
            if kind == "outcome"
            else [FeedbackEvent(plugin_id=plugin, name="get_weather", tenant_id=tenant, rating=0.5) for _ in selections]
        )
    fresh = {"event_id": str(uuid4())} | ({} if kind == "feedback" else {"selection_id": str(uuid4())})
    bad = poison(json.loads(good[0].model_dump_json()) | fresh)
    bodies = [e.model_dump_json().encode() for e in good]
    bodies.insert(GOOD // 2, bad)
    subject = {"selection": subjects.SELECTION_EVENTS, "outcome": subjects.OUTCOME_EVENTS}.get(
        kind, subjects.FEEDBACK_EVENTS
    )
    for body in bodies:
        await js.publish(subject, body)

    letter = await _dead_lettered(dead_letters, bad)
    assert letter is not None, f"{case}: not dead-lettered"
    assert letter[0] == subjects.dead_letter(kind)
    assert letter[1].startswith("malformed: ")

    table, key = {
        "selection": ("selection_events", "selection_id"),
        "outcome": ("outcomes", "event_id"),
        "feedback": ("tool_feedback", "event_id"),
    }[kind]
    ids = [getattr(e, "selection_id" if kind == "selection" else "event_id") for e in good]

    async def applied() -> bool:
        return await pool.fetchval(f"SELECT count(*) FROM {table} WHERE {key} = ANY($1::uuid[])", ids) == GOOD

    assert await eventually(applied), f"{case}: the good events beside it were not all applied"
    assert await eventually(lambda: settled(client, f"{subjects.LEARNER_DURABLE_PREFIX}-{kind}"), timeout_s=30)


async def test_a_sync_event_with_nul_in_a_description_is_dead_lettered_not_dropped(
    client: ToolselClient, pool: asyncpg.Pool, dead_letters: Subscription
) -> None:
    plugin = unique("nul")
    sync = json.loads(plugin_sync(plugin, unique("tenant"), [tool("get_weather")]).model_dump_json())
    sync["tools"][0]["description"] = "Weather\x00"
    body = json.dumps(sync).encode()
    await client.nc.jetstream().publish(subjects.SYNC_EVENTS, body)
    letter = await _dead_lettered(dead_letters, body)
    assert letter is not None
    assert letter[0] == subjects.dead_letter("sync")
    assert "cannot be stored" in letter[1]
    assert await pool.fetchval("SELECT count(*) FROM tools WHERE plugin_id = $1", plugin) == 0
    assert await eventually(lambda: settled(client, subjects.INDEXER_DURABLE))


DEEP = b"[" * 1000 + b"]" * 1000


@pytest.mark.parametrize(
    ("subject", "body"),
    [
        (subjects.SELECT, b'{"query": ' + DEEP + b"}"),
        (subjects.SYNC, b'{"plugin_id": "p", "plugin_version": "1.0.0", "tools": ' + DEEP + b"}"),
        (subjects.SYNC, json.dumps({"plugin_id": "p", "plugin_version": "1.0.0", "tools": [
            {"name": "t", "description": "d\x00"}]}).encode()),
        (subjects.SYNC, json.dumps({"plugin_id": "p", "plugin_version": "1.0.0", "tools": [
            {"name": "t", "description": "d", "parameters": {"q": "\ud800"}}]}).encode("utf-8", "surrogatepass")),
        (subjects.SYNC, b'{"plugin_id": "p", "plugin_version": "1.0.0", "tools": [{"name": "t", "description": '
                        b'"\\ud800"}]}'),
    ],
)  # fmt: skip
async def test_deep_json_nul_and_lone_surrogates_in_requests_are_invalid_requests(
    client: ToolselClient, subject: str, body: bytes
) -> None:
    reply = json.loads((await client.nc.request(subject, body, timeout=10)).data)
    assert ErrorReply.model_validate(reply).error.code == ErrorCode.INVALID_REQUEST
