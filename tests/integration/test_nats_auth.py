"""NATS admits only toolsel's users, and each may publish and subscribe only what its role needs: a forged
broadcast is refused by the server, and the selectors' answers do not change."""

import asyncio
import os
import stat
import subprocess
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import nats
import nats.errors
import pytest
from nats.aio.client import Client

from tests.integration.catalog import TOOLS, eventually, plugin_sync, sync_and_wait, tool, unique
from toolsel.client import ToolselClient
from toolsel.contracts import OutcomeEvent, PosteriorsUpdated, PosteriorUpdate, SelectReply, ToolCall, subjects
from toolsel.embedded import CONFIG_FILE, CREDENTIALS_FILE, nats_config, nats_server_binary, password_variable
from toolsel.nats_permissions import NATS_USERS
from toolsel.stack import AGENT, Stack

COMPOSE_CONFIG = Path(__file__).parents[2] / "compose.nats.conf"


class Connection:
    """A raw NATS connection as one user, keeping the errors the server sends it."""

    def __init__(self) -> None:
        self.errors: list[str] = []
        self.nc = Client()

    async def connect(self, url: str) -> "Connection":
        async def on_error(error: Exception) -> None:
            self.errors.append(str(error))

        await self.nc.connect(url, error_cb=on_error, allow_reconnect=False)
        return self

    async def violations(self) -> list[str]:
        """The permission violations so far, lower case as the client reports them."""
        await self.nc.flush()
        return [e.lower() for e in self.errors if "permissions violation" in e.lower()]

    async def refused(self, what: str) -> bool:
        """Whether the server reported a violation naming ``what`` (it may come a moment after the flush)."""

        async def seen() -> bool:
            return any(what.lower() in v for v in await self.violations())

        return await eventually(seen, timeout_s=5)


Connect = Callable[[str], Awaitable[Connection]]


@pytest.fixture
async def connect(stack: Stack) -> AsyncIterator[Connect]:
    opened: list[Connection] = []

    async def as_user(user: str) -> Connection:
        assert stack.nats is not None
        connection = await Connection().connect(stack.nats.login(user))
        opened.append(connection)
        return connection

    yield as_user
    for connection in opened:
        await connection.nc.close()


async def _posterior(client: ToolselClient, tenant: str, plugin: str, name: str) -> tuple[SelectReply, float]:
    reply = await client.select(query="email the report to my boss", tenant_id=tenant, k=5, dry_run=True)
    return reply, next(t.breakdown.alpha for t in reply.tools if (t.plugin_id, t.name) == (plugin, name))


async def test_an_agent_cannot_forge_posteriors_and_the_answers_do_not_change(
    client: ToolselClient, connect: Connect
) -> None:
    tenant, plugin = unique("tenant"), unique("mail")
    await sync_and_wait(client, plugin_sync(plugin, tenant, [tool(n) for n in TOOLS]))
    before, alpha = await _posterior(client, tenant, plugin, "get_weather")
    assert alpha == 1.0

    def forged(value: float) -> bytes:
        update = PosteriorUpdate(
            plugin_id=plugin, name="get_weather", tenant_id=tenant, context_key=before.context_key, alpha=value, beta=1
        )
        return PosteriorsUpdated(updates=[update]).model_dump_json().encode()

    agent = await connect(AGENT)
    await agent.nc.publish(subjects.POSTERIORS_UPDATED, forged(1e9))
    assert await agent.refused(subjects.POSTERIORS_UPDATED)
    await asyncio.sleep(0.5)  # what a selector would have taken in by now
    assert (await _posterior(client, tenant, plugin, "get_weather"))[1] == 1.0

    # the same broadcast from the learner's user does arrive: the refusal above is the server's doing
    learner = await connect("learner")
    await learner.nc.publish(subjects.POSTERIORS_UPDATED, forged(7.0))
    assert await learner.violations() == []

    async def learnt() -> bool:
        return (await _posterior(client, tenant, plugin, "get_weather"))[1] == 7.0

    assert await eventually(learnt)


