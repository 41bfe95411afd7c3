"""Fuzz: hostile requests to every request subject and hostile events to every event subject of the running
stack. A request must get a result or a typed error (never a timeout, never ``internal``); an event must be applied
or dead-lettered, never left pending; no service may exit."""

import asyncio
import json
import time
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import nats.errors
from nats.aio.msg import Msg
from nats.js.api import DeliverPolicy

from toolsel.chaos.figures import (
    NO_RESPONDERS,
    TIMEOUT,
    dead_lettered,
    event_figures,
    reason_kind,
    request_figures,
    verdict,
)
from toolsel.chaos.hostile import Hostile, event_templates
from toolsel.chaos.stage import TOOLS, Stage, durable, selection_of
from toolsel.contracts import CategorySpec, PluginSync, ToolSpec, subjects
from toolsel.stack import health_all
from toolsel.waiting import eventually

REQUEST_SUBJECTS = subjects.request_subjects(subjects.OPERATOR_SCOPE)
CONCURRENCY = 16
"""Requests in flight at once."""
REQUEST_TIMEOUT_S = 10.0
SETTLE_S = 300.0
"""How long an event subject's consumer may take to settle before what is left counts as stuck."""
QUIET_S = 2.0
"""No dead letter for this long: the dead letters of what was published are all in."""


async def _request(stage: Stage, subject: str, body: bytes, gate: asyncio.Semaphore) -> str:
    async with gate:
        try:
            reply = await stage.client.nc.request(subject, body, timeout=REQUEST_TIMEOUT_S)
        except nats.errors.NoRespondersError:
            return NO_RESPONDERS
        except nats.errors.TimeoutError:
            return TIMEOUT
    return verdict(reply.data)


async def fuzz_requests(stage: Stage, hostile: Hostile, subject: str, count: int) -> dict[str, Any]:
    token = stage.client.admin_token if subject in subjects.ADMIN_SUBJECTS else None
    gate = asyncio.Semaphore(CONCURRENCY)
    bodies = [hostile.body(token) for _ in range(count)]
    verdicts = await asyncio.gather(*(_request(stage, subject, body, gate) for body in bodies))
    return request_figures(Counter(verdicts))


async def _templates(stage: Stage) -> dict[str, dict[str, Any]]:
    """A valid event of each kind, referring to a stored selection and a registered tool of the fuzz tenant."""
    tenant, plugin, name = stage.name("fuzz"), stage.name("fuzz"), "get_weather"
    await stage.sync_catalog(tenant, plugin, (name,))
    selection = selection_of(tenant, plugin, name)
    await stage.client.nc.jetstream().publish(subjects.SELECTION_EVENTS, selection.model_dump_json().encode())
    sync = PluginSync(
        plugin_id=plugin,
        plugin_version="1.0.1",
        tenant_id=tenant,
        tools=[ToolSpec(name=name, description=TOOLS[name][0], category="general")],
        categories=[CategorySpec(name="general")],
    )
    return event_templates(selection, tenant, plugin, name) | {"sync": json.loads(sync.model_dump_json())}


class DeadLetters:
    """Every dead letter since it started, by kind: (body, reason)."""

    def __init__(self) -> None:
        self.letters: dict[str, list[tuple[bytes, str]]] = {}
        self.last_at = time.monotonic()

    async def take(self, msg: Msg) -> None:
        kind = msg.subject.rpartition(".")[2]
        self.letters.setdefault(kind, []).append((msg.data, (msg.headers or {}).get("toolsel-reason", "")))
        self.last_at = time.monotonic()

    async def quiet(self) -> None:
        """Wait until none has arrived for ``QUIET_S``."""

        async def still() -> bool:
            return time.monotonic() - self.last_at > QUIET_S

        await eventually(still, timeout_s=60)


@asynccontextmanager
async def dead_letters(stage: Stage) -> AsyncIterator[DeadLetters]:
    seen = DeadLetters()
    sub = await stage.client.nc.jetstream().subscribe(
        f"{subjects.DLQ_PREFIX}.>", ordered_consumer=True, deliver_policy=DeliverPolicy.NEW, cb=seen.take
    )
    try:
        yield seen
    finally:
        await sub.unsubscribe()


async def fuzz_events(stage: Stage, hostile: Hostile, count: int, letters: DeadLetters) -> dict[str, Any]:
    figures: dict[str, Any] = {}
    for kind, template in (await _templates(stage)).items():
        bodies = [hostile.event(kind, template) for _ in range(count)]
        await stage.publish(subjects.OPERATOR_EVENTS[kind], bodies)
        stuck = await stage.settle(durable(kind), SETTLE_S)
        await letters.quiet()
        mine = letters.letters.pop(kind, [])
        dead = dead_lettered(kind, bodies, (body for body, _ in mine))
        figures[kind] = event_figures(len(bodies), dead, stuck, Counter(reason_kind(r) for _, r in mine))
    return figures


async def fuzz(stage: Stage, per_subject: int) -> dict[str, Any]:
    """``per_subject`` hostile inputs to each request subject and each event subject; the figures of each and
    their totals, the services restarted meanwhile and whether each answers its health request after."""
    hostile = Hostile(stage.seed)
    before = stage.restarts()
    started = time.monotonic()
    requests = {s: await fuzz_requests(stage, hostile, s, per_subject) for s in REQUEST_SUBJECTS}
    async with dead_letters(stage) as letters:
        events = await fuzz_events(stage, hostile, per_subject, letters)
    health = await health_all(stage.client, subjects.SERVICES)
    total = Counter[str]()
    for figures in requests.values():
        total.update(figures["codes"])
    return {
        "per_subject": per_subject,
        "seconds": round(time.monotonic() - started, 1),
        "requests": {"subjects": len(requests), **request_figures(total), "by_subject": requests},
        "events": {
            "subjects": len(events),
            **{k: sum(e[k] for e in events.values()) for k in ("published", "dead_lettered", "applied", "stuck")},
            "by_subject": events,
        },
        "service_restarts": stage.restarts() - before,
        "unhealthy_after": sorted(s for s, h in health.items() if isinstance(h, str)),
    }
