"""Training pairs from a deployment's own use (pure): what its selections' outcomes and reviews say about which
tool served which query, kept apart by tenant, with the most recent selections held back to judge a candidate on.

Tenancy. The model is shared by every tenant, so only what every tenant could have taught enters it: a pair's
tool must be one every tenant sees (a shared tool, tenant ``'*'``), and a selection that called or was reviewed on
any private (tenant-scoped) tool is left out whole, its query included. What one tenant may teach is bounded as
usage memory bounds it: one actor's successes count for a tool at most ``learning_credits_per_actor`` times, a
tenant keeps at most ``usage_examples_per_tool`` pairs per tool (its newest), and the pairs' budget is shared
equally between the tenants (a tenant with less gives the rest to the others), so no tenant's stream can take over
the model that answers the others.

Negatives. An 'unrelated' or 'broken' verdict on a (selection, tool) vetoes that pair, even when the call
succeeded: a reviewer who says a tool did not serve the query is believed over a call that returned. They are not
added to the loss as hard negatives: the training batches' other tools are the negatives (train.py). Hard
negatives mined from one model's mistakes helped on two of the four evaluation sets and hurt on two (issue
measurement), and the tools a selection's own verdicts refused, scored beside each of its pairs, measured no better
on metatool's stream at half as much time again (docs/results.md), so the verdicts are used where they cannot hurt:
to keep wrong pairs out."""

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from toolsel.contracts import SHARED_TENANT
from toolsel.tuning.pairs import Pair, fair_shares

USAGE_GROUP = "usage"
"""The group the model card names for pairs from use."""


@dataclass(frozen=True)
class Evidence:
    """One thing an event said about one tool of a selection: it served the query (a successful call, a 'perfect'
    or 'related' verdict) or it did not ('unrelated', 'broken')."""

    selection: str
    tenant: str
    actor: str
    """Whose events these are (session, else user, else the selection), as learning credits count them."""
    query: str
    tool: str
    """``plugin/name``."""
    positive: bool
    at: datetime


@dataclass(frozen=True)
class Use:
    """What the store holds for a tune: the events' evidence, and every live tool's text and owning tenant."""

    evidence: list[Evidence]
    texts: dict[str, str]
    owners: dict[str, str]

    def shared(self) -> dict[str, str]:
        """The texts of the tools every tenant sees."""
        return {k: t for k, t in self.texts.items() if self.owners[k] == SHARED_TENANT}


@dataclass(frozen=True)
class Limits:
    budget: int
    """Pairs trained on at most, shared equally between the tenants."""
    per_tool: int
    """Pairs a tenant keeps per tool (its newest), as usage memory keeps examples."""
    per_actor: int
    """Pairs one actor gives per tool, as learning credits count."""


@dataclass(frozen=True)
class Judged:
    """A held-back selection: its tenant, query and the tools that served it."""

    tenant: str
    query: str
    relevant: frozenset[str]


@dataclass(frozen=True)
class UseSplit:
    pairs: list[Pair]
    held_out: list[Judged]
    by_tenant: dict[str, int]
    """Pairs kept per tenant (before the budget's fair shares: ``pairs`` says what was chosen)."""
    left_out_private: int
    """Selections left out because they touched a private tool."""


def split_recent(evidence: Sequence[Evidence], share: float) -> tuple[list[Evidence], list[Evidence]]:
    """The evidence of older selections, and of the most recent ``share`` of each tenant's selections (by their
    latest event), held back: per tenant, so that a tenant's burst of traffic before a tune does not make the
    held-back queries all its own, and the candidate is judged on every tenant's."""
    latest: dict[str, tuple[datetime, str]] = {}
    tenant_of: dict[str, str] = {}
    for e in evidence:
        latest[e.selection] = max(latest.get(e.selection, (e.at, e.selection)), (e.at, e.selection))
        tenant_of[e.selection] = e.tenant
    by_tenant: dict[str, list[str]] = defaultdict(list)
    for selection in sorted(latest, key=lambda s: latest[s]):
        by_tenant[tenant_of[selection]].append(selection)
    held = {s for ordered in by_tenant.values() for s in ordered[len(ordered) - math.ceil(share * len(ordered)) :]}
    held = held if share > 0 else set()
    return [e for e in evidence if e.selection not in held], [e for e in evidence if e.selection in held]


