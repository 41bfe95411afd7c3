"""Outcomes into posteriors, quality counters, tool health and usage memory: a batch in one transaction,
deduplicated by event id, applied in event-id order (the order a rebuild replays them in).

Only calls to tools the selection offered, and that its tenant may see, count anywhere. A posterior is kept per
(tool, tenant, context) and discounted on each update; quality and health per (tool, tenant), so a shared tool
failing for one tenant is quarantined for that tenant alone; one actor's successes, and its failed calls, each
count at most ``learning_credits_per_actor`` times per tool. An outcome counts only when it comes from the
identity that made its selection (or the operator); another's is refused. What each row becomes is computed
here (pure); the store writes it.

What is stored is bounded per sender, so that one tenant cannot fill the store (one selection took 21.6 MB of 50
outcomes of 200 calls to made-up tools, each with 2,000 characters of error): an outcome keeps only the calls that
count (``offered_only``), each error cut to ``OutcomeRules.error_chars``, and one sender stores at most
``OutcomeRules.per_selection`` outcomes of one selection; past that the outcome is dead-lettered (``within``).
"""

from collections import Counter, defaultdict
from collections.abc import Container, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, NamedTuple, Protocol, TypeVar
from uuid import UUID

import asyncpg
from pydantic import TypeAdapter

from toolsel.contracts import SHARED_TENANT, OutcomeEvent, PosteriorUpdate, ToolState, ToolStateChanged, UsageUpdated
from toolsel.contracts.identity import Scope
from toolsel.services.learner.degradation import FRESH_SCORE, DegradationPolicy, Health, observe
from toolsel.services.learner.quality import LATENCY_BUCKETS, call_quality, latency_bucket, latency_percentile
from toolsel.services.learner.reward import Reward, discounted, rewards_by_key
from toolsel.services.learner.usage import POSITIVE, Embed, Example, UsageRules, embedded, remember
from toolsel.settings import Settings
from toolsel.store import events, learning
from toolsel.store.learning import CreditKey, PosteriorKey, QualityKey, Registered
from toolsel.tenancy import actor

POSTERIOR_LIST = TypeAdapter(list[PosteriorUpdate])
"""One validation of the whole list (in pydantic's core) instead of a model per row: this is the hot path."""


@dataclass(frozen=True)
class OutcomeRules:
    """How outcomes move what is learnt: the Beta prior, the reward model, forgetting, and the usage memory's rules
    (with the bound per actor, which reviews share); and how much of them is stored."""

    prior_alpha: float
    prior_beta: float
    not_called_penalty: float
    discount: float
    usage: UsageRules
    per_selection: int
    """Outcomes one sender stores per selection (``within``)."""
    error_chars: int
    """Characters of a call's error text stored (``cut_errors``)."""

    @classmethod
    def from_settings(cls, settings: Settings) -> "OutcomeRules":
        return cls(
            settings.prior_alpha,
            settings.prior_beta,
            settings.not_called_penalty,
            settings.posterior_discount,
            UsageRules.from_settings(settings),
            settings.outcomes_per_selection_max,
            settings.outcome_error_max_chars,
        )


@dataclass
class OutcomeResult:
    applied: list[UUID] = field(default_factory=list)
    duplicates: list[UUID] = field(default_factory=list)
    unknown_selection: list[UUID] = field(default_factory=list)
    refused: list[OutcomeEvent] = field(default_factory=list)
    """Outcomes of selections another identity made: counted nowhere, dead-lettered."""
    over_limit: list[OutcomeEvent] = field(default_factory=list)
    """Outcomes past their sender's bound on their selection (``within``): stored nowhere, dead-lettered."""
    posteriors: list[PosteriorUpdate] = field(default_factory=list)
    transitions: list[ToolStateChanged] = field(default_factory=list)
    usage: UsageUpdated | None = None


@dataclass
class Posterior:
    """A posterior as it stands, and what this batch added to its counters."""

    alpha: float
    beta: float
    last_success_at: datetime | None
    selections: int = 0
    successes: int = 0
    failures: int = 0


