"""The operators' admin API against the real stack: the token, tool writes, categories, mappings and rules."""

import json

import asyncpg
import pytest

from tests.integration.catalog import eventually, plugin_sync, sync_and_wait, tool, unique
from toolsel.client import ToolselClient, ToolselError
from toolsel.contracts import CategorySpec, ErrorCode, ToolKey, ToolList, ToolQuery, subjects
from toolsel.contracts.admin import (
    CategoryQuery,
    CategoryTree,
    PageCategories,
    PageMapping,
    PageMappingList,
    PageMappingQuery,
    PageMappingWrite,
    PageQuery,
    QualityList,
    QualityQuery,
    QuarantineList,
    QuarantineQuery,
    RuleCreate,
    RuleFields,
    RuleKey,
    RuleList,
    RulePatch,
    RuleQuery,
    RuleUpdate,
    ToolRegister,
    ToolUpdate,
    ToolWriteReport,
    VisibilityRule,
)

pytestmark = pytest.mark.integration


async def _refused(client: ToolselClient, subject: str, body: bytes) -> ToolselError:
    with pytest.raises(ToolselError) as refused:
        await client.request(subject, body, ToolList)
    return refused.value


@pytest.mark.parametrize("token", [None, "wrong-token"])
async def test_admin_requests_without_the_token_are_refused_and_change_nothing(
    client: ToolselClient, pool: asyncpg.Pool, token: str | None
) -> None:
    plugin, tenant = unique("p"), unique("t")
    await client.sync(plugin_sync(plugin, tenant, [tool("get_weather")]))
    request = ToolKey(plugin_id=plugin, name="get_weather", admin_token=token)
    error = await _refused(client, subjects.ADMIN_TOOLS_DELETE, request.model_dump_json().encode())
    assert (error.detail.code, error.detail.field) == (ErrorCode.UNAUTHORIZED, "admin_token")
    list_error = await _refused(
        client, subjects.ADMIN_TOOLS_LIST, ToolQuery(admin_token=token).model_dump_json().encode()
    )
    assert list_error.detail.code == ErrorCode.UNAUTHORIZED
    deleted = await pool.fetchval("SELECT deleted_at FROM tools WHERE plugin_id = $1", plugin)
    assert deleted is None


async def test_register_update_and_soft_delete_go_through_the_sync_writer(
    client: ToolselClient, pool: asyncpg.Pool
) -> None:
    plugin, tenant = unique("p"), unique("t")
    await sync_and_wait(client, plugin_sync(plugin, tenant, [tool("get_weather")]))

    registered = await client.admin(
        subjects.ADMIN_TOOLS_REGISTER,
        ToolRegister(plugin_id=plugin, tenant_id=tenant, tool=tool("send_email")),
        ToolWriteReport,
    )
    assert (registered.version, registered.changed_fields, registered.embedded) == (1, ["created"], 1)
    assert registered.tool.embedding_status == "current"
    reply = await eventually(lambda: _selected(client, "email my boss the report", tenant, "send_email"))
    assert reply

    with pytest.raises(ToolselError) as conflict:
        await client.admin(
            subjects.ADMIN_TOOLS_REGISTER, ToolRegister(plugin_id=plugin, tool=tool("send_email")), ToolWriteReport
        )
    assert conflict.value.detail.code == ErrorCode.CONFLICT

    update = ToolUpdate(plugin_id=plugin, name="send_email", changes={"description": "Mail a message to people."})
    updated = await client.admin(subjects.ADMIN_TOOLS_UPDATE, update, ToolWriteReport)
    # the tool's vector comes from its example queries, so a new description re-embeds nothing
    assert (updated.version, updated.changed_fields, updated.embedded) == (2, ["description"], 0)
    versions = await client.tool_versions(plugin, "send_email")
    assert [v.reason for v in versions.versions] == ["admin register", "admin update"]
    stored = await pool.fetchrow(
        "SELECT spec->>'description' AS description, tenant_id FROM tools WHERE plugin_id = $1 AND name = 'send_email'",
        plugin,
    )
    assert tuple(stored) == ("Mail a message to people.", tenant)

    bad = ToolUpdate(plugin_id=plugin, name="send_email", changes={"pin_weight": 5000})
    with pytest.raises(ToolselError) as invalid:
        await client.admin(subjects.ADMIN_TOOLS_UPDATE, bad, ToolWriteReport)
    assert (invalid.value.detail.code, invalid.value.detail.field) == (ErrorCode.INVALID_REQUEST, "changes.pin_weight")

    deleted = await client.admin(
        subjects.ADMIN_TOOLS_DELETE, ToolKey(plugin_id=plugin, name="send_email"), ToolWriteReport
    )
    assert deleted.tool.deleted_at is not None
    assert (deleted.version, deleted.changed_fields) == (3, ["deleted_at"])
    versions = await client.tool_versions(plugin, "send_email")
    assert [v.reason for v in versions.versions] == ["admin register", "admin update", "admin delete"]
    gone = await eventually(lambda: _not_selected(client, "email my boss the report", tenant, "send_email"))
    assert gone


