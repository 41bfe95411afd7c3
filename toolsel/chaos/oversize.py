"""Oversize: tools whose schemas are each near the largest a sync accepts, so that selecting all of them makes a
reply far over what one NATS message carries. Every request must still be answered (cut to fit, saying so), none
may time out; and a schema over the limit must be refused at sync with a typed error."""

import json
import time
from typing import Any

from toolsel.chaos.stage import Stage
from toolsel.client import ToolselError
from toolsel.contracts import SelectReply, SelectRequest, SyncReport, subjects
from toolsel.contracts.registry import MAX_SCHEMA_BYTES
from toolsel.errors import Timeout
from toolsel.waiting import eventually

PLUGINS = 3
TOOLS_EACH = 8
"""Tools per plugin (a sync is one message too): 24 schemas near the limit, about 1.5 MB, over NATS's 1 MB."""
SCHEMA_FILL = MAX_SCHEMA_BYTES - 1024
"""Characters of description in each schema: just under the limit once the rest of the schema is counted."""
SELECT_TIMEOUT_S = 10.0
QUERY = "convert this document"


def _tool(n: int, fill: int) -> dict[str, Any]:
    return {
        "name": f"bulky_{n}",
        "description": f"Bulky tool number {n}: convert a document from one format to another.",
        "example_queries": [QUERY],
        "parameters": {"type": "object", "properties": {"text": {"type": "string", "description": "x" * fill}}},
    }


def _sync(plugin: str, tenant: str, tools: list[dict[str, Any]]) -> bytes:
    return json.dumps({"plugin_id": plugin, "plugin_version": "1.0.0", "tenant_id": tenant, "tools": tools}).encode()


async def oversize(stage: Stage, requests: int) -> dict[str, Any]:
    tenant = stage.name("oversize")
    plugins = [stage.name(f"oversize-{p}") for p in range(PLUGINS)]
    refusal = ""
    try:
        await stage.client.request(subjects.SYNC, _sync(plugins[0], tenant, [_tool(0, MAX_SCHEMA_BYTES)]), SyncReport)
    except ToolselError as error:
        refusal = str(error)
    for p, plugin in enumerate(plugins):
        tools = [_tool(p * TOOLS_EACH + n, SCHEMA_FILL) for n in range(TOOLS_EACH)]
        await stage.client.request(subjects.SYNC, _sync(plugin, tenant, tools), SyncReport, timeout_s=120)

    k = PLUGINS * TOOLS_EACH

    async def visible() -> bool:  # every plugin's tools in the selectors' catalog
        return (await stage.dry_run(tenant, QUERY, plugins=plugins)).candidate_counts.get("filtered") == k

    if not await eventually(visible, timeout_s=60):
        raise RuntimeError(f"the selectors did not show the {k} bulky tools within 60 s")
    body = SelectRequest(query=QUERY, tenant_id=tenant, k=k).model_dump_json().encode()
    answered = timeouts = 0
    cuts = []
    started = time.monotonic()
    for _ in range(requests):
        try:
            reply = await stage.client.request(subjects.SELECT, body, SelectReply, timeout_s=SELECT_TIMEOUT_S)
        except Timeout:
            timeouts += 1
            continue
        answered += 1
        if reply.cut is not None:
            cuts.append(reply.cut)
    return {
        "tools": k,
        "requests": requests,
        "answered": answered,
        "timeouts": timeouts,
        "cut": len(cuts),
        "full_reply_bytes": max((c.full_bytes for c in cuts), default=None),
        "limit_bytes": cuts[0].limit_bytes if cuts else None,
        "schemas_summarised": max((len(c.schemas_summarised) for c in cuts), default=0),
        "tools_dropped": max((len(c.tools_dropped) for c in cuts), default=0),
        "oversized_schema_refused": refusal,
        "seconds": round(time.monotonic() - started, 1),
    }