@dataclass(frozen=True)
class Observation:
    """One offered tool's reward in one outcome, with who asked and what."""

    key: PosteriorKey
    reward: Reward
    event_id: UUID
    occurred_at: datetime
    query: str
    selection_id: UUID


@dataclass
class Stepped:
    posteriors: dict[PosteriorKey, Posterior]
    examples: list[Example]
    """Positive usage examples: one per outcome and tool with a counted success."""


@dataclass
class _Calls:
    calls: int = 0
    successes: int = 0
    failures: int = 0
    rating_sum: float = 0.0
    rating_count: int = 0
    latency_sum_ms: float = 0.0
    latency_count: int = 0
    latency_hist: list[int] = field(default_factory=lambda: [0] * LATENCY_BUCKETS)
    last_success_at: datetime | None = None


class Identified(Protocol):
    """An event the store keeps once by its id."""

    @property
    def event_id(self) -> UUID: ...


Id = TypeVar("Id", bound=Identified)


def split_inserted(events: Sequence[Id], inserted: Container[UUID]) -> tuple[list[Id], list[Id]]:
    """``events`` the store took as new (``inserted``: their ids) and the others, each in order: a redelivered
    event is stored once, so only the new ones are applied."""
    return [e for e in events if e.event_id in inserted], [e for e in events if e.event_id not in inserted]


class Referring(Identified, Protocol):
    """An event about a stored selection: an outcome or a review."""

    @property
    def selection_id(self) -> UUID: ...

    @property
    def sender(self) -> Scope: ...


Ev = TypeVar("Ev", bound=Referring)


async def with_selections(
    pool: asyncpg.Pool, batch: Sequence[Ev]
) -> tuple[list[Ev], dict[UUID, Mapping[str, Any]], list[UUID], list[Ev]]:
    """The batch's distinct events (in event-id order) whose selection is stored and was made by their sender
    (or whose sender is the operator), those selections, the ids of the events whose selection is not stored
    yet (left out: the caller redelivers them), and the events about another identity's selections (refused)."""
    unique = sorted({e.event_id: e for e in batch}.values(), key=lambda e: e.event_id)
    selections = await events.selection_keys(pool, [e.selection_id for e in unique])
    stored = [e for e in unique if e.selection_id in selections]
    known = [e for e in stored if e.sender.owns(selections[e.selection_id]["owner"])]
    refused = [e for e in stored if not e.sender.owns(selections[e.selection_id]["owner"])]
    return known, selections, [e.event_id for e in unique if e.selection_id not in selections], refused


def not_owner(event: Referring) -> str:
    """Why an event about another identity's selection is refused."""
    return f"selection {event.selection_id} was made by another identity than {event.sender.token}"


Stored = tuple[UUID, UUID, str | None]
"""An outcome or review stored about a selection: its event id, the selection's id and its sender (None: stored
before senders were)."""


def within(batch: Sequence[Ev], stored: Iterable[Stored], limit: int) -> tuple[list[Ev], list[Ev]]:
    """The events to store, in order, and those past the bound: one sender stores at most ``limit`` events about
    one selection, counting those ``stored`` already. A copy of a stored event is kept (the store recognises it as
    a duplicate: counted once, never refused)."""
    counts = Counter((selection_id, sender) for _, selection_id, sender in stored)
    known = {event_id for event_id, _, _ in stored}
    kept: list[Ev] = []
    over: list[Ev] = []
    for event in batch:
        key = (event.selection_id, event.sender.token)
        if event.event_id in known:
            kept.append(event)
        elif counts[key] < limit:
            counts[key] += 1
            kept.append(event)
        else:
            over.append(event)
    return kept, over


async def bounded(conn: asyncpg.Connection, lock: int, batch: Sequence[Ev], limit: int) -> tuple[list[Ev], list[Ev]]:
    """``within`` the batch's selections as stored, held (``lock``: ``events.OUTCOMES_LOCK`` or ``REVIEWS_LOCK``)
    until commit, so that concurrent batches do not both take a selection's last place."""
    ids = sorted({e.selection_id for e in batch})
    await events.lock_selections(conn, lock, ids)
    return within(batch, await events.stored_about(conn, lock, ids), limit)


