"""Visibility rules: the six rule types, tier comparisons, priority order and deny winning ties."""

import pytest

from toolsel.contracts import OPERATORS
from toolsel.services.selector.policy import Rule, Subject, rule_matches, visible_mask
from toolsel.services.selector.splice import Groups

TIERS = ["free", "pro", "teams", "enterprise"]
KEYS = ["p/a", "p/b", "q/c"]
CATEGORIES = ["p/x", "p/y", None]


def visible(rules: list[Rule]) -> list[bool]:
    """The mask over KEYS, whose categories are CATEGORIES."""
    tool_rows = {key: row for row, key in enumerate(KEYS)}
    mask = visible_mask(rules, WHO, tool_rows, Groups.of([(c,) if c else () for c in CATEGORIES]), len(KEYS), TIERS)
    return [bool(v) for v in mask]


WHO = Subject(org="acme", user="u1", page="/admin/users", role="admin", tier="pro")


def rule(
    effect: str, target: str, priority: int = 0, kind: str = "tool", tenant: str = "*", **conditions: object
) -> Rule:
    return Rule(tenant, "composite", effect, kind, target, conditions, priority)


@pytest.mark.parametrize(
    ("conditions", "matches"),
    [
        ({}, True),
        ({"org": "acme"}, True),
        ({"org": "globex"}, False),
        ({"user": "u1"}, True),
        ({"user": ["u2", "u3"]}, False),
        ({"page": "/admin*"}, True),
        ({"page": "*users"}, True),
        ({"page": "*dmin/us*"}, True),
        ({"page": "/billing"}, False),
        ({"role": {"in": ["admin", "owner"]}}, True),
        ({"role": {"ne": "admin"}}, False),
        ({"tier": {"gte": "pro"}}, True),
        ({"tier": {"gte": "teams"}}, False),
        ({"tier": {"lt": "teams"}}, True),
        ({"tier": {"gt": "pro"}}, False),
        ({"tier": {"gte": "unknown-tier"}}, False),
        ({"org": "acme", "tier": {"gte": "teams"}}, False),  # composite: AND
        ({"org": "acme", "role": "admin"}, True),
        ({"colour": "red"}, False),  # an unknown condition never matches
    ],
)
def test_rule_conditions(conditions: dict[str, object], matches: bool) -> None:
    assert rule_matches(rule("allow", "p/a", **conditions), WHO, TIERS) is matches


OPERATOR_CASES = [
    ("eq", "pro", True),
    ("ne", "pro", False),
    ("in", ["free", "pro"], True),
    ("gt", "free", True),
    ("gte", "teams", False),
    ("lt", "pro", False),
    ("lte", "pro", True),
]


@pytest.mark.parametrize(("op", "value", "matches"), OPERATOR_CASES)
def test_each_operator_on_the_tier(op: str, value: object, matches: bool) -> None:
    assert rule_matches(rule("allow", "p/a", tier={op: value}), WHO, TIERS) is matches


def test_the_policy_applies_every_operator_the_contracts_accept() -> None:
    assert {op for op, _, _ in OPERATOR_CASES} == set(OPERATORS)


@pytest.mark.parametrize(
    "conditions",
    [
        {"org": {"in": 5}},
        {"org": {"in": None}},
        {"org": {"in": "acme-corp"}},  # text is not a list: no substring match either
        {"org": {"in": [["acme"]]}},
        {"tier": {"gt": ["free"]}},  # unhashable: was a TypeError looking it up among the tiers
        {"tier": {"gte": {"free": 1}}},
        {"org": {"eq": ["acme"]}},
        {"org": {"ne": 5}},  # read literally, this would match every org
        {"org": {"like": "acme"}},
        {"org": {}},
    ],
)
def test_a_stored_condition_the_contract_now_refuses_matches_no_one_and_never_raises(
    conditions: dict[str, object],
) -> None:
    assert rule_matches(rule("deny", "p/a", **conditions), WHO, TIERS) is False
    denials = [rule("deny", "p/a", **conditions), rule("deny", "p/x", kind="category", **conditions)]  # tenant "*"
    assert visible(denials) == [True, True, True]


def test_no_rules_show_everything() -> None:
    assert visible([]) == [True, True, True]


def test_deny_by_category_hides_its_tools_only() -> None:
    assert visible([rule("deny", "p/x", kind="category")]) == [False, True, True]


def test_higher_priority_allow_overrides_a_lower_deny() -> None:
    rules = [rule("deny", "p/a", priority=0), rule("allow", "p/a", priority=5, org="acme")]
    assert visible(rules)[0] is True


def test_deny_wins_at_equal_priority_in_either_order() -> None:
    for rules in ([rule("allow", "p/a", 3), rule("deny", "p/a", 3)], [rule("deny", "p/a", 3), rule("allow", "p/a", 3)]):
        assert visible(rules)[0] is False


def test_rules_of_another_tenant_do_not_apply() -> None:
    assert visible([rule("deny", "p/a", tenant="globex")])[0] is True


def test_a_rule_that_does_not_match_the_subject_changes_nothing() -> None:
    assert visible([rule("deny", "p/b", tier={"gte": "enterprise"})]) == [True, True, True]


def test_a_rule_on_a_tool_or_category_the_catalog_does_not_hold_changes_nothing() -> None:
    assert visible([rule("deny", "p/gone"), rule("deny", "p/nowhere", kind="category")]) == [True, True, True]


def test_a_category_allow_at_higher_priority_overrides_a_tool_deny() -> None:
    rules = [rule("deny", "p/a", priority=1), rule("allow", "p/x", priority=2, kind="category")]
    assert visible(rules) == [True, True, True]
    rules = [rule("deny", "p/a", priority=2), rule("allow", "p/x", priority=1, kind="category")]
    assert visible(rules) == [False, True, True]
