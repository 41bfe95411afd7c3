"""Visibility rules (seed 000, 5.1): who may see which tool or category; and pin rules (5.6): which tools join an
organisation's answers on their own.

A rule matches a request when all its conditions hold (composite rules are several conditions, ANDed). For
each tool the matching rules that target it (by tool or by its category) are taken in priority order; the
highest priority decides and, at equal priority, deny (unpin) wins. A tool no rule targets stays visible (keeps
its plugin's pin), so an empty rule table shows everything as declared.

A tenant's own pins and unpins (rules of origin ``tenant``, made on ``toolsel.rpc.pins``) are one layer between:
they decide over what the plugins declare, and the operator's pin and unpin rules decide over them; the
operator's deny hides a tool whatever pins it, since only what the request may see is pinned.
"""

import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import numpy as np

from toolsel.contracts import OPERATORS
from toolsel.contracts.admin.registry import operand_fits
from toolsel.pages import page_matches
from toolsel.services.selector.stages import Mask, Rows


@dataclass(frozen=True)
class Rule:
    """A stored rule; its types, condition operators and their operands are validated on the way in
    (``RuleCreate``), and a condition stored before that is read without fail (``_holds``)."""

    tenant_id: str  # "*": every tenant
    rule_type: str
    effect: str  # allow | deny | pin | unpin
    target_kind: str  # tool (plugin/name) | category (plugin/category)
    target: str
    conditions: Mapping[str, Any]
    priority: int
    origin: str = "operator"  # operator | tenant: a tenant's own pin or unpin


@dataclass(frozen=True)
class TenantRules:
    """The rules by the tenant they are for: a request weighs only the shared ones and its own tenant's, so that
    other tenants' rules (each tenant's own pins add some) cost its selections nothing. The order of the rules
    never matters (``_decided`` goes by priority alone)."""

    shared: list[Rule]
    own: Mapping[str, list[Rule]]

    @classmethod
    def of(cls, rules: Sequence[Rule]) -> "TenantRules":
        own: dict[str, list[Rule]] = {}
        for rule in rules:
            if rule.tenant_id != "*":
                own.setdefault(rule.tenant_id, []).append(rule)
        return cls([r for r in rules if r.tenant_id == "*"], own)

    def of_tenant(self, tenant: str) -> list[Rule]:
        """The rules that may apply to a request of ``tenant``."""
        mine = self.own.get(tenant)
        return self.shared if mine is None else [*self.shared, *mine]


@dataclass(frozen=True)
class Subject:
    """Who is asking, as the rules see it."""

    org: str
    user: str | None
    page: str
    role: str | None
    tier: str


TIER_ORDER: Final[dict[str, Callable[[int, int], bool]]] = {
    "gt": operator.gt,
    "gte": operator.ge,
    "lt": operator.lt,
    "lte": operator.le,
}
"""The ordering operators, on the ranks of two tiers."""


def _compare(actual: str | None, spec: Any, key: str, tiers: Sequence[str]) -> bool:
    if actual is None:
        return False
    if isinstance(spec, str):
        return page_matches(spec, actual) if key == "page" else actual == spec
    if isinstance(spec, list):
        return actual in spec
    if not isinstance(spec, dict) or not spec:
        return False
    return all(_holds(op, value, actual, key, tiers) for op, value in spec.items())


def _holds(op: str, value: Any, actual: str, key: str, tiers: Sequence[str]) -> bool:
    """Whether ``actual`` (the request's ``key``) passes one operator. An operator the policy does not know, or an
    operand not of its type (``operand_fits``: a rule stored before operands were typed), does not hold: such a
    condition names no request, so its rule is as if absent. Read otherwise, ``{"ne": 5}`` would match everyone
    and ``{"in": 5}`` would raise on every selection of the rule's tenants (of all of them, for a ``*`` rule)."""
    if op not in OPERATORS or not operand_fits(op, value):
        return False
    if op in TIER_ORDER:
        rank = {tier: i for i, tier in enumerate(tiers)}
        return key == "tier" and actual in rank and value in rank and TIER_ORDER[op](rank[actual], rank[value])
    if op == "in":
        return actual in value
    return (actual == value) is (op == "eq")


def rule_matches(rule: Rule, who: Subject, tiers: Sequence[str]) -> bool:
    """All conditions hold (an empty condition set matches everyone)."""
    values = {"org": who.org, "user": who.user, "page": who.page, "role": who.role, "tier": who.tier}
    return all(key in values and _compare(values[key], spec, key, tiers) for key, spec in rule.conditions.items())


def visible_mask(
    rules: Sequence[Rule],
    who: Subject,
    tool_rows: Mapping[str, int],
    category_rows: Mapping[str, Rows],
    size: int,
    tiers: Sequence[str],
) -> Mask:
    """Which of ``size`` catalog rows this subject may see; rule targets are found by lookup (tool key -> row,
    category key -> rows), so the work is the rules', never a pass over the catalog."""
    return _decided(rules, ("allow", "deny"), np.ones(size, dtype=bool), who, tool_rows, category_rows, tiers)


def pinned_mask(
    rules: Sequence[Rule],
    who: Subject,
    tool_rows: Mapping[str, int],
    category_rows: Mapping[str, Rows],
    declared: Mask,
    tiers: Sequence[str],
) -> Mask:
    """Which rows are pinned for this subject: as their plugins declared (``declared``), but where the tenant's
    own choices say otherwise, and over both where the operator's matching ``pin`` or ``unpin`` rules do."""
    effects = ("pin", "unpin")
    own = [r for r in rules if r.origin == "tenant"]
    chosen = _decided(own, effects, declared.copy(), who, tool_rows, category_rows, tiers)
    operators = [r for r in rules if r.origin != "tenant"]
    return _decided(operators, effects, chosen, who, tool_rows, category_rows, tiers)


def _decided(
    rules: Sequence[Rule],
    effects: tuple[str, str],
    mask: Mask,
    who: Subject,
    tool_rows: Mapping[str, int],
    category_rows: Mapping[str, Rows],
    tiers: Sequence[str],
) -> Mask:
    """``mask`` with the rows the matching rules of these ``effects`` (yes, no) target set by the rules: a higher
    priority decides; at equal priority no wins."""
    yes = effects[0]
    chosen = [r for r in rules if r.effect in effects]
    if not chosen:
        return mask
    decided = np.full(mask.size, np.iinfo(np.int64).min, dtype=np.int64)  # priority of the rule that decided each row
    for rule in chosen:
        if rule.tenant_id not in ("*", who.org) or not rule_matches(rule, who, tiers):
            continue
        set_to = rule.effect == yes
        if rule.target_kind == "tool":  # one row: decided on scalars (a tenant's own pins are many such rules)
            row = tool_rows.get(rule.target)
            if row is not None and _wins(rule.priority, int(decided[row]), set_to):
                decided[row], mask[row] = rule.priority, set_to
            continue
        targets = category_rows.get(rule.target, np.zeros(0, dtype=np.int64))
        taken = targets[_wins(rule.priority, decided[targets], set_to)]
        decided[taken] = rule.priority
        mask[taken] = set_to
    return mask


def _wins(priority: int, decided: Any, set_to: bool) -> Any:
    """Whether a rule of ``priority`` setting ``set_to`` decides over what ``decided`` (priorities, a scalar or an
    array) was decided by: a higher priority does, an equal one only to say no."""
    return (priority > decided) | ((priority == decided) & (not set_to))
