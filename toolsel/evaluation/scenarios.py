"""The online scenarios against a running stack: a plain stream, a tool that fails then recovers, a tool added
mid-stream, and two tenants sharing one catalog (one of A's tools failing for A). Each gives the held-out curve
and what it measured."""

import asyncio
import os
import statistics
import time
from asyncio.subprocess import PIPE, STDOUT
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from toolsel.client import ToolselClient
from toolsel.contracts import SHARED_TENANT
from toolsel.evaluation import plan
from toolsel.evaluation.dataset import BenchSet, Query, Tool
from toolsel.evaluation.online import STREAM_K, Point, Streamed, held_out_rankings, learn, score_point
from toolsel.evaluation.plan import Event, Sighting
from toolsel.evaluation.ranking import BenchCatalog, rank, sync_catalog
from toolsel.render import console
from toolsel.stack import TEMPORARY_STACK_START_S, TOOLSEL_COMMAND, Stack
from toolsel.tuning.card import ModelCard, read_card

SHARE_SAMPLE = 20
"""Distinct queries per candidate tool ranked to measure how often it is offered before the change."""
DRIFT_AT, RECOVER_AT, ADD_AT = 1 / 3, 2 / 3, 1 / 3
"""Default event indexes of the changes, as fractions of the stream."""
DRIFT_LEAVE_WITHIN = 30
NEW_TOOL_WITHIN = 50
"""Targets: a failing tool leaves the offered top K within this many of its events; a new relevant tool reaches
the top 3 within this many of its queries."""
DRIFT_FAILING_EVENTS = 2 * DRIFT_LEAVE_WITHIN
"""By default a drifting tool recovers after this many of its own events have failed (twice the target, so that
leaving within it can be seen), when the stream is long enough."""
QUARANTINE_ENV = {
    "TOOLSEL_QUARANTINE_RELEASE_AFTER_S": "15",
    "TOOLSEL_QUARANTINE_RELEASE_MAX_S": "120",
    "TOOLSEL_QUARANTINE_CHECK_INTERVAL_S": "1",
}
"""Drift on its own stack: a quarantined tool goes on probation after seconds (doubling while it keeps failing,
at most two minutes), not an hour to a day, so that it can come back within the run once it recovers."""


@dataclass(frozen=True)
class Stage:
    """One online run: the stack, the set, the held-out slice, the stream and how to measure."""

    client: ToolselClient
    bench: BenchSet
    holdout: list[Query]
    queries: list[Query]
    every: int
    seed: int
    settle_s: float
    run: str
    advance: Callable[[int], None] = lambda n: None
    stack: Stack | None = None
    """The evaluation's own stack (None on configured servers): the tune scenario restarts its services."""

    async def catalog(
        self, tools: Sequence[Tool], suffix: str, tenant: str, select_as: str | None = None
    ) -> BenchCatalog:
        """Sync ``tools`` as plugins ``eval-<run>-<suffix>-<i>`` of ``tenant`` and wait until they are served."""
        return await sync_catalog(self.client, tools, f"eval-{self.run}-{suffix}", tenant, select_as=select_as)

    async def learn(
        self,
        catalog: BenchCatalog,
        events: Sequence[Event],
        changes: Mapping[int, Callable[[BenchCatalog], Awaitable[BenchCatalog]]] | None = None,
        paced: Collection[int] = (),
    ) -> Streamed:
        """Stream ``events`` over ``catalog``, measuring the held-out slice as this stage says (``online.learn``)."""
        return await learn(
            self.client,
            catalog,
            self.holdout,
            events,
            every=self.every,
            seed=self.seed,
            settle_s=self.settle_s,
            changes=changes,
            paced=paced,
            advance=self.advance,
        )


@dataclass(frozen=True)
class Outcome:
    """A scenario's held-out curve, what it measured (JSON), event marks for the plot and a tracked tool."""

    curve: list[Point]
    details: dict[str, Any]
    marks: dict[str, int] = field(default_factory=dict)
    sightings: list[Sighting] = field(default_factory=list)
    discovery: dict[str, Any] = field(default_factory=dict)
    """What the stream could teach (``toolsel.evaluation.discovery``)."""


async def stream(stage: Stage) -> Outcome:
    """Today's stream: every event's relevant tools work."""
    catalog = await stage.catalog(stage.bench.tools, "online", f"eval-{stage.run}")
    streamed = await stage.learn(catalog, [Event(q) for q in stage.queries])
    return Outcome(streamed.curve, {}, discovery=streamed.discovery)


