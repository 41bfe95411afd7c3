"""A tenant is who the connection is. Two tenants' identities, made by the operator while the stack runs (the
embedded NATS reloads its users): each selects and learns for its own tenant only, reads no other's replies,
cannot act for another tenant by naming it, cannot report on another's selections, and loses its access when
revoked."""

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from uuid import UUID

import nats
import nats.errors
import pytest

from tests.integration.catalog import (
    TOOLS,
    dead_letters,
    eventually,
    plugin_sync,
    run_cli,
    sync_and_wait,
    tool,
    unique,
)
from tests.integration.test_nats_auth import Connection
from toolsel import identities
from toolsel.client import ToolselClient, ToolselError
from toolsel.contracts import ErrorCode, FeedbackEvent, OutcomeEvent, SelectReply, ToolCall, subjects
from toolsel.contracts.identity import INBOX
from toolsel.embedded import EmbeddedNats
from toolsel.messaging import ensure_streams
from toolsel.settings import Settings
from toolsel.stack import Endpoints, Stack
from toolsel.store import events, readmodels

QUERY = "what is the weather in Oslo"


@dataclass
class Tenant:
    name: str
    plugin: str
    made: identities.Made
    client: ToolselClient


@pytest.fixture
async def tenants(stack: Stack, client: ToolselClient) -> AsyncIterator[tuple[Tenant, Tenant]]:
    """Tenants a and b, each with its own plugin of every test tool and an identity connected as a client."""
    assert stack.nats is not None
    made = []
    for prefix in ("a", "b"):
        name, plugin = unique(f"tenant-{prefix}"), unique(f"weather-{prefix}")
        await sync_and_wait(client, plugin_sync(plugin, name, [tool(n) for n in TOOLS]))
        identity = identities.create(stack.settings.home, name, "bot")
        connected = await ToolselClient(identity.nats_url(stack.nats.url), timeout_s=10).__aenter__()
        made.append(Tenant(name, plugin, identity, connected))
    yield made[0], made[1]
    for tenant in made:
        await tenant.client.__aexit__(None, None, None)
        identities.revoke(stack.settings.home, tenant.name, "bot")


async def test_an_identity_selects_for_its_own_tenant_and_may_not_name_another(tenants: tuple[Tenant, Tenant]) -> None:
    a, b = tenants
    reply = await a.client.select(query=QUERY, k=5)
    assert reply.tools
    assert {t.plugin_id for t in reply.tools} == {a.plugin}
    for dry_run in (False, True):
        with pytest.raises(ToolselError) as refused:
            await a.client.select(query=QUERY, tenant_id=b.name, k=5, dry_run=dry_run)
        assert refused.value.detail.code is ErrorCode.FORBIDDEN
        assert refused.value.detail.field == "tenant_id"


async def test_no_identity_reads_another_ones_replies(stack: Stack, tenants: tuple[Tenant, Tenant]) -> None:
    a, b = tenants
    assert stack.nats is not None
    spy = await Connection().connect(a.made.nats_url(stack.nats.url))
    heard: list[bytes] = []

    async def keep(msg: nats.aio.msg.Msg) -> None:
        heard.append(msg.data)

    try:
        for prefix in (f"{INBOX}.>", f"{b.made.identity.scope.inbox_prefix}.>", f"{INBOX}.t.>"):
            await spy.nc.subscribe(prefix, cb=keep)
            assert await spy.refused(f'subscription to "{prefix}"')
        await b.client.select(query=QUERY, k=3)
        await asyncio.sleep(0.5)
        assert heard == []
    finally:
        await spy.nc.close()


async def _stored(pool: object, selection_ids: list[UUID]) -> bool:
    return len(await events.selection_keys(pool, selection_ids)) == len(selection_ids)  # type: ignore[arg-type]


async def test_outcomes_on_another_identitys_selection_are_dead_lettered_and_change_nothing(
    client: ToolselClient, pool: object, tenants: tuple[Tenant, Tenant]
) -> None:
    a, b = tenants
    victim: SelectReply = await b.client.select(query=QUERY, k=3)
    assert await eventually(lambda: _stored(pool, [victim.selection_id]))
    target = victim.tools[0]
    hostile = OutcomeEvent(
        selection_id=victim.selection_id,
        calls=[ToolCall(plugin_id=target.plugin_id, name=target.name, success=False, error="spy")] * 5,
    )
    await a.client.report([hostile])

    async def refused() -> list[tuple[bytes, str]]:
        return [d for d in await dead_letters(client.url, "outcome") if str(hostile.event_id).encode() in d[0]]

    letters = await eventually(refused)
    assert "another identity" in letters[0][1]
    rows = await readmodels.tool_health(pool, target.plugin_id, target.name)  # type: ignore[arg-type]
    assert all(row["calls"] == 0 for row in rows)

    # the owner's own outcome on it counts
    own = OutcomeEvent(
        selection_id=victim.selection_id,
        calls=[ToolCall(plugin_id=target.plugin_id, name=target.name, success=True)],
    )
    await b.client.report([own])

    async def counted() -> bool:
        health = await readmodels.tool_health(pool, target.plugin_id, target.name)  # type: ignore[arg-type]
        return any(row["calls"] == 1 and row["tenant_id"] == b.name for row in health)

    assert await eventually(counted)