def past_limit(event: Referring, what: str, limit: int) -> str:
    """Why an event past its sender's bound on its selection is not stored."""
    return f"{event.sender.token} already stored {limit} {what} of selection {event.selection_id}: no more are kept"


def teachable(selection: Mapping[str, Any], tools: Mapping[str, Registered]) -> list[str]:
    """The selection's tools, in rank order, that exist and its tenant may see: the only ones it can teach."""
    tenant = selection["tenant_id"]
    return [k for k in selection["keys"] if k in tools and tools[k].tenant_id in (tenant, SHARED_TENANT)]


def taught_with(selection: Mapping[str, Any], key: str) -> str:
    """The query an offered tool learns from in this selection: the part of a compound query it was offered for
    (its own need, not the other tools' needs beside it), else the whole query."""
    need = next((n for k, n in zip(selection["keys"], selection["needs"], strict=True) if k == key), None)
    return need or str(selection["query"])


def offered_only(
    batch: Sequence[OutcomeEvent], selections: Mapping[UUID, Mapping[str, Any]], tools: Mapping[str, Registered]
) -> list[OutcomeEvent]:
    """The outcomes with only the calls that count: to tools their selection offered, visible to its tenant
    (a call to anything else counts nowhere: not in posteriors, quality or health)."""
    result = []
    for event in batch:
        offered = set(teachable(selections[event.selection_id], tools))
        calls = [c for c in event.calls if c.key in offered]
        result.append(event if len(calls) == len(event.calls) else event.model_copy(update={"calls": calls}))
    return result


def cut_errors(batch: Sequence[OutcomeEvent], chars: int) -> list[OutcomeEvent]:
    """The outcomes with each call's error text cut to ``chars`` characters (what is stored: no reader needs the
    whole of a 2,000-character error)."""
    result = []
    for event in batch:
        if all(c.error is None or len(c.error) <= chars for c in event.calls):
            result.append(event)
            continue
        calls = [
            c if c.error is None or len(c.error) <= chars else c.model_copy(update={"error": c.error[:chars]})
            for c in event.calls
        ]
        result.append(event.model_copy(update={"calls": calls}))
    return result


class Credits(NamedTuple):
    """Credits used per (tenant, actor, tool), one count for successful calls and one for failed ones."""

    successes: dict[CreditKey, int]
    failures: dict[CreditKey, int]


def capped_calls(
    batch: Sequence[OutcomeEvent],
    selections: Mapping[UUID, Mapping[str, Any]],
    ids: Mapping[str, int],
    used: Credits,
    usage: UsageRules,
) -> tuple[list[OutcomeEvent], Credits]:
    """The outcomes with only the calls that count: at most ``usage.credits_per_actor`` successful and as many
    failed calls per (tenant, actor and its window, tool); the rest of one actor's calls count nowhere (not in
    posteriors, quality or health). Both are bounded: ratings and latencies ride on calls, so one actor's unbounded
    successes (rated 0, they score as failures) took a tool to quarantine for its whole tenant. Returns them with
    the credits as they now stand."""
    credits = Credits(dict(used.successes), dict(used.failures))
    result = []
    for event in batch:
        row = selections[event.selection_id]
        tenant, who, limit = row["tenant_id"], actor(row, usage.credits_window_s), usage.credits_per_actor
        calls = [
            c
            for c in event.calls
            if c.key not in ids
            or spend(credits.successes if c.success else credits.failures, (tenant, who, ids[c.key]), 1, limit)
        ]
        result.append(event if len(calls) == len(event.calls) else event.model_copy(update={"calls": calls}))
    return result, credits


def credit_keys(
    batch: Sequence[OutcomeEvent],
    selections: Mapping[UUID, Mapping[str, Any]],
    ids: Mapping[str, int],
    success: bool,
    window_s: float,
) -> list[CreditKey]:
    """The (tenant, actor and its window, tool) of each successful (or failed) call to a registered tool."""
    return [
        (selections[e.selection_id]["tenant_id"], actor(selections[e.selection_id], window_s), ids[c.key])
        for e in batch
        for c in e.calls
        if c.success is success and c.key in ids
    ]