async def _choose(stage: Stage, catalog: BenchCatalog, before: Sequence[Query]) -> tuple[str, dict[str, float]]:
    """The seed's pick among the tools most often relevant before the change that the selector already offers."""
    candidates = plan.frequent_tools(before)
    shares: dict[str, float] = {}
    for name in candidates:
        sample = plan.queries_of(before, name)[:SHARE_SAMPLE]
        rankings = await rank(
            stage.client, catalog, sample, retrieval="hybrid", rerank=True, k=STREAM_K, seed=stage.seed
        )
        shares[name] = sum(name in r for r in rankings) / len(sample)
    return plan.pick_tool(candidates, shares, stage.seed), shares


async def drift(stage: Stage, drift_at: int | None, recover_at: int | None, stack_env: dict[str, str]) -> Outcome:
    """A relevant, frequently used tool fails from ``drift_at`` until ``recover_at``: how soon it leaves the top K
    offered for its queries, and how soon after recovery it is back."""
    n = len(stage.queries)
    start = plan.default_at(n, DRIFT_AT, drift_at)
    plan.check_window(n, start)
    catalog = await stage.catalog(stage.bench.tools, "online", f"eval-{stage.run}")
    tool, shares = await _choose(stage, catalog, stage.queries[:start])
    end = recover_at
    if end is None:
        fallback = plan.default_at(n, RECOVER_AT, None)
        end = plan.recovery_at(stage.queries, tool, start, DRIFT_FAILING_EVENTS, max(fallback, start + 1))
    plan.check_window(n, start, end)
    events = plan.drift_events(stage.queries, tool, start, end)
    console.print(f"drift: calls to [bold]{tool}[/] fail from event {start} until event {end}")
    streamed = await stage.learn(catalog, events, paced=frozenset(plan.events_of(events, tool, start, n)))
    before = plan.track(events, streamed.offered, tool, 0, start)
    failing, after = (plan.track(events, streamed.offered, tool, a, b) for a, b in ((start, end), (end, n)))
    left = plan.events_until_gone(failing)
    back = plan.events_until_offered(after)
    details = {
        "tool": tool,
        "candidates_offered_share": shares,
        "drift_at": start,
        "recover_at": end,
        "k": STREAM_K,
        "agent": "from drift_at until recover_at its calls fail (the agent then calls the next relevant tool "
        "offered) and its reviews say broken",
        "measured_on": "from drift_at on, every event of a query it is relevant to (offered_share.before says how "
        "often it was offered for them before); left: the event from which it was offered in at most "
        f"{plan.RETRY_SHARE:.0%} of its events until recovery (retries on probation or exploration); back: the "
        "first event after recovery where it was offered",
        "paced": "before each of these events the stream waits until the learner has dealt with every event sent "
        "so far, so that the count is of the tool's own events, not of the learner's lag behind a stream faster "
        "than any agent",
        "tool_events": {"before": len(before), "failing": len(failing), "after": len(after)},
        "offered_share": {
            "before": plan.offered_share(before),
            "failing": plan.offered_share(failing),
            "after": plan.offered_share(after),
        },
        "events_until_left_top_k": left,
        "events_until_back_in_top_k": back,
        "targets": {"left_within": DRIFT_LEAVE_WITHIN, "comes_back": True},
        "met": {"left": left is not None and left <= DRIFT_LEAVE_WITHIN, "came_back": back is not None},
        "quarantine": {
            "stack_env": {k: v for k, v in stack_env.items() if k in QUARANTINE_ENV},
            "note": "on its own stack the eval shortens the quarantine release (a quarantined tool goes on probation "
            "after seconds) so that a recovered tool can come back within the run; on configured servers their "
            "own settings apply",
        },
    }
    marks = {"drift": start, "recovery": end}
    return Outcome(streamed.curve, details, marks, [*before, *failing, *after], streamed.discovery)


