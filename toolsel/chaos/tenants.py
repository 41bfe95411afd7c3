"""Tenants: two tenants with the same catalog under their own plugins, and the same catalog once more shared with
every tenant. One streams selections, outcomes, reviews and feedback, some of them naming the other's tools, and
fails and rates down the shared tools it is offered; the other's answers, and what is stored about its tools and
about the shared tools for it, must not change. The streaming tenant's own answers must (else nothing was
tested)."""

from typing import Any

from toolsel.chaos.figures import answer, changed
from toolsel.chaos.stage import LEARNER_KINDS, QUERIES, TOOLS, Stage, durable
from toolsel.contracts import (
    SHARED_TENANT,
    FeedbackEvent,
    OutcomeEvent,
    ReviewEvent,
    ToolCall,
    ToolReview,
    Verdict,
)
from toolsel.store import catalog, readmodels
from toolsel.waiting import eventually

SETTLE_S = 120.0
LEARN_S = 60.0
"""How long the streaming tenant's answers may take to move."""


async def _answers(stage: Stage, tenant: str) -> dict[str, list[tuple[Any, ...]]]:
    return {query: answer(await stage.dry_run(tenant, query)) for query in QUERIES}


async def _stream(stage: Stage, tenant: str, plugin: str, other: str, shared: str, rounds: int) -> int:
    """``rounds`` of select, outcome, review and feedback per query as ``tenant``; each event also names the
    ``other`` plugin's tools, and each fails and rates down the ``shared`` plugin's tools it was offered. Returns
    how many events were sent."""
    sent = 0
    for _ in range(rounds):
        for query in QUERIES:
            reply = await stage.client.select(query=query, tenant_id=tenant, k=3)
            first, second = reply.tools[0].name, reply.tools[1].name
            offered_shared = [t.name for t in reply.tools if t.plugin_id == shared]
            calls = [
                ToolCall(plugin_id=plugin, name=first, success=True),
                ToolCall(plugin_id=plugin, name=second, success=False, error="timeout"),
                ToolCall(plugin_id=other, name=first, success=False, error="timeout"),
                *(ToolCall(plugin_id=shared, name=n, success=False, error="timeout") for n in offered_shared),
            ]
            reviews = [
                ToolReview(plugin_id=plugin, name=first, verdict=Verdict.PERFECT),
                ToolReview(plugin_id=other, name=second, verdict=Verdict.UNRELATED),
            ]
            await stage.client.report(
                [
                    OutcomeEvent(selection_id=reply.selection_id, calls=calls),
                    ReviewEvent(selection_id=reply.selection_id, reviews=reviews),
                    FeedbackEvent(plugin_id=plugin, name=first, tenant_id=tenant, rating=1.0),
                    FeedbackEvent(plugin_id=other, name=first, tenant_id=tenant, rating=0.0),
                    FeedbackEvent(plugin_id=shared, name=first, tenant_id=tenant, rating=0.0),
                ]
            )
            sent += 6
    return sent


async def learnt_tools(stage: Stage, plugin: str, tenant: str) -> list[str]:
    """The plugin's tools with anything learnt for ``tenant``: calls, ratings or a posterior."""
    learnt = {r["key"] for r in await catalog.posteriors(stage.pool) if r["tenant_id"] == tenant}
    touched = []
    for name in TOOLS:
        health = await readmodels.tool_health(stage.pool, plugin, name)
        mine = [row for row in health if row["tenant_id"] == tenant]
        if f"{plugin}/{name}" in learnt or any(row["calls"] or row["ratings"] for row in mine):
            touched.append(name)
    return touched


async def tenants(stage: Stage, rounds: int) -> dict[str, Any]:
    streaming, quiet, shared = stage.name("tenant-a"), stage.name("tenant-b"), stage.name("shared")
    await stage.sync_catalog(streaming, streaming)
    await stage.sync_catalog(quiet, quiet)
    await stage.sync_catalog(SHARED_TENANT, shared, select_as=quiet)
    try:
        quiet_before, streaming_before = await _answers(stage, quiet), await _answers(stage, streaming)
        sent = await _stream(stage, streaming, streaming, quiet, shared, rounds)
        stuck = sum([await stage.settle(durable(kind), SETTLE_S) for kind in LEARNER_KINDS])

        async def learnt() -> list[str]:
            return changed(streaming_before, await _answers(stage, streaming))

        moved = await eventually(learnt, timeout_s=LEARN_S, every_s=0.5)
        quiet_changed = changed(quiet_before, await _answers(stage, quiet))
        touched = await learnt_tools(stage, quiet, quiet)
        shared_touched = await learnt_tools(stage, shared, quiet)
        shared_learnt = await learnt_tools(stage, shared, streaming)
    finally:  # shared tools are offered to every tenant: leave none behind for the scenarios that follow
        await stage.client.remove_plugin(shared)
    return {
        "events_sent": sent,
        "stuck": stuck,
        "questions": len(QUERIES),
        "streaming_tenant_answers_changed": len(moved),
        "streaming_tenant_shared_tools_learnt": len(shared_learnt),
        "other_tenant_answers_changed": len(quiet_changed),
        "other_tenant_tools_touched": len(touched),
        "other_tenant_shared_tools_touched": len(shared_touched),
        "cross_tenant_changes": len(quiet_changed) + len(touched) + len(shared_touched),
    }