async def test_feedback_naming_another_tenant_is_dead_lettered(
    client: ToolselClient, tenants: tuple[Tenant, Tenant]
) -> None:
    a, b = tenants
    spoofed = FeedbackEvent(plugin_id=b.plugin, name="get_weather", tenant_id=b.name, rating=0.0)
    await a.client.report([spoofed])

    async def refused() -> list[tuple[bytes, str]]:
        return [d for d in await dead_letters(client.url, "feedback") if str(spoofed.event_id).encode() in d[0]]

    letters = await eventually(refused)
    assert "not the sender's tenant" in letters[0][1]


async def test_an_identity_rates_its_tenants_tool_from_the_command_line_unchecked(
    stack: Stack, client: ToolselClient, tenants: tuple[Tenant, Tenant]
) -> None:
    """`toolsel feedback submit` named the tenant `default` unless told another, so an identity's rating was
    dead-lettered; and it looked the tool up first, an admin call refused to an identity."""
    a, _ = tenants
    assert stack.nats is not None
    identity = Endpoints(a.made.nats_url(stack.nats.url), "")
    rate = ("feedback", "submit", "--tool", f"{a.plugin}/get_weather", "--rating", "0.3", "--comment", a.name)
    done = await asyncio.to_thread(run_cli, identity, *rate)
    assert done.returncode == 0, done.stderr

    async def stored() -> bool:
        listed = await client.list_feedback(plugin_id=a.plugin, name="get_weather")
        return any((f.tenant_id, f.comment) == (a.name, a.name) for f in listed.feedback)

    assert await eventually(stored)
    assert "not checked (looking a tool up is an admin call)" in done.stderr


async def test_a_claimed_message_id_suppresses_no_selection_event(
    stack: Stack, pool: object, tenants: tuple[Tenant, Tenant]
) -> None:
    """The spy knows the victim's selection ids (as if it had read them) and publishes its own events with them
    as JetStream de-duplication ids at once: every selection event is stored all the same."""
    a, b = tenants
    js = a.client.nc.jetstream()
    ids = []
    for _ in range(5):
        reply = await b.client.select(query=QUERY, k=3)
        ids.append(reply.selection_id)
        body = OutcomeEvent(selection_id=reply.selection_id).model_dump_json().encode()
        for claim in (str(reply.selection_id), f"selection:{reply.selection_id}"):
            await js.publish(a.client.subject(subjects.OUTCOME_ROOT), body, headers={"Nats-Msg-Id": claim})
    assert await eventually(lambda: _stored(pool, ids))


async def test_an_identity_may_sync_only_with_its_plugins_credential(tenants: tuple[Tenant, Tenant]) -> None:
    a, b = tenants
    with pytest.raises(ToolselError) as refused:
        await a.client.sync(plugin_sync(b.plugin, a.name, [tool("get_weather")]))
    assert refused.value.detail.code is ErrorCode.UNAUTHORIZED
    with pytest.raises(ToolselError) as other:
        await a.client.sync(plugin_sync(unique("p"), b.name, [tool("get_weather")]))
    assert other.value.detail.code is ErrorCode.FORBIDDEN


async def test_a_revoked_identity_is_let_in_no_more(stack: Stack) -> None:
    assert stack.nats is not None
    home, tenant = stack.settings.home, unique("tenant-c")
    made = identities.create(home, tenant, "bot")
    assert [i.tenant for i in identities.load(home).values()].count(tenant) == 1
    connected = await Connection().connect(made.nats_url(stack.nats.url))
    identities.revoke(home, tenant, "bot")

    async def closed() -> bool:
        return connected.nc.is_closed or not connected.nc.is_connected

    assert await eventually(closed)
    with pytest.raises((nats.errors.Error, OSError)):
        await nats.connect(made.nats_url(stack.nats.url), allow_reconnect=False, connect_timeout=2)
    with pytest.raises(identities.IdentityError):
        identities.revoke(home, tenant, "bot")


async def test_a_consumer_made_before_scopes_reads_every_scope_after_a_start(tmp_path: Path) -> None:
    """An upgraded home: the learner's durable consumer still filters its kind's bare subject; the next start
    has it read every sender's scope of it, and what is published there reaches the subscription bound to it."""
    server = EmbeddedNats(tmp_path / "nats")
    server.start()
    durable = f"{subjects.LEARNER_DURABLE_PREFIX}-outcome"
    try:
        learner = await nats.connect(server.login("learner"))
        await ensure_streams(server.login("learner"), Settings())
        js = learner.jetstream()
        sub = await js.subscribe(
            subjects.OUTCOME_ROOT, durable=durable, queue=durable, stream=subjects.EVENTS_STREAM, manual_ack=True
        )
        await ensure_streams(server.login("learner"), Settings())
        info = await js.consumer_info(subjects.EVENTS_STREAM, durable)
        assert info.config.filter_subject == subjects.any_scope(subjects.OUTCOME_ROOT)
        operator = await nats.connect(server.login("operator"))
        await operator.jetstream().publish(subjects.OUTCOME_EVENTS, b"{}")
        assert (await sub.next_msg(timeout=5)).subject == subjects.OUTCOME_EVENTS
        await operator.close()
        await learner.close()
    finally:
        server.stop()