async def _selected(client: ToolselClient, query: str, tenant: str, name: str) -> bool:
    reply = await client.select(query=query, tenant_id=tenant, dry_run=True)
    return any(t.name == name for t in reply.tools)


async def _not_selected(client: ToolselClient, query: str, tenant: str, name: str) -> bool:
    return not await _selected(client, query, tenant, name)


async def test_categories_tree_and_the_categories_of_a_page(client: ToolselClient) -> None:
    plugin, tenant = unique("p"), unique("t")
    sync = plugin_sync(plugin, tenant, [tool("get_weather")]).model_copy(
        update={"categories": [CategorySpec(name="general"), CategorySpec(name="forecasts", parent="general")]}
    )
    await client.sync(sync)
    tree = await client.admin(subjects.ADMIN_CATEGORIES_LIST, CategoryQuery(plugin_id=plugin), CategoryTree)
    assert [(c.name, [k.name for k in c.children]) for c in tree.categories] == [("general", ["forecasts"])]
    page = await client.admin(subjects.ADMIN_CATEGORIES_FOR_PAGE, PageQuery(page="/inbox/today"), PageCategories)
    mine = [(c.category, c.via) for c in page.categories if c.plugin_id == plugin]
    assert mine == [("general", "/inbox*"), ("forecasts", "parent:general")]


async def test_page_mappings_create_list_delete(client: ToolselClient) -> None:
    plugin, tenant = unique("p"), unique("t")
    await client.sync(plugin_sync(plugin, tenant, [tool("get_weather")]))
    write = PageMappingWrite(plugin_id=plugin, page_pattern="*weather*", category="general", priority=5)
    created = await client.admin(subjects.ADMIN_PAGE_MAPPINGS_CREATE, write, PageMapping)
    assert created.priority == 5
    listed = await client.admin(subjects.ADMIN_PAGE_MAPPINGS_LIST, PageMappingQuery(plugin_id=plugin), PageMappingList)
    assert [(m.page_pattern, m.priority) for m in listed.mappings] == [("*weather*", 5), ("/inbox*", 0)]
    unnamed = write.model_copy(update={"priority": None})
    assert (await client.admin(subjects.ADMIN_PAGE_MAPPINGS_CREATE, unnamed, PageMapping)).priority == 5
    await client.admin(subjects.ADMIN_PAGE_MAPPINGS_DELETE, write, PageMapping)
    with pytest.raises(ToolselError) as missing:
        await client.admin(subjects.ADMIN_PAGE_MAPPINGS_DELETE, write, PageMapping)
    assert missing.value.detail.code == ErrorCode.NOT_FOUND
    other = write.model_copy(update={"category": "nope"})
    with pytest.raises(ToolselError) as unknown:
        await client.admin(subjects.ADMIN_PAGE_MAPPINGS_CREATE, other, PageMapping)
    assert (unknown.value.detail.code, unknown.value.detail.field) == (ErrorCode.NOT_FOUND, "category")