def observations(
    batch: Sequence[OutcomeEvent],
    selections: Mapping[UUID, Mapping[str, Any]],
    tools: Mapping[str, Registered],
    not_called_penalty: float,
) -> list[Observation]:
    """Each offered tool's reward, outcome by outcome in the given order (calls already ``offered_only``)."""
    result = []
    for event in batch:
        row = selections[event.selection_id]
        for reward in rewards_by_key(teachable(row, tools), event.calls, not_called_penalty):
            tool_id = tools[reward.tool_key].id
            result.append(
                Observation(
                    (tool_id, row["tenant_id"], row["context_key"]),
                    reward,
                    event.event_id,
                    event.occurred_at,
                    taught_with(row, reward.tool_key),
                    event.selection_id,
                )
            )
    return result


def spend(credits: dict[CreditKey, int], key: CreditKey, wanted: int, limit: int) -> int:
    """Take up to ``wanted`` of the ``limit`` credits an actor has on a tool, less those ``credits`` holds as used
    (updated); returns how many it took: how many of its lessons count. Outcomes' successful calls, their failed
    calls and reviews are each bounded so, in their own credit table."""
    taken = min(wanted, max(0, limit - credits.get(key, 0)))
    if taken:
        credits[key] = credits.get(key, 0) + taken
    return taken


def step(seen: Sequence[Observation], standing: Mapping[PosteriorKey, Posterior], rules: OutcomeRules) -> Stepped:
    """Apply observations in order (their calls already within their actors' credits: ``capped_calls``): a
    posterior with new evidence is discounted then moved; a success is a positive usage example."""
    posteriors = {key: replace(p) for key, p in standing.items()}
    examples: list[Example] = []
    for o in seen:
        p = posteriors[o.key]
        counted = o.reward.success
        if counted:
            if p.last_success_at is None or o.occurred_at > p.last_success_at:
                p.last_success_at = o.occurred_at
            tool_id, tenant, _ = o.key
            examples.append(Example(tool_id, rules.usage.scope(tenant), o.event_id, POSITIVE, o.query, o.selection_id))
        p.selections += 1
        p.successes += counted
        p.failures += o.reward.failure
        if counted or o.reward.beta:
            p.alpha = discounted(p.alpha, rules.prior_alpha, rules.discount, float(counted))
            p.beta = discounted(p.beta, rules.prior_beta, rules.discount, o.reward.beta)
    return Stepped(posteriors, examples)


def call_counters(
    batch: Sequence[OutcomeEvent], selections: Mapping[UUID, Mapping[str, Any]], ids: Mapping[str, int]
) -> dict[QualityKey, _Calls]:
    """Call counters per (tool, tenant of the selection) from the calls that count (``offered_only``)."""
    acc: dict[QualityKey, _Calls] = defaultdict(_Calls)
    for event in batch:
        tenant = selections[event.selection_id]["tenant_id"]
        for call in event.calls:
            tool_id = ids.get(call.key)
            if tool_id is None:
                continue
            c = acc[tool_id, tenant]
            c.calls += 1
            if call.success:
                c.successes += 1
                if c.last_success_at is None or event.occurred_at > c.last_success_at:
                    c.last_success_at = event.occurred_at
            else:
                c.failures += 1
            if call.rating is not None:
                c.rating_sum += call.rating
                c.rating_count += 1
            if call.latency_ms is not None:
                c.latency_sum_ms += call.latency_ms
                c.latency_count += 1
                c.latency_hist[latency_bucket(call.latency_ms)] += 1
    return acc


@dataclass
class Counted:
    """What ``add_counters`` did: the outcomes as they counted, the posteriors and quality rows as they now
    stand (locked until commit), and the usage examples to remember."""

    events: list[OutcomeEvent]
    selections: Mapping[UUID, Mapping[str, Any]]
    ids: dict[str, int]
    posteriors: list[PosteriorUpdate]
    standing: list[asyncpg.Record]
    examples: list[Example]