async def new_tool(stage: Stage, add_at: int | None) -> Outcome:
    """A copy of a relevant, frequently used tool is synced at ``add_at`` and replaces it for its queries: how many
    of its queries until the new one is in the top 3 offered."""
    n = len(stage.queries)
    start = plan.default_at(n, ADD_AT, add_at)
    plan.check_window(n, start)
    tenant = f"eval-{stage.run}"
    catalog = await stage.catalog(stage.bench.tools, "online", tenant)
    original, shares = await _choose(stage, catalog, stage.queries[:start])
    copy = plan.alternative_tool(
        next(t for t in stage.bench.tools if t.name == original), {t.name for t in stage.bench.tools}
    )
    events = plan.new_tool_events(stage.queries, original, copy.name, start)

    async def add(current: BenchCatalog) -> BenchCatalog:
        return current.joined(await stage.catalog([copy], "new", tenant))

    console.print(f"new tool: [bold]{copy.name}[/] synced at event {start}, replacing {original} for its queries")
    streamed = await stage.learn(catalog, events, changes={start: add})
    sightings = plan.track(events, streamed.offered, copy.name, start, n)
    top = plan.events_until_offered(sightings, plan.NEW_TOOL_TOP)
    details = {
        "original": original,
        "candidates_offered_share": shares,
        "new_tool": copy.name,
        "added_at": start,
        "description": f"the original's, prefixed {plan.ALTERNATIVE_PREFIX!r}",
        "relevance": "from added_at the new tool replaces the original in its queries' relevant set: the original "
        "is no longer called and is reviewed unrelated",
        "tool_events": len(sightings),
        "offered_share": plan.offered_share(sightings),
        "events_until_offered": plan.events_until_offered(sightings),
        f"events_until_top_{plan.NEW_TOOL_TOP}": top,
        "target": {f"top_{plan.NEW_TOOL_TOP}_within": NEW_TOOL_WITHIN},
        "met": top is not None and top <= NEW_TOOL_WITHIN,
    }
    return Outcome(streamed.curve, details, {"new tool": start}, sightings, streamed.discovery)


async def _remove(client: ToolselClient, catalog: BenchCatalog) -> None:
    """A shared catalog is seen by every tenant of the servers: its plugins are emptied when the run ends."""
    for plugin in catalog.plugins:
        await client.remove_plugin(plugin)


async def tenants(stage: Stage) -> Outcome:
    """Two tenants over one shared catalog; only A streams, and from a third of the way on one of its most used
    tools fails for A (its calls fail, its reviews say broken) until the end. B's held-out answers before and
    after must be the same tools in the same order: nothing A taught reaches B, its failures and the quarantine
    they bring included. A's curve is the learning."""
    a, b = f"eval-{stage.run}-a", f"eval-{stage.run}-b"
    n = len(stage.queries)
    start = plan.default_at(n, DRIFT_AT, None)
    plan.check_window(n, start)
    shared = await stage.catalog(stage.bench.tools, "shared", SHARED_TENANT, select_as=a)
    try:
        tool, _ = await _choose(stage, shared, stage.queries[:start])
        events = plan.drift_events(stage.queries, tool, start, n)
        console.print(f"tenants: calls to [bold]{tool}[/] fail for tenant A from event {start} on")
        seen_by_b = replace(shared, tenant_id=b)
        before = await held_out_rankings(stage.client, seen_by_b, stage.holdout, stage.seed)
        streamed = await stage.learn(shared, events, paced=frozenset(plan.events_of(events, tool, start, n)))
        after = await held_out_rankings(stage.client, seen_by_b, stage.holdout, stage.seed)
    finally:
        await _remove(stage.client, shared)
    changed = plan.ranking_changes([q.id for q in stage.holdout], before, after)
    failing = plan.track(events, streamed.offered, tool, start, n)
    details = {
        "catalog": "synced once as shared (tenant '*'); both tenants select from it, only tenant A streams",
        "tenant_a": a,
        "tenant_b": b,
        "a_failing_tool": tool,
        "a_failing_from": start,
        "a_failing_tool_events": len(failing),
        "a_events_until_failing_tool_left_top_k": plan.events_until_gone(failing),
        "b_held_out_answers_with_failing_tool": {
            "before": sum(tool in r for r in before),
            "after": sum(tool in r for r in after),
        },
        "b_held_out_queries": len(stage.holdout),
        "b_changed": len(changed),
        "b_changed_query_ids": changed[:20],
        "b_before": asdict(score_point(0, before, stage.holdout)),
        "b_after": asdict(score_point(len(stage.queries), after, stage.holdout)),
        "target": {"b_changed": 0},
        "met": not changed,
    }
    return Outcome(streamed.curve, details, {"A's tool fails": start}, failing, streamed.discovery)


LATENCY_QUERIES = 50
"""Held-out queries selected (dry run) per latency round: idle before the tune, and again and again while it runs."""