async def test_visibility_rules_crud_reach_the_selector(client: ToolselClient) -> None:
    plugin, tenant = unique("p"), unique("t")
    await sync_and_wait(client, plugin_sync(plugin, tenant, [tool("get_weather"), tool("send_email")]))
    deny = RuleFields(
        tenant_id=tenant,
        rule_type="org",
        effect="deny",
        target_kind="tool",
        target=f"{plugin}/send_email",
        conditions={"org": tenant},
        priority=10,
    )
    rule = await client.admin(subjects.ADMIN_RULES_CREATE, RuleCreate(rule=deny), VisibilityRule)
    assert await eventually(lambda: _not_selected(client, "email my boss the report", tenant, "send_email"))
    listed = await client.admin(subjects.ADMIN_RULES_LIST, RuleQuery(tenant_id=tenant), RuleList)
    assert [r.id for r in listed.rules] == [rule.id]

    paused = RuleUpdate(id=rule.id, rule=RulePatch(active=False))
    updated = await client.admin(subjects.ADMIN_RULES_UPDATE, paused, VisibilityRule)
    assert updated == rule.model_copy(update={"active": False})  # the fields it did not name are kept
    clash = RuleUpdate(id=rule.id, rule=RulePatch(rule_type="page"))
    with pytest.raises(ToolselError) as invalid:  # a page rule with the org condition it kept
        await client.admin(subjects.ADMIN_RULES_UPDATE, clash, VisibilityRule)
    assert (invalid.value.detail.code, invalid.value.detail.field) == (ErrorCode.INVALID_REQUEST, "rule")
    assert "conditions.org" in invalid.value.detail.message
    assert await eventually(lambda: _selected(client, "email my boss the report", tenant, "send_email"))
    assert not (await client.admin(subjects.ADMIN_RULES_LIST, RuleQuery(tenant_id=tenant), RuleList)).rules

    await client.admin(subjects.ADMIN_RULES_DELETE, RuleKey(id=rule.id), VisibilityRule)
    with pytest.raises(ToolselError) as missing:
        await client.admin(subjects.ADMIN_RULES_DELETE, RuleKey(id=rule.id), VisibilityRule)
    assert (missing.value.detail.code, missing.value.detail.field) == (ErrorCode.NOT_FOUND, "id")


async def test_a_rule_with_an_unknown_condition_is_an_invalid_request(client: ToolselClient) -> None:
    body = {
        "admin_token": client.admin_token,
        "rule": {
            "rule_type": "page",
            "effect": "deny",
            "target_kind": "tool",
            "target": "a/b",
            "conditions": {"org": "x"},
        },
    }
    error = await _refused(client, subjects.ADMIN_RULES_CREATE, json.dumps(body).encode())
    assert error.detail.code == ErrorCode.INVALID_REQUEST
    assert "page rule" in error.detail.message


@pytest.mark.parametrize(("key", "operators"), [("org", {"in": 5}), ("org", {"in": None}), ("tier", {"gt": ["x"]})])
async def test_a_rule_with_a_mistyped_operand_is_an_invalid_request_and_stores_nothing(
    client: ToolselClient, key: str, operators: dict[str, object]
) -> None:
    tenant = unique("t")
    rule = {"tenant_id": tenant, "rule_type": key, "effect": "deny", "target_kind": "tool", "target": "a/b"}
    body = {"admin_token": client.admin_token, "rule": {**rule, "conditions": {key: operators}}}
    error = await _refused(client, subjects.ADMIN_RULES_CREATE, json.dumps(body).encode())
    assert (error.detail.code, error.detail.field) == (ErrorCode.INVALID_REQUEST, f"rule.conditions.{key}")
    assert not (await client.admin(subjects.ADMIN_RULES_LIST, RuleQuery(tenant_id=tenant), RuleList)).rules


async def test_quality_of_a_tool_degraded_tools_and_the_quarantine_list(
    client: ToolselClient, pool: asyncpg.Pool
) -> None:
    plugin, tenant = unique("p"), unique("t")
    await client.sync(plugin_sync(plugin, tenant, [tool("get_weather"), tool("send_email")]))
    one = await client.admin(subjects.ADMIN_QUALITY, QualityQuery(plugin_id=plugin, name="get_weather"), QualityList)
    assert [(t.name, t.calls, t.state) for t in one.tools] == [("get_weather", 0, "healthy")]
    # the learner's state machine is tested with the learner; here its stored result is what is read
    tool_id = await pool.fetchval("SELECT id FROM tools WHERE plugin_id = $1 AND name = 'send_email'", plugin)
    await pool.execute(
        "INSERT INTO tool_quarantine (tool_id, tenant_id, reason) VALUES ($1, $2, 'quality below 0.3')", tool_id, tenant
    )
    degraded = await client.admin(subjects.ADMIN_QUALITY, QualityQuery(degraded=True), QualityList)
    assert [(t.plugin_id, t.name, t.state) for t in degraded.tools if t.plugin_id == plugin] == [
        (plugin, "send_email", "quarantined")
    ]
    listed = await client.admin(subjects.ADMIN_QUARANTINE_LIST, QuarantineQuery(), QuarantineList)
    assert [(e.name, e.tenant_id, e.reason) for e in listed.entries if e.plugin_id == plugin] == [
        ("send_email", tenant, "quality below 0.3")
    ]
    await pool.execute("UPDATE tool_quarantine SET released_at = now() WHERE tool_id = $1", tool_id)
