"""The client's connection on a real nats-server of its own: credentials NATS refuses are a refusal at once, not
"no stack" after the reconnect attempts; so is a request or an event NATS does not let the user publish, and an
admin call from a service's user; a client a server holds for its life outlives an outage longer than its
attempts; leaving a client whose connection was lost raises nothing of nats-py's; and an event whose ack does not
come fails within the client's own time limit."""

import asyncio
import time
from uuid import uuid4

import nats
import pytest
from nats.js.api import ConsumerConfig

from tests.integration.catalog import eventually
from toolsel.client import SyncToolselClient, ToolselClient
from toolsel.contracts import ToolCall, subjects
from toolsel.embedded import EmbeddedNats, login_url, nats_credentials
from toolsel.errors import NoStack, NotPermitted, Timeout
from toolsel.messaging import ensure_streams, refit_consumers
from toolsel.nats_permissions import DEFAULT_AGENT
from toolsel.settings import Settings

pytestmark = pytest.mark.integration


async def test_credentials_nats_refuses_are_not_permitted_and_not_tried_again(server: EmbeddedNats) -> None:
    wrong = server.url.replace("nats://", f"nats://{DEFAULT_AGENT.user}:wrong@")
    with pytest.raises(NotPermitted, match=r"refused the credentials of default\.agent") as refused:
        async with ToolselClient(wrong, reconnect_attempts=3):
            pass
    assert "wrong" not in str(refused.value)  # the password is not repeated


def login(server: EmbeddedNats, user: str) -> str:
    return login_url(server.url, user, nats_credentials(server.directory)[user])


async def test_what_nats_does_not_let_the_user_publish_fails_at_once_not_after_the_timeout(
    server: EmbeddedNats,
) -> None:
    """NATS drops such a publish and says so apart, as a "Permissions Violation": the request waited out its
    timeout (an admin call its 300 s) and then said that no service answered. A service's user may answer selects,
    not make them, nor report events."""
    # the events stream: the refused event is not merely unstored
    await ensure_streams(login(server, "learner"), Settings())
    async with ToolselClient(login(server, "selector"), timeout_s=60, admin_token="token") as selector:
        started = time.monotonic()
        with pytest.raises(NotPermitted, match=r"does not let user selector publish to toolsel\.rpc\.select\.op"):
            await selector.select(query="will it rain in Paris")
        with pytest.raises(NotPermitted, match=r"toolsel\.events\.outcome\.op"):
            await selector.report_outcome(uuid4(), [ToolCall(plugin_id="p", name="t", success=True)])
        with pytest.raises(NotPermitted, match=r"toolsel\.rpc\.admin\.tools\.list is an admin call.* is selector$"):
            await selector.list_tools()
        assert time.monotonic() - started < 5
    async with ToolselClient(agent_url(server), timeout_s=60) as agent:
        started = time.monotonic()
        with pytest.raises(NotPermitted, match=r"default\.agent publish to toolsel\.rpc\.health\.selector"):
            await agent.health("selector", timeout_s=60)
        assert time.monotonic() - started < 5


async def test_a_client_that_stays_connected_outlives_an_outage_longer_than_its_attempts(
    server: EmbeddedNats,
) -> None:
    url = agent_url(server)
    held = ToolselClient(url, reconnect_attempts=1, stay_connected=True)
    plain = ToolselClient(url, reconnect_attempts=1)
    async with held, plain:
        server.stop()
        assert await eventually(lambda: _async(plain.nc.is_closed), timeout_s=30)  # its attempts ran out
        await asyncio.sleep(3)  # past the held client's attempts too
        server.start()
        assert await eventually(lambda: _async(held.nc.is_connected), timeout_s=30)
        await held.nc.flush(timeout=5)
    # leaving the plain client, whose connection is closed, raised nats-py's ConnectionClosedError


async def _async(value: bool) -> bool:
    return value


def agent_url(server: EmbeddedNats) -> str:
    return login_url(server.url, DEFAULT_AGENT.user, nats_credentials(server.directory)[DEFAULT_AGENT.user])