def served(evidence: Iterable[Evidence], shared: Mapping[str, str]) -> tuple[list[Evidence], int]:
    """The positive evidence no verdict vetoed, of selections that touched only shared tools (``shared``: key ->
    text), newest first; and how many selections were left out for touching a private tool."""
    by_selection: dict[str, list[Evidence]] = defaultdict(list)
    for e in evidence:
        by_selection[e.selection].append(e)
    kept: list[Evidence] = []
    private = 0
    for items in by_selection.values():
        if any(e.tool not in shared for e in items):
            private += 1
            continue
        vetoed = {e.tool for e in items if not e.positive}
        latest = {e.tool: e for e in sorted(items, key=lambda e: e.at) if e.positive and e.tool not in vetoed}
        kept.extend(latest.values())  # one per tool: a call and a review of the same selection are one pair
    kept.sort(key=lambda e: (e.at, e.selection, e.tool), reverse=True)
    return kept, private


def bounded(positives: Sequence[Evidence], limits: Limits) -> list[Evidence]:
    """The newest positives within usage memory's bounds: per tenant, actor and tool ``per_actor``; per tenant and
    tool ``per_tool``; one pair per tenant, query and tool."""
    per_actor: dict[tuple[str, str, str], int] = defaultdict(int)
    per_tool: dict[tuple[str, str], int] = defaultdict(int)
    seen: set[tuple[str, str, str]] = set()
    kept = []
    for e in positives:  # newest first
        actor, tool, pair = (e.tenant, e.actor, e.tool), (e.tenant, e.tool), (e.tenant, e.query, e.tool)
        if pair in seen or per_actor[actor] >= limits.per_actor or per_tool[tool] >= limits.per_tool:
            continue
        seen.add(pair)
        per_actor[actor] += 1
        per_tool[tool] += 1
        kept.append(e)
    return kept


def held_out(evidence: Sequence[Evidence], shared: Mapping[str, str]) -> list[Judged]:
    """The held-back selections that touched only shared tools and that some tool served, as judged queries."""
    positives, _ = served(evidence, shared)
    relevant: dict[str, set[str]] = defaultdict(set)
    asked: dict[str, tuple[str, str]] = {}
    for e in positives:
        relevant[e.selection].add(e.tool)
        asked[e.selection] = (e.tenant, e.query)
    return [Judged(*asked[s], frozenset(relevant[s])) for s in sorted(asked)]


def pairs_from_use(evidence: Sequence[Evidence], shared: Mapping[str, str], limits: Limits, share: float) -> UseSplit:
    """Training pairs from the older selections and judged queries from the most recent ``share`` of them; a
    held-back query's text is never trained on."""
    older, recent = split_recent(evidence, share)
    judged = held_out(recent, shared)
    asked = {j.query for j in judged}
    positives, private = served(older, shared)
    kept = [e for e in bounded(positives, limits) if e.query not in asked]
    by_tenant: dict[str, list[Evidence]] = defaultdict(list)
    for e in kept:
        by_tenant[e.tenant].append(e)
    shares = fair_shares({t: len(items) for t, items in by_tenant.items()}, limits.budget)
    chosen = [e for tenant, items in sorted(by_tenant.items()) for e in items[: shares[tenant]]]
    pairs = [Pair(e.query, e.tool, shared[e.tool], USAGE_GROUP) for e in chosen]
    return UseSplit(pairs, judged, {t: len(items) for t, items in sorted(by_tenant.items())}, private)


def visible(tenant: str, owners: Mapping[str, str]) -> list[str]:
    """The tools (``key -> owning tenant``) a tenant's selections rank: the shared ones and its own."""
    return [key for key, owner in owners.items() if owner in (SHARED_TENANT, tenant)]
