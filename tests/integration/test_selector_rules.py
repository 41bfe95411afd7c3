"""Visibility rules stored in PostgreSQL reach the selector and hide tools for the subjects they match."""

import json
from typing import Any

import asyncpg

from tests.integration.catalog import TOOLS, eventually, plugin_sync, sync_and_wait, tool, unique
from toolsel.client import ToolselClient
from toolsel.contracts import RegistryChanged, SelectReply, subjects


async def test_a_tier_rule_hides_a_category_below_teams(client: ToolselClient, pool: asyncpg.Pool) -> None:
    tenant, plugin = unique("tenant"), unique("rules")
    await sync_and_wait(client, plugin_sync(plugin, tenant, [tool(n) for n in TOOLS]))
    await pool.execute(
        "INSERT INTO tool_visibility_rules (tenant_id, rule_type, effect, target_kind, target, conditions, priority)"
        " VALUES ($1, 'tier', 'deny', 'tool', $2, $3, 10)",
        tenant,
        f"{plugin}/send_email",
        json.dumps({"tier": {"lt": "teams"}}),
    )
    await client.nc.publish(
        subjects.REGISTRY_CHANGED, RegistryChanged(plugin_id=plugin, reason="rule").model_dump_json().encode()
    )

    seen: list[SelectReply] = []
    ours: dict[str, Any] = {"filters": {"plugins": [plugin]}}  # other tests' shared tools have a send_email too

    async def hidden() -> bool:
        asked = await client.select(query="email my boss", tenant_id=tenant, tier="free", k=5, dry_run=True, **ours)
        seen.append(asked)
        return "send_email" not in [t.name for t in seen[-1].tools]

    assert await eventually(hidden), seen[-1].model_dump_json(include={"tools", "degraded", "candidate_counts"})
    teams = await client.select(query="email my boss", tenant_id=tenant, tier="teams", k=5, dry_run=True, **ours)
    assert teams.tools[0].name == "send_email"