async def test_a_consumer_made_with_other_delivery_settings_is_given_the_configured_ones(server: EmbeddedNats) -> None:
    """nats-py binds to a durable consumer as it was made: a learner restarted with another ack wait or batch size
    told the server it was in progress on its own schedule while the server redelivered on the old one."""
    learner = login_url(server.url, "learner", nats_credentials(server.directory)["learner"])
    await ensure_streams(learner, Settings())
    durable = subjects.learner_durable("outcome")
    nc = await nats.connect(learner)
    try:
        js = nc.jetstream()
        made = ConsumerConfig(
            durable_name=durable, filter_subject=subjects.OUTCOME_EVENTS, ack_wait=1.0, max_ack_pending=20
        )
        await js.add_consumer(subjects.EVENTS_STREAM, config=made)
        absent = subjects.learner_durable("review")
        assert await refit_consumers(learner, [durable, absent], 6.0, 200) == [durable]
        info = await js.consumer_info(subjects.EVENTS_STREAM, durable)
        assert (info.config.ack_wait, info.config.max_ack_pending) == (6.0, 200)
        assert info.config.filter_subject == subjects.OUTCOME_EVENTS  # what it reads stays
        assert await refit_consumers(learner, [durable], 6.0, 200) == []
    finally:
        await nc.close()


async def test_an_event_whose_ack_does_not_come_fails_within_the_clients_own_timeout(server: EmbeddedNats) -> None:
    """JetStream's ack was awaited for nats-py's own 5 s whatever the client's ``timeout_s``, which the error named."""
    operator = await nats.connect(login_url(server.url, "operator", nats_credentials(server.directory)["operator"]))
    try:
        await operator.subscribe(f"{subjects.EVENTS_PREFIX}.>")  # takes the event and never acks it (no stream)
        await operator.flush()
        async with ToolselClient(agent_url(server), timeout_s=0.5) as agent:
            started = time.monotonic()
            with pytest.raises(Timeout, match=r"within 0\.5 s"):
                await agent.report_outcome(uuid4(), [ToolCall(plugin_id="p", name="t", success=True)])
            assert time.monotonic() - started < 2.5
    finally:
        await operator.close()


async def test_an_admin_call_waits_the_clients_admin_timeout(server: EmbeddedNats) -> None:
    """An admin call waited a fixed 300 s whatever the client was given."""
    indexer = await nats.connect(login(server, "indexer"))
    try:
        await indexer.subscribe(subjects.ADMIN_TOOLS_LIST)  # takes the request and never answers
        await indexer.flush()
        async with ToolselClient(login(server, "operator"), admin_timeout_s=0.5, admin_token="token") as operator:
            started = time.monotonic()
            with pytest.raises(Timeout, match=r"within 0\.5 s"):
                await asyncio.wait_for(operator.list_tools(), 10)
            assert time.monotonic() - started < 2.5
    finally:
        await indexer.close()


async def test_a_closed_client_says_it_was_closed_and_can_be_entered_again(server: EmbeddedNats) -> None:
    """After ``async with`` a call said NATS could not be reached, with NATS up."""
    client = ToolselClient(agent_url(server))
    async with client:
        pass
    with pytest.raises(NoStack, match="this client was closed"):
        await client.report_outcome(uuid4(), [ToolCall(plugin_id="p", name="t", success=True)])
    async with client:
        assert client.nc.is_connected


def test_the_sync_client_after_with_fails_at_once_and_can_be_entered_again(server: EmbeddedNats) -> None:
    """After ``with`` a call raised ``RuntimeError: Event loop is closed``, and entering again failed."""
    client = SyncToolselClient(agent_url(server))
    with client:
        assert client.aio.nc.is_connected
    started = time.monotonic()
    with pytest.raises(NoStack, match="inside 'with'"):
        client.select(query="will it rain in Paris")
    assert time.monotonic() - started < 1
    with client:
        assert client.aio.nc.is_connected