async def _latencies(stage: Stage, catalog: BenchCatalog) -> list[float]:
    """Milliseconds of each dry-run selection of a round of held-out queries, as the client waits for it."""
    timings = []
    for query in stage.holdout[:LATENCY_QUERIES]:
        started = time.perf_counter()
        await stage.client.select(query=query.text, tenant_id=catalog.tenant_id, k=STREAM_K, dry_run=True)
        timings.append(1000 * (time.perf_counter() - started))
    return timings


async def _tune_beside(stage: Stage, catalog: BenchCatalog, stack: Stack) -> tuple[str, list[float]]:
    """``toolsel tune`` beside the serving stack (so it trains and compares, and leaves the switch to us), with
    the selection latencies measured while it runs; its output."""
    tune = await asyncio.create_subprocess_exec(
        *TOOLSEL_COMMAND, "tune", env={**stack.service_env(), "COLUMNS": "200"}, stdout=PIPE, stderr=STDOUT
    )
    output = asyncio.ensure_future(tune.communicate())
    busy: list[float] = []
    while not output.done():
        busy += await _latencies(stage, catalog)
    text = (await output)[0].decode(errors="replace")
    if tune.returncode != 0:
        raise RuntimeError(f"toolsel tune failed ({tune.returncode}): {text[-2000:]}")
    return text, busy


async def _switch(stack: Stack, card: ModelCard, model_dir: Path) -> None:
    """Stop the services, move the store to the tuned model (``toolsel indexer --switch-model``) and start them
    with it, as docs/operators.md tells an operator to."""
    chosen = {"TOOLSEL_EMBEDDING_MODEL": card.name, "TOOLSEL_MODEL_DIR": str(model_dir)}
    stack.stop_services()
    switch = await asyncio.create_subprocess_exec(
        *TOOLSEL_COMMAND, "indexer", "--switch-model", env={**stack.service_env(), **chosen}, stdout=PIPE, stderr=STDOUT
    )
    said = (await switch.communicate())[0].decode(errors="replace")
    if switch.returncode != 0:
        raise RuntimeError(f"the switch failed: {said[-2000:]}")
    os.environ.update(chosen)  # the services' environment (the evaluation restores its own when it ends)
    stack.start_services()
    await stack.answering(timeout_s=TEMPORARY_STACK_START_S)


async def tune(stage: Stage) -> Outcome:
    """A catalog shared with every tenant, one tenant streams, then ``toolsel tune`` runs beside the serving stack:
    the held-out queries before and after it (the switch, when the candidate wins, drops what usage memory learnt
    from query vectors, as it does for an operator), and the selection latency idle and while it trains."""
    if stage.stack is None:
        raise ValueError("the tune scenario restarts the services with the tuned model: it needs its own stack")
    tenant = f"eval-{stage.run}"
    shared = await stage.catalog(stage.bench.tools, "shared", SHARED_TENANT, select_as=tenant)
    try:
        streamed = await stage.learn(shared, [Event(q) for q in stage.queries])
        n = len(stage.queries)
        before = score_point(n, await held_out_rankings(stage.client, shared, stage.holdout, stage.seed), stage.holdout)
        idle = await _latencies(stage, shared)
        console.print(f"tune: {n} events streamed; tuning beside the stack")
        said, busy = await _tune_beside(stage, shared, stage.stack)
        candidates = sorted((stage.stack.settings.home / "tuned").glob("*"))
        card = read_card(candidates[-1]) if candidates else None
        if card is not None:
            await _switch(stage.stack, card, candidates[-1])
        after = score_point(n, await held_out_rankings(stage.client, shared, stage.holdout, stage.seed), stage.holdout)
    finally:
        await _remove(stage.client, shared)
    details = {
        "catalog": "synced once as shared (tenant '*'); one tenant streams",
        "tune_output": said.splitlines()[-12:],
        "switched": card is not None,
        "model": card.model_dump(include={"name", "training", "evaluation", "sources"}) if card else None,
        "before": asdict(before),
        "after": asdict(after),
        "select_ms_p50": {"idle": statistics.median(idle), "while_tuning": statistics.median(busy)},
        "select_samples": {"idle": len(idle), "while_tuning": len(busy)},
        "targets": {"held_out_recall_at_5": 0.95, "held_out_ndcg_at_10": 0.90, "p50_ratio": 2.0},
    }
    return Outcome([*streamed.curve, after], details, {"tune": n}, discovery=streamed.discovery)
