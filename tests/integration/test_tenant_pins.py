"""A tenant's own pins (``toolsel.rpc.pins``): a tenant's identity pins and unpins shared tools for its own tenant,
and only its answers change; it cannot act for another tenant, touch a tool it does not see, or change anything
with a bad request; the operator's rules decide over its choices; the client, the CLI and MCP all reach it."""

from collections.abc import AsyncIterator
from dataclasses import dataclass

import asyncpg
import pytest
from mcp import Client

from tests.integration.catalog import eventually, plugin_sync, run_cli, sync_and_wait, tool, unique
from tests.integration.test_mcp import call, refused
from toolsel import identities
from toolsel.client import ToolselClient, ToolselError
from toolsel.contracts import SHARED_TENANT, ErrorCode, PinList, PinRequest, RuleFields, SelectReply, subjects
from toolsel.mcp.server import create_server
from toolsel.mcp.sessions import Sessions
from toolsel.mcp.toolshed import Toolshed
from toolsel.messaging import RequestError
from toolsel.services.indexer.pins import apply
from toolsel.stack import Endpoints, Stack

EMAIL = "email my boss the quarterly report"
WEATHER = "will it rain in London tomorrow"


@dataclass
class Tenant:
    name: str
    client: ToolselClient

    async def answer(self, query: str = EMAIL) -> SelectReply:
        return await self.client.select(query=query, k=1, dry_run=True, seed=1)

    async def pinned(self, plugin: str, query: str = EMAIL) -> list[str]:
        """The names of ``plugin``'s pinned tools in its answer to ``query``, sorted."""
        return sorted(t.name for t in (await self.answer(query)).tools if t.pinned and t.plugin_id == plugin)


@pytest.fixture
async def shared(client: ToolselClient) -> AsyncIterator[str]:
    """A plugin every tenant sees: get_weather pinned by the plugin, send_email and translate_text not. Removed
    after the test, so that no other test's answers hold its pin."""
    plugin = unique("shared")
    tools = [tool("send_email"), tool("translate_text"), tool("get_weather", pinned=True)]
    await client.sync(plugin_sync(plugin, SHARED_TENANT, tools))

    async def seen() -> bool:
        found = await client.select(
            query=EMAIL, tenant_id=unique("any"), k=5, dry_run=True, filters={"plugins": [plugin]}
        )
        return len(found.tools) == len(tools)

    assert await eventually(seen), "the selector did not pick up the shared plugin"
    yield plugin
    await client.remove_plugin(plugin)


@pytest.fixture
async def tenants(stack: Stack) -> AsyncIterator[tuple[Tenant, Tenant]]:
    """Tenants a and b, each an identity connected as a client."""
    assert stack.nats is not None
    made = []
    for prefix in ("a", "b"):
        name = unique(f"pins-{prefix}")
        identity = identities.create(stack.settings.home, name, "bot")
        made.append(Tenant(name, await ToolselClient(identity.nats_url(stack.nats.url), timeout_s=10).__aenter__()))
    yield made[0], made[1]
    for tenant in made:
        await tenant.client.__aexit__(None, None, None)
        identities.revoke(stack.settings.home, tenant.name, "bot")


async def _rules_of(pool: asyncpg.Pool, *tenants: str) -> list[tuple[str, str, str]]:
    rows = await pool.fetch(
        "SELECT tenant_id, effect, target FROM tool_visibility_rules WHERE tenant_id = ANY($1) ORDER BY 1, 3",
        list(tenants),
    )
    return [(r["tenant_id"], r["effect"], r["target"]) for r in rows]


async def test_a_tenants_pin_joins_its_answers_and_no_other_tenants(
    shared: str, tenants: tuple[Tenant, Tenant]
) -> None:
    a, b = tenants
    assert await a.pinned(shared) == await b.pinned(shared) == ["get_weather"]
    pins = await a.client.pin_tool(shared, "translate_text")
    assert pins.tenant_id == a.name
    assert pins.changed
    assert [(c.plugin_id, c.name, c.pinned) for c in pins.choices] == [(shared, "translate_text", True)]
    assert f"{shared}/get_weather" in pins.declared

    async def joined() -> bool:
        return "translate_text" in await a.pinned(shared)

    assert await eventually(joined), "the tenant's pin did not reach the selector"
    assert await a.pinned(shared) == ["get_weather", "translate_text"]
    assert await b.pinned(shared) == ["get_weather"]
    assert (await b.client.list_pins()).choices == []
    again = await a.client.pin_tool(shared, "translate_text")
    assert not again.changed
    assert again.choices == pins.choices