async def _posteriors(
    conn: asyncpg.Connection, seen: Sequence[Observation], rules: OutcomeRules
) -> tuple[list[asyncpg.Record], list[Example]]:
    """Lock the posteriors these observations touch, step them, write them back."""
    locked = await learning.lock_posteriors(conn, [o.key for o in seen], rules.prior_alpha, rules.prior_beta)
    standing = {k: Posterior(r["alpha"], r["beta"], r["last_success_at"]) for k, r in locked.items()}
    stepped = step(seen, standing, rules)
    rows = [
        (*key, p.alpha, p.beta, p.last_success_at, p.selections, p.successes, p.failures)
        for key, p in stepped.posteriors.items()
    ]
    return await learning.write_posteriors(conn, rows), stepped.examples


async def _lock_call_credits(
    conn: asyncpg.Connection,
    batch: Sequence[OutcomeEvent],
    selections: Mapping[UUID, Mapping[str, Any]],
    ids: Mapping[str, int],
    window_s: float,
) -> Credits:
    """The credits these calls may spend, locked until commit: failures' first, then successes' (``LEARNT_TABLES``
    order)."""
    failed = credit_keys(batch, selections, ids, False, window_s)
    succeeded = credit_keys(batch, selections, ids, True, window_s)
    failures = await learning.lock_credits(conn, learning.FAILURE_CREDITS, failed) if failed else {}
    successes = await learning.lock_credits(conn, learning.OUTCOME_CREDITS, succeeded) if succeeded else {}
    return Credits(successes, failures)


async def add_counters(
    conn: asyncpg.Connection,
    batch: Sequence[OutcomeEvent],
    selections: Mapping[UUID, Mapping[str, Any]],
    tools: Mapping[str, Registered],
    rules: OutcomeRules,
) -> Counted:
    """Add new outcomes, in the given order, to posteriors and quality counters (rows in key order: concurrent
    learners lock alike)."""
    offered = offered_only(batch, selections, tools)
    ids = {key: t.id for key, t in tools.items()}
    names = {v: k for k, v in ids.items()}
    used = await _lock_call_credits(conn, offered, selections, ids, rules.usage.credits_window_s)
    counting, credits = capped_calls(offered, selections, ids, used, rules.usage)
    await learning.write_credits(conn, learning.FAILURE_CREDITS, credits.failures, used.failures)
    await learning.write_credits(conn, learning.OUTCOME_CREDITS, credits.successes, used.successes)
    updated, examples = await _posteriors(
        conn, observations(counting, selections, tools, rules.not_called_penalty), rules
    )
    posteriors = POSTERIOR_LIST.validate_python(
        [
            {
                "plugin_id": names[u["tool_id"]].split("/", 1)[0],
                "name": names[u["tool_id"]].split("/", 1)[1],
                "tenant_id": u["tenant_id"],
                "context_key": u["context_key"],
                "alpha": u["alpha"],
                "beta": u["beta"],
                "last_success_at": u["last_success_at"],
            }
            for u in updated
        ]
    )
    quality = [
        (
            tool_id,
            tenant,
            c.calls,
            c.successes,
            c.failures,
            c.rating_sum,
            c.rating_count,
            c.latency_sum_ms,
            c.latency_count,
            "{" + ",".join(map(str, c.latency_hist)) + "}",
            c.last_success_at,
        )
        for (tool_id, tenant), c in sorted(call_counters(counting, selections, ids).items())
    ]
    return Counted(counting, selections, ids, posteriors, await learning.add_calls(conn, quality), examples)


def _health(row: Mapping[str, Any]) -> Health:
    score = row["rolling_score"]
    return Health(
        state=ToolState(row["state"]),
        score=FRESH_SCORE if score is None else score,
        degraded_since=row["degraded_since"],
        consecutive_degraded=row["consecutive_degraded"],
        probation_calls=row["probation_calls"],
    )


