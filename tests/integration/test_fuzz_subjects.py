"""Hypothesis against the running services, bounded for CI: every request subject answers hostile input with a
typed error (never a timeout, never ``internal``); every event subject applies or dead-letters hostile events,
and the consumers' pending counts return to 0."""

import json
from functools import partial
from typing import Any
from uuid import uuid4

import asyncpg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.integration.catalog import eventually, plugin_sync, sync_and_wait, tool, unique
from tests.integration.test_poison import selection_event, settled
from toolsel.chaos.fuzz import REQUEST_SUBJECTS
from toolsel.chaos.hostile import (
    BINARY_MAX,
    COLLECTION_MAX,
    EDGE_STRINGS,
    FIELDS,
    HOSTILE_TEXTS,
    INTEGER_BOUND,
    MAX_DEPTH,
    OBJECT_MAX,
    TEXT_MAX,
    deep,
    encode,
    event_body,
    event_templates,
)
from toolsel.client import ToolselClient
from toolsel.contracts import ErrorCode, ErrorReply, subjects

REQUEST_EXAMPLES = 30
EVENT_EXAMPLES = 60
HOSTILE_TEXT = st.sampled_from(HOSTILE_TEXTS) | st.text(st.characters(codec=None), max_size=TEXT_MAX)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-INTEGER_BOUND, INTEGER_BOUND)
    | st.floats()
    | HOSTILE_TEXT
    | st.sampled_from([*EDGE_STRINGS, str(uuid4())])
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=COLLECTION_MAX) | st.dictionaries(HOSTILE_TEXT, inner, max_size=COLLECTION_MAX)
    ),
    max_leaves=8,
)
OBJECTS = st.dictionaries(st.sampled_from(FIELDS) | HOSTILE_TEXT, VALUES, max_size=OBJECT_MAX)
BODIES = OBJECTS.map(encode) | st.binary(max_size=BINARY_MAX) | st.integers(1, MAX_DEPTH).map(deep)


async def _answer(client: ToolselClient, subject: str, body: bytes) -> dict[str, Any]:
    reply = await client.nc.request(subject, body, timeout=10)
    return json.loads(reply.data)  # type: ignore[no-any-return]


@pytest.mark.parametrize("subject", REQUEST_SUBJECTS)
async def test_every_request_subject_answers_hostile_input_with_a_typed_error(
    client: ToolselClient, subject: str
) -> None:
    answers = [await _answer(client, subject, body) for body in _draw(BODIES, REQUEST_EXAMPLES)]
    assert len(answers) >= REQUEST_EXAMPLES // 2
    for answer in answers:
        if "error" in answer:
            assert ErrorReply.model_validate(answer).error.code != ErrorCode.INTERNAL, answer


async def _templates(client: ToolselClient, pool: asyncpg.Pool) -> dict[str, dict[str, Any]]:
    """A valid event of each kind, referring to a stored selection and a registered tool."""
    tenant, plugin = unique("tenant"), unique("fuzz")
    await sync_and_wait(client, plugin_sync(plugin, tenant, [tool("get_weather")]))
    selection = selection_event(tenant, plugin)
    await client.nc.jetstream().publish(subjects.SELECTION_EVENTS, selection.model_dump_json().encode())

    async def stored() -> bool:
        query = "SELECT count(*) FROM selection_events WHERE selection_id = $1"
        return bool(await pool.fetchval(query, selection.selection_id))

    assert await eventually(stored)
    return event_templates(selection, tenant, plugin, "get_weather")


async def test_every_event_subject_applies_or_dead_letters_hostile_events_and_nothing_sticks(
    client: ToolselClient, pool: asyncpg.Pool
) -> None:
    """Valid events with hostile fields, and hostile bodies: each applied or dead-lettered, none left pending."""
    templates = await _templates(client, pool)
    js = client.nc.jetstream()
    for kind, template in templates.items():
        events = OBJECTS.map(partial(event_body, kind, template))
        bodies = _draw(BODIES | events, EVENT_EXAMPLES)
        for body in bodies:
            await js.publish(subjects.OPERATOR_EVENTS[kind], body)
        durable = f"{subjects.LEARNER_DURABLE_PREFIX}-{kind}"
        assert await eventually(lambda d=durable: settled(client, d), timeout_s=30), f"{kind}: events stuck"
    assert (await client.health("learner")).status == "ok"


def _draw(strategy: st.SearchStrategy[bytes], examples: int) -> list[bytes]:
    """What hypothesis generates from ``strategy`` (its edge cases first), ``examples`` of them at most."""
    drawn: list[bytes] = []

    @settings(max_examples=examples, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(strategy)
    def draw(body: bytes) -> None:
        drawn.append(body)

    draw()
    return drawn
