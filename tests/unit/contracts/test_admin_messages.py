import pytest
from pydantic import ValidationError

from toolsel import contracts
from toolsel.contracts import ToolKey, admin
from toolsel.contracts.admin import QualityQuery, RuleFields, ToolUpdate


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
