"""Tenancy under attack: a spy tenant's own identity against a victim tenant's, with what any agent holds (its
own credentials, its own scope) and, for the id reuse and msg-id claim, the victim's selection ids handed over
as if they had leaked. Each scenario counts what crossed to the victim; the targets are 0.

- eavesdrop: subscribe to every inbox pattern while the victim selects and the operator lists its tools;
- spoof: act for the victim by naming its tenant in selections, dry runs, feedback and syncs;
- id reuse: report failed calls and broken reviews on the victim's selections;
- msg-id claim: as soon as a victim's selection is answered, publish events whose JetStream de-duplication ids
  are that selection's id, so that its selection event would be dropped as a duplicate.
"""

import asyncio
from dataclasses import dataclass
from typing import Any
from uuid import UUID

import nats
from nats.aio.msg import Msg

from toolsel.chaos.figures import answer, changed
from toolsel.chaos.fuzz import dead_letters
from toolsel.chaos.stage import QUERIES, TOOLS, Stage
from toolsel.chaos.tenants import learnt_tools
from toolsel.client import ToolselClient, ToolselError
from toolsel.contracts import (
    FeedbackEvent,
    OutcomeEvent,
    PluginSync,
    ReviewEvent,
    SelectReply,
    ToolCall,
    ToolQuery,
    ToolReview,
    ToolSpec,
    Verdict,
    subjects,
)
from toolsel.contracts.identity import INBOX
from toolsel.store import events
from toolsel.waiting import eventually

SETTLE_S = 120.0
REFUSAL_S = 30.0
LISTEN_S = 1.0
"""How long the spy listens after the victim's last reply."""


@dataclass
class Pair:
    """A victim tenant with a catalog and an identity, a spy tenant with an identity; both connected."""

    victim: str
    spy_tenant: str
    victim_client: ToolselClient
    spy: ToolselClient
    spy_url: str

    async def close(self) -> None:
        for client in (self.victim_client, self.spy):
            await client.__aexit__(None, None, None)


async def _pair(stage: Stage, what: str) -> Pair:
    victim, spy = stage.name(f"{what}-victim"), stage.name(f"{what}-spy")
    await stage.sync_catalog(victim, victim)
    await stage.sync_catalog(spy, spy)
    spy_url = stage.identity(spy)
    victim_client = await ToolselClient(stage.identity(victim), timeout_s=30).__aenter__()
    spy_client = await ToolselClient(spy_url, timeout_s=30).__aenter__()
    return Pair(victim, spy, victim_client, spy_client, spy_url)


async def _answers(stage: Stage, tenant: str) -> dict[str, list[tuple[Any, ...]]]:
    return {query: answer(await stage.dry_run(tenant, query)) for query in QUERIES}


async def _crossed(stage: Stage, victim: str, before: dict[str, list[tuple[Any, ...]]]) -> dict[str, int]:
    """What changed for the victim: its answers, its tools with anything learnt, its tools still registered."""
    listed = await stage.client.list_tools(ToolQuery(plugin_id=victim, limit=100))
    answers = len(changed(before, await _answers(stage, victim)))
    learnt = len(await learnt_tools(stage, victim, victim))
    missing = len(TOOLS) - sum(t.tenant_id == victim for t in listed.tools)
    return {
        "victim_answers_changed": answers,
        "victim_tools_learnt": learnt,
        "victim_tools_lost": missing,
        "cross_tenant_changes": answers + learnt + missing,
    }


async def _selections(pair: Pair, count: int) -> list[SelectReply]:
    return [await pair.victim_client.select(query=QUERIES[i % len(QUERIES)], k=3) for i in range(count)]


async def eavesdrop(stage: Stage, selections: int) -> dict[str, Any]:
    pair = await _pair(stage, "eavesdrop")
    refusals: list[str] = []
    heard: list[bytes] = []

    async def on_error(error: Exception) -> None:
        if "permissions violation" in str(error).lower():
            refusals.append(str(error))

    async def keep(msg: Msg) -> None:
        heard.append(msg.data)

    victim_inbox = pair.victim_client.scope.inbox_prefix
    patterns = [">", f"{INBOX}.>", f"{INBOX}.t.>", f"{INBOX}.t.{pair.victim}.>", f"{victim_inbox}.>", f"{INBOX}.*"]
    listener = await nats.connect(pair.spy_url, error_cb=on_error, allow_reconnect=False)
    try:
        for pattern in patterns:
            await listener.subscribe(pattern, cb=keep)
        await listener.flush()
        await _selections(pair, selections)
        await stage.client.list_tools(ToolQuery(plugin_id=pair.victim))
        await asyncio.sleep(LISTEN_S)

        async def all_refused() -> bool:
            return len(refusals) >= len(patterns)

        await eventually(all_refused, timeout_s=REFUSAL_S)
    finally:
        await listener.close()
        await pair.close()
    return {
        "patterns": patterns,
        "subscriptions_refused": len(refusals),
        "victim_selections": selections,
        "replies_read": len(heard),
    }