async def test_a_tenants_unpin_takes_a_plugins_pin_out_of_its_own_answers_only(
    shared: str, tenants: tuple[Tenant, Tenant]
) -> None:
    a, b = tenants
    unpinned = await a.client.unpin_tool(shared, "get_weather")
    assert [(c.name, c.pinned) for c in unpinned.choices] == [("get_weather", False)]

    async def left() -> bool:
        return await a.pinned(shared) == []

    assert await eventually(left), "the tenant's unpin did not reach the selector"
    assert await b.pinned(shared) == ["get_weather"]
    weather = await a.answer(WEATHER)
    assert [(t.name, t.pinned) for t in weather.tools] == [("get_weather", False)]  # ranked, not hidden
    cleared = await a.client.clear_pin(shared, "get_weather")
    assert cleared.changed
    assert cleared.choices == []

    async def back() -> bool:
        return await a.pinned(shared) == ["get_weather"]

    assert await eventually(back), "clearing the choice did not bring the plugin's pin back"


async def test_a_tenant_cannot_pin_for_another_tenant_nor_a_tool_it_does_not_see(
    client: ToolselClient, pool: asyncpg.Pool, shared: str, tenants: tuple[Tenant, Tenant]
) -> None:
    a, b = tenants
    with pytest.raises(ToolselError) as forbidden:
        await a.client.pin_tool(shared, "translate_text", tenant_id=b.name)
    assert forbidden.value.detail.code is ErrorCode.FORBIDDEN
    assert forbidden.value.detail.field == "tenant_id"
    others = unique("own")
    await sync_and_wait(client, plugin_sync(others, b.name, [tool("create_event")]))
    for plugin, name in ((shared, "no_such_tool"), (others, "create_event"), (unique("nowhere"), "send_email")):
        for method in (a.client.pin_tool, a.client.unpin_tool, a.client.clear_pin):
            with pytest.raises(ToolselError) as unknown:
                await method(plugin, name)
            assert unknown.value.detail.code is ErrorCode.NOT_FOUND, (method, plugin, name)
    bad = [b'{"action": "pin"}', b'{"action": "explode"}', b'{"action": "list", "plugin_id": "x", "name": "y"}', b"[]"]
    for body in bad:
        with pytest.raises(ToolselError) as invalid:
            await a.client.request(subjects.PINS_ROOT, body, PinList)
        assert invalid.value.detail.code is ErrorCode.INVALID_REQUEST, body
    assert await _rules_of(pool, a.name, b.name) == []
    assert (await a.client.list_pins()).choices == []


async def test_a_tenants_choices_stop_at_its_limit_and_change_nothing_past_it(pool: asyncpg.Pool, shared: str) -> None:
    tenant = unique("pins-limit")
    assert await apply(pool, tenant, PinRequest(action="pin", plugin_id=shared, name="send_email"), 1)
    assert await apply(pool, tenant, PinRequest(action="unpin", plugin_id=shared, name="send_email"), 1)  # replaces
    with pytest.raises(RequestError) as full:
        await apply(pool, tenant, PinRequest(action="pin", plugin_id=shared, name="translate_text"), 1)
    assert full.value.detail.code is ErrorCode.CONFLICT
    assert await _rules_of(pool, tenant) == [(tenant, "unpin", f"{shared}/send_email")]


async def test_the_operators_rules_decide_over_a_tenants_choices(
    client: ToolselClient, shared: str, tenants: tuple[Tenant, Tenant]
) -> None:
    a, _ = tenants
    await a.client.unpin_tool(shared, "get_weather")
    await a.client.pin_tool(shared, "translate_text")

    async def chosen() -> bool:
        return await a.pinned(shared) == ["translate_text"]

    assert await eventually(chosen), "the tenant's choices did not reach the selector"
    rules = [
        RuleFields(tenant_id=a.name, rule_type="org", effect=effect, target_kind="tool", target=f"{shared}/{name}")
        for effect, name in (("pin", "get_weather"), ("deny", "translate_text"))
    ]
    made = [await client.create_rule(rule.model_copy(update={"priority": -10})) for rule in rules]
    try:

        async def decided() -> bool:
            return await a.pinned(shared) == ["get_weather"]

        assert await eventually(decided), "the operator's rules did not decide over the tenant's choices"
        found = await a.client.select(query="translate this sentence into Spanish", k=5, dry_run=True)
        assert "translate_text" not in {t.name for t in found.tools}  # denied: hidden, the tenant's pin or not
        listed = await a.client.list_pins()
        assert {(c.name, c.pinned) for c in listed.choices} == {("get_weather", False), ("translate_text", True)}
    finally:
        for rule in made:
            await client.delete_rule(rule.id)