@pytest.mark.parametrize(
    ("user", "subject"),
    [
        (AGENT, subjects.REGISTRY_CHANGED),
        (AGENT, subjects.TOOL_STATE_CHANGED),
        (AGENT, subjects.SELECTION_EVENTS),
        (AGENT, subjects.ADMIN_TOOLS_LIST),
        (AGENT, subjects.dead_letter("outcome")),
        (AGENT, f"$JS.API.STREAM.PURGE.{subjects.EVENTS_STREAM}"),
        (AGENT, subjects.scoped(subjects.PINS_ROOT, "t.other-tenant.bot")),  # another tenant's pins
        (AGENT, subjects.scoped(subjects.PINS_ROOT, subjects.OPERATOR_SCOPE)),  # any tenant's, as the operator
        (AGENT, subjects.health("selector")),  # its counters are every tenant's
        ("selector", subjects.POSTERIORS_UPDATED),
        ("indexer", subjects.TOOL_STATE_CHANGED),
        ("learner", subjects.REGISTRY_CHANGED),
        ("operator", subjects.POSTERIORS_UPDATED),
    ],
)
async def test_what_a_user_may_not_publish(connect: Connect, user: str, subject: str) -> None:
    connection = await connect(user)
    await connection.nc.publish(subject, b"{}")
    assert await connection.refused(subject)


@pytest.mark.parametrize(
    "subject",
    [
        subjects.any_scope(subjects.SELECT_ROOT),
        subjects.any_scope(subjects.SYNC_ROOT),
        f"{subjects.NOTIFY_PREFIX}.>",
        subjects.any_scope(subjects.OUTCOME_ROOT),
        subjects.any_scope(subjects.PINS_ROOT),
        "_INBOX.>",
    ],
)
async def test_an_agent_cannot_listen_in_or_answer_for_a_service(connect: Connect, subject: str) -> None:
    agent = await connect(AGENT)
    await agent.nc.subscribe(subject, queue=subjects.SELECTOR_QUEUE)
    assert await agent.refused(f'subscription to "{subject}"')


async def test_an_agent_selects_and_reports_with_the_homes_credentials(
    client: ToolselClient, stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No URL: the client finds the embedded NATS of the stack in TOOLSEL_HOME and logs in as an agent."""
    plugin = unique("weather")
    await sync_and_wait(client, plugin_sync(plugin, "default", [tool("get_weather")]))
    monkeypatch.delenv("TOOLSEL_NATS_URL", raising=False)
    monkeypatch.setenv("TOOLSEL_HOME", str(stack.settings.home))
    async with ToolselClient() as agent:
        assert agent.url.startswith("nats://default.agent:")
        reply = await agent.select(query="weather in Oslo", k=1)
        call = ToolCall(plugin_id=plugin, name=reply.tools[0].name, success=True)
        await agent.report([OutcomeEvent(selection_id=reply.selection_id, calls=[call])])


@pytest.mark.parametrize("login", ["", "default.agent:wrong@", "nobody:nothing@"])
async def test_no_way_in_without_a_password(stack: Stack, login: str) -> None:
    assert stack.nats is not None
    with pytest.raises((nats.errors.Error, OSError)):
        await nats.connect(
            stack.nats.url.replace("nats://", f"nats://{login}"), allow_reconnect=False, connect_timeout=2
        )


def test_the_credentials_are_private_to_the_owner(stack: Stack) -> None:
    assert stack.nats is not None
    for name in (CREDENTIALS_FILE, CONFIG_FILE):
        assert stat.S_IMODE((stack.nats.directory / name).stat().st_mode) == 0o600, name


def test_compose_gives_nats_the_same_users_and_permissions(tmp_path: Path) -> None:
    """compose.nats.conf is what the embedded server runs, with the passwords from the environment; the
    server accepts it. Regenerate it with the expression below when the permissions change."""
    expected = nats_config({user: f"${password_variable(user)}" for user in NATS_USERS})
    assert COMPOSE_CONFIG.read_text() == expected, "compose.nats.conf is stale: regenerate it from nats_config"
    env = {**os.environ, **{password_variable(user): f"pw-{user}" for user in NATS_USERS}}
    checked = subprocess.run(
        [str(nats_server_binary()), "-t", "-c", str(COMPOSE_CONFIG)], env=env, capture_output=True, text=True
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    missing = {k: v for k, v in env.items() if k != "TOOLSEL_NATS_DEFAULT_AGENT_PASSWORD"}
    refused = subprocess.run(
        [str(nats_server_binary()), "-t", "-c", str(COMPOSE_CONFIG)], env=missing, capture_output=True, text=True
    )
    assert refused.returncode != 0, "a password missing from the environment must stop the server"
