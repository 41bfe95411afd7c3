from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from toolsel import contracts
from toolsel.contracts import ToolKey, admin
from toolsel.contracts.admin import QualityQuery, RuleFields, RuleUpdate, ToolUpdate, VisibilityRule


def rule(rule_type: str, conditions: dict[str, object]) -> RuleFields:
    return RuleFields.model_validate(
        {"rule_type": rule_type, "effect": "deny", "target_kind": "tool", "target": "p/t", "conditions": conditions}
    )


def test_rules_accept_the_conditions_the_policy_knows() -> None:
    assert rule("tier", {"tier": {"gte": "teams"}}).conditions == {"tier": {"gte": "teams"}}
    assert rule("composite", {"org": "acme", "role": {"in": ["admin"]}}).rule_type == "composite"


@pytest.mark.parametrize(
    ("rule_type", "conditions", "message"),
    [
        ("org", {"country": "fr"}, "unknown condition"),
        ("page", {"org": "acme"}, "a page rule has only a page condition"),
        ("role", {"role": {"like": "adm"}}, "operators are"),
        ("org", {"org": {"gte": "a"}}, "ordering operators apply to tier only"),
        ("composite", {"org": "acme"}, "at least two conditions"),
        ("team", {}, "Input should be"),
    ],
)
def test_rules_refuse_what_the_policy_cannot_apply(rule_type: str, conditions: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        rule(rule_type, conditions)


@pytest.mark.parametrize(
    ("rule_type", "conditions", "message"),
    [
        ("org", {"org": {"in": 5}}, "operator 'in' takes an array of text, not a number"),
        ("org", {"org": {"in": None}}, "operator 'in' takes an array of text, not null"),
        ("org", {"org": {"in": "acme"}}, "operator 'in' takes an array of text, not text"),
        ("org", {"org": {"in": ["acme", 5]}}, "operator 'in' takes an array of text, not an array holding a number"),
        ("tier", {"tier": {"gt": ["x"]}}, "operator 'gt' takes text, not an array"),
        ("role", {"role": {"eq": {"a": "b"}}}, "operator 'eq' takes text, not an object"),
        ("composite", {"org": "acme", "user": {"ne": True}}, "operator 'ne' takes text, not a boolean"),
    ],
)
def test_rules_refuse_an_operand_not_of_its_operators_type_naming_the_condition(
    rule_type: str, conditions: dict[str, object], message: str
) -> None:
    key = next(k for k, spec in conditions.items() if isinstance(spec, dict))
    with pytest.raises(ValidationError) as refused:
        rule(rule_type, conditions)
    assert refused.value.errors()[0]["loc"] == ("conditions", key)
    assert message in str(refused.value)
    with pytest.raises(ValidationError) as patched:  # an update's patch is refused on its own, naming the same
        RuleUpdate.model_validate({"id": 1, "rule": {"conditions": conditions}})
    assert patched.value.errors()[0]["loc"] == ("rule", "conditions", key)


def test_a_stored_rule_reads_back_whatever_its_operands_so_it_can_be_fixed() -> None:
    stored = {"id": 1, "created_at": datetime.now(UTC), "rule_type": "org", "effect": "deny"}
    read = VisibilityRule.model_validate(
        {**stored, "target_kind": "tool", "target": "p/t", "conditions": {"org": {"in": 5}}}
    )
    assert read.conditions == {"org": {"in": 5}}


def test_admin_requests_carry_an_optional_token_kept_out_of_repr() -> None:
    key = ToolKey(plugin_id="p", name="t", admin_token="s3cret")
    assert key.admin_token == "s3cret"
    assert "s3cret" not in repr(key)


def test_update_cannot_rename_and_quality_asks_one_thing() -> None:
    with pytest.raises(ValidationError, match="cannot be renamed"):
        ToolUpdate(plugin_id="p", name="t", changes={"name": "u"})
    with pytest.raises(ValidationError, match="not both"):
        QualityQuery(plugin_id="p", name="t", degraded=True)
    with pytest.raises(ValidationError, match="not both"):
        QualityQuery()


def test_every_admin_contract_is_exported_from_contracts() -> None:
    assert len(admin.__all__) > 50
    for name in admin.__all__:
        assert name in contracts.__all__
        assert getattr(contracts, name) is getattr(admin, name)