async def _typed(call: Any) -> str:
    """``ok``, or the code of the typed error the request was refused with."""
    try:
        await call
    except ToolselError as refused:
        return refused.detail.code.value
    return "ok"


async def spoof(stage: Stage, attempts: int) -> dict[str, Any]:
    pair = await _pair(stage, "spoof")
    before = await _answers(stage, pair.victim)
    victim, spy = pair.victim, pair.spy
    name = next(iter(TOOLS))
    codes: list[str] = []
    feedback: list[FeedbackEvent] = []
    try:
        async with dead_letters(stage) as letters:
            for i in range(attempts):
                query = QUERIES[i % len(QUERIES)]
                codes.append(await _typed(spy.select(query=query, tenant_id=victim, k=3)))
                codes.append(await _typed(spy.select(query=query, tenant_id=victim, k=3, dry_run=True)))
                takeover = PluginSync(
                    plugin_id=victim,
                    plugin_version=f"9.{i}.0",
                    tenant_id=pair.spy_tenant if i % 2 else victim,
                    tools=[ToolSpec(name=name, description="hijacked")] if i % 3 else [],
                )
                codes.append(await _typed(spy.sync(takeover)))
                feedback.append(FeedbackEvent(plugin_id=victim, name=name, tenant_id=victim, rating=0.0))
            await spy.report(feedback)
            await stage.settle(subjects.learner_durable("feedback"), SETTLE_S)
            await letters.quiet()
            sent = {str(e.event_id) for e in feedback}
            refused_feedback = sum(
                any(event_id in body.decode(errors="replace") for event_id in sent)
                for body, _ in letters.letters.get("feedback", [])
            )
        crossed = await _crossed(stage, victim, before)
    finally:
        await pair.close()
    requests = len(codes)
    return {
        "requests": requests,
        "requests_refused": sum(code in ("forbidden", "unauthorized") for code in codes),
        "requests_accepted": codes.count("ok"),
        "feedback": len(feedback),
        "feedback_refused": refused_feedback,
        **crossed,
    }


async def id_reuse(stage: Stage, outcomes: int, selections: int) -> dict[str, Any]:
    pair = await _pair(stage, "reuse")
    victim = pair.victim
    try:
        replies = await _selections(pair, selections)
        before = await _answers(stage, victim)
        hostile: list[OutcomeEvent | ReviewEvent] = []
        for i in range(outcomes):
            reply = replies[i % len(replies)]
            tools = [(t.plugin_id, t.name) for t in reply.tools]
            calls = [ToolCall(plugin_id=p, name=n, success=False, error="spy") for p, n in tools]
            hostile.append(OutcomeEvent(selection_id=reply.selection_id, calls=calls))
            reviews = [ToolReview(plugin_id=p, name=n, verdict=Verdict.BROKEN) for p, n in tools]
            hostile.append(ReviewEvent(selection_id=reply.selection_id, reviews=reviews))
        async with dead_letters(stage) as letters:
            await pair.spy.report(hostile)
            for kind in ("outcome", "review"):
                await stage.settle(subjects.learner_durable(kind), SETTLE_S)
            await letters.quiet()
            ids = {str(e.event_id) for e in hostile}
            refused = sum(
                "another identity" in reason and any(i in body.decode(errors="replace") for i in ids)
                for kind in ("outcome", "review")
                for body, reason in letters.letters.get(kind, [])
            )
        crossed = await _crossed(stage, victim, before)
    finally:
        await pair.close()
    return {"victim_selections": len(replies), "hostile_events": len(hostile), "refused": refused, **crossed}


async def msg_id_claim(stage: Stage, selections: int) -> dict[str, Any]:
    pair = await _pair(stage, "claim")
    js = pair.spy.nc.jetstream()
    subject = pair.spy.subject(subjects.OUTCOME_ROOT)
    ids: list[UUID] = []
    claims = 0
    try:
        for i in range(selections):
            reply = await pair.victim_client.select(query=QUERIES[i % len(QUERIES)], k=3)
            ids.append(reply.selection_id)
            body = OutcomeEvent(selection_id=reply.selection_id).model_dump_json().encode()
            sent = [str(reply.selection_id), f"selection:{reply.selection_id}", f"selection.{reply.selection_id}"]
            await asyncio.gather(*(js.publish(subject, body, headers={"Nats-Msg-Id": claim}) for claim in sent))
            claims += len(sent)
        await stage.settle(subjects.learner_durable("selection"), SETTLE_S)

        async def all_stored() -> bool:
            return len(await events.selection_keys(stage.pool, ids)) == len(ids)

        await eventually(all_stored, timeout_s=SETTLE_S)
        stored = len(await events.selection_keys(stage.pool, ids))
    finally:
        await pair.close()
    return {"victim_selections": len(ids), "claims": claims, "stored": stored, "suppressed": len(ids) - stored}
