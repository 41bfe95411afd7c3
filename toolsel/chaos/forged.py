"""Forged broadcasts: an agent publishes what only the learner or the indexer may (new posteriors, new usage
vectors, a registry change, a tool's state). The NATS server must refuse each one, and the answers must not
change."""

import asyncio
from typing import Any

import nats
from pydantic import BaseModel

from toolsel.chaos.figures import answer, changed
from toolsel.chaos.stage import QUERIES, Stage
from toolsel.contracts import (
    PosteriorsUpdated,
    PosteriorUpdate,
    RegistryChanged,
    ToolState,
    ToolStateChanged,
    UsageUpdated,
    subjects,
)
from toolsel.stack import AGENT
from toolsel.waiting import eventually

NAME = "get_weather"
REFUSAL_S = 30.0
"""How long the server's refusals may take to arrive."""
PROPAGATION_S = 1.0
"""What a selector would have taken in by then, had a forgery got through."""


def forgeries(tenant: str, plugin: str, context_key: str) -> dict[str, BaseModel]:
    """Each broadcast an agent might forge, aimed at ``tenant``'s tool: a posterior far above any learnt one, a
    usage version from the future, a registry change, a quarantine."""
    return {
        subjects.POSTERIORS_UPDATED: PosteriorsUpdated(
            updates=[
                PosteriorUpdate(
                    plugin_id=plugin, name=NAME, tenant_id=tenant, context_key=context_key, alpha=1e9, beta=1
                )
            ]
        ),
        subjects.USAGE_UPDATED: UsageUpdated(version=2**31, tools=1),
        subjects.REGISTRY_CHANGED: RegistryChanged(plugin_id=plugin, reason="forged", changed=[NAME]),
        subjects.TOOL_STATE_CHANGED: ToolStateChanged(plugin_id=plugin, name=NAME, state=ToolState.QUARANTINED),
    }


async def forged(stage: Stage, repeats: int) -> dict[str, Any]:
    if stage.stack.nats is None:
        raise RuntimeError("forging needs the stack's own NATS server (its agent user)")
    tenant = stage.name("forged")
    await stage.sync_catalog(tenant, tenant)
    context_key = (await stage.dry_run(tenant, QUERIES[0])).context_key
    before = {q: answer(await stage.dry_run(tenant, q)) for q in QUERIES}
    refusals: list[str] = []

    async def on_error(error: Exception) -> None:
        if "permissions violation" in str(error).lower():
            refusals.append(str(error))

    agent = await nats.connect(stage.stack.nats.login(AGENT), error_cb=on_error, allow_reconnect=False)
    messages = forgeries(tenant, tenant, context_key)
    try:
        for _ in range(repeats):
            for subject, message in messages.items():
                await agent.publish(subject, message.model_dump_json().encode())
        await agent.flush()

        async def all_refused() -> bool:
            return len(refusals) >= repeats * len(messages)

        await eventually(all_refused, timeout_s=REFUSAL_S)
    finally:
        await agent.close()
    await asyncio.sleep(PROPAGATION_S)
    after = {q: answer(await stage.dry_run(tenant, q)) for q in QUERIES}
    attempts = repeats * len(messages)
    refused = min(len(refusals), attempts)
    return {
        "subjects": sorted(messages),
        "attempts": attempts,
        "refused": refused,
        "not_refused": attempts - refused,
        "answers_changed": len(changed(before, after)),
    }