async def advance_health(
    conn: asyncpg.Connection, counted: Counted, policy: DegradationPolicy
) -> list[ToolStateChanged]:
    """Run the degradation state machine of each called tool, for the tenant whose selection it served, over
    this batch's calls, in order; store the result (and a quarantine entry when one tripped) and return the
    transitions to announce."""
    health = {(r["tool_id"], r["tenant_id"]): _health(r) for r in counted.standing}
    changed: set[QualityKey] = set()
    transitions: list[ToolStateChanged] = []
    quarantined: dict[QualityKey, str] = {}
    again: set[QualityKey] = set()
    for event in counted.events:
        tenant = counted.selections[event.selection_id]["tenant_id"]
        for call in event.calls:
            tool_id = counted.ids.get(call.key)
            if tool_id is None:
                continue
            key = (tool_id, tenant)
            on_probation = health[key].state == ToolState.PROBATION
            health[key], transition = observe(health[key], call_quality(call), event.occurred_at, policy)
            if transition is not None:
                changed.add(key)
                transitions.append(
                    ToolStateChanged(
                        plugin_id=call.plugin_id,
                        name=call.name,
                        tenant_id=tenant,
                        state=transition.state,
                        reason=transition.reason,
                    )
                )
                if transition.state == ToolState.QUARANTINED:
                    quarantined[key] = transition.reason
                    if on_probation:
                        again.add(key)
    rows = []
    for r in counted.standing:
        key = (r["tool_id"], r["tenant_id"])
        h = health[key]
        hist = r["latency_hist"]
        rows.append(
            (
                *key,
                h.score,
                h.state.value,
                h.degraded_since,
                h.consecutive_degraded,
                h.probation_calls,
                latency_percentile(hist, 0.5),
                latency_percentile(hist, 0.99),
                key in changed,
            )
        )
    await learning.update_health(conn, rows)
    await learning.quarantine(conn, quarantined, again)
    return transitions


def not_after(batch: Sequence[OutcomeEvent], now: datetime) -> list[OutcomeEvent]:
    """The outcomes as they can have happened: one dated after ``now`` is taken as happening now. A client's clock
    may run ahead, and a hostile one may date a success years ahead, which would hold its tool's recency at the
    top for as long (the last success is the latest date seen)."""
    return [e if e.occurred_at <= now else e.model_copy(update={"occurred_at": now}) for e in batch]


async def apply_outcomes(
    pool: asyncpg.Pool, batch: Sequence[OutcomeEvent], rules: OutcomeRules, policy: DegradationPolicy, embed: Embed
) -> OutcomeResult:
    """Store new outcomes and move posteriors, quality, tool health and usage memory, in one transaction.

    An outcome whose selection is not stored yet is left out (the caller redelivers it later: events may
    arrive out of order); one already stored is a duplicate and changes nothing; one past its sender's bound on
    the selection is not stored (``over_limit``). What is stored is what counts: the calls to offered tools, their
    errors cut. The queries that may teach (``taught_with`` a success on an offered tool) are embedded first, in
    one batch, outside the transaction; a model that fails whatever it is given fails the batch as transient
    (``usage.embedded``): nothing is stored.
    """
    result = OutcomeResult()
    known, selections, result.unknown_selection, result.refused = await with_selections(pool, batch)
    if not known:
        return result
    known = not_after(known, datetime.now(UTC))
    tools = await learning.registered(pool, [k for e in known for k in selections[e.selection_id]["keys"]])
    known = cut_errors(offered_only(known, selections, tools), rules.error_chars)
    queries = sorted({taught_with(selections[e.selection_id], c.key) for e in known for c in e.calls if c.success})
    vectors = await embedded(embed, queries)
    async with pool.acquire() as conn, conn.transaction():
        known, result.over_limit = await bounded(conn, events.OUTCOMES_LOCK, known, rules.per_selection)
        fresh, repeated = split_inserted(known, await events.insert_outcomes(conn, known))
        result.applied = [e.event_id for e in fresh]
        result.duplicates = [e.event_id for e in repeated]
        if not fresh:
            return result
        counted = await add_counters(conn, fresh, selections, tools, rules)
        await events.mark_applied(conn, [e.event_id for e in fresh])  # every lock its counters write under held
        result.posteriors = counted.posteriors
        result.transitions = await advance_health(conn, counted, policy)
        result.usage = await remember(conn, counted.examples, vectors, rules.usage)
    return result