async def test_the_operator_pins_for_a_tenant_it_names_and_the_tenant_sees_it_as_its_own(
    client: ToolselClient, shared: str, tenants: tuple[Tenant, Tenant]
) -> None:
    a, b = tenants
    await client.pin_tool(shared, "send_email", tenant_id=a.name)
    assert [c.name for c in (await a.client.list_pins()).choices] == ["send_email"]
    assert (await b.client.list_pins()).choices == []
    await a.client.unpin_tool(shared, "get_weather")
    choices = (await client.list_rules(tenant_id=a.name)).rules
    assert {(r.origin, r.effect, r.target) for r in choices} == {
        ("tenant", "pin", f"{shared}/send_email"),
        ("tenant", "unpin", f"{shared}/get_weather"),
    }
    moved = next(r for r in choices if r.effect == "pin")
    with pytest.raises(ToolselError) as clash:  # onto the tenant's other choice: refused, nothing changed
        await client.update_rule(moved.id, {"target": f"{shared}/get_weather"})
    assert clash.value.detail.code is ErrorCode.CONFLICT
    assert {(r.effect, r.target) for r in (await client.list_rules(tenant_id=a.name)).rules} == {
        (r.effect, r.target) for r in choices
    }
    assert (await a.client.clear_pin(shared, "send_email")).changed


async def test_an_agent_pins_through_mcp_for_its_own_tenant(shared: str, tenants: tuple[Tenant, Tenant]) -> None:
    a, b = tenants
    server = create_server(Toolshed(a.client, Sessions(max_sessions=10, ttl_s=600)), pins=True)
    async with Client(server) as connected:
        assert "pin_tool" in {t.name for t in (await connected.list_tools()).tools}
        pinned = await call(connected, "pin_tool", action="pin", tool=f"{shared}/translate_text")
        assert pinned["tenant_id"] == a.name
        assert [(c["name"], c["pinned"]) for c in pinned["choices"]] == [("translate_text", True)]

        async def joined() -> bool:
            return await a.pinned(shared) == ["get_weather", "translate_text"]

        assert await eventually(joined), "the pin made through MCP did not reach the tenant's answers"
        assert "not_found" in await refused(connected, "pin_tool", action="pin", tool=f"{shared}/nothing_here")
        assert "pin names a tool" in await refused(connected, "pin_tool", action="unpin")
        listed = await call(connected, "pin_tool", action="list")
        assert [c["name"] for c in listed["choices"]] == ["translate_text"]
    assert (await b.client.list_pins()).choices == []
    plain = create_server(Toolshed(a.client, Sessions(max_sessions=10, ttl_s=600)))
    async with Client(plain) as connected:
        assert "pin_tool" not in {t.name for t in (await connected.list_tools()).tools}


async def test_the_cli_pins_for_the_tenant_the_operator_names(endpoints: Endpoints, shared: str) -> None:
    tenant = unique("pins-cli")
    done = run_cli(endpoints, "pins", "pin", shared, "translate_text", "--tenant", tenant)
    assert done.returncode == 0, done.stderr
    assert f"pinned {shared}/translate_text" in done.stdout
    listed = run_cli(endpoints, "pins", "list", "--tenant", tenant, "--json")
    assert listed.returncode == 0, listed.stderr
    pins = PinList.model_validate_json(listed.stdout)
    assert [(c.name, c.pinned) for c in pins.choices] == [("translate_text", True)]
    assert f"{shared}/get_weather" in pins.declared
    unknown = run_cli(endpoints, "pins", "unpin", shared, "nothing_here", "--tenant", tenant)
    assert unknown.returncode != 0
    assert "nothing_here" in unknown.stderr
    assert run_cli(endpoints, "pins", "clear", shared, "translate_text", "--tenant", tenant).returncode == 0
