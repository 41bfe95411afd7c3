"""Scoped pins: a pin its plugin scoped joins only the requests its scope holds for (directly, then through
whole selections); an unscoped pin joins every answer; an organisation pins and unpins for itself by rules, and a
tenant by its own choices, beneath the operator's rules."""

import numpy as np

from tests.unit.selector.factory import T
from tests.unit.selector.test_selector import TOOLS, names, selector
from toolsel.contracts import SelectRequest
from toolsel.services.selector.pipeline.pins import in_scope
from toolsel.services.selector.policy import Rule, Subject, TenantRules, pinned_mask


def test_a_scope_holds_on_its_pages_categories_or_relevance_floor() -> None:
    scope = {"pages": ["/mail*"], "categories": ["mail"], "min_similarity": 0.5}
    assert in_scope(scope, "/mail/inbox", set(), 0.0)
    assert in_scope(scope, "/home", {"mail"}, 0.0)
    assert in_scope(scope, "/home", {"weather"}, 0.6)
    assert not in_scope(scope, "/home", {"weather"}, 0.4)
    assert not in_scope({"pages": ["/mail*"]}, "", {"mail"}, 1.0)


MAIL_HEALTH = T("mail_health", "mail server health", 6, pinned=True, pin_weight=5, pin_scope={"categories": ["mail"]})


def test_a_scoped_pin_stays_out_of_answers_outside_its_scope() -> None:
    sel = selector([*TOOLS, MAIL_HEALTH])
    weather = names(sel, query="weather in Oslo", k=2)
    mail = names(sel, query="send an email to Bob", k=2)
    assert "mail_health" not in weather
    assert "search_tools" in weather  # unscoped: every answer
    assert mail[:2] == ["search_tools", "mail_health"]  # by pin weight


def test_a_pin_joins_the_pages_its_scope_names() -> None:
    on_page = T("travel_desk", "travel help desk", 7, pinned=True, pin_scope={"pages": ["/travel*"]})
    sel = selector([*TOOLS, on_page])
    assert "travel_desk" in names(sel, query="weather in Oslo", k=1, page="/travel/booking")
    assert "travel_desk" not in names(sel, query="weather in Oslo", k=1, page="/home")


def rule(effect: str, target: str, tenant: str = "acme", priority: int = 0, origin: str = "operator") -> Rule:
    return Rule(tenant, "org", effect, "tool", target, {}, priority, origin)


def own(effect: str, target: str, tenant: str = "acme") -> Rule:
    """A tenant's own choice, as ``toolsel.rpc.pins`` stores it."""
    return rule(effect, target, tenant, origin="tenant")


def test_pin_rules_override_the_declared_pins_per_organisation() -> None:
    declared = np.array([False, True, False])
    rows = {"p/a": 0, "p/b": 1, "p/c": 2}
    acme, other = Subject("acme", None, "", None, "free"), Subject("other", None, "", None, "free")
    rules = [rule("pin", "p/a"), rule("unpin", "p/b"), rule("deny", "p/c")]
    assert pinned_mask(rules, acme, rows, {}, declared, ("free",)).tolist() == [True, False, False]
    assert pinned_mask(rules, other, rows, {}, declared, ("free",)).tolist() == [False, True, False]
    tied = [rule("pin", "p/a"), rule("unpin", "p/a")]
    assert not pinned_mask(tied, acme, rows, {}, declared, ("free",))[0]  # at equal priority, unpin wins
    assert pinned_mask([*tied, rule("pin", "p/a", priority=5)], acme, rows, {}, declared, ("free",))[0]
    assert declared.tolist() == [False, True, False]  # the catalog's own pins are untouched


def test_an_organisation_unpins_a_plugins_pin_without_hiding_it_and_pins_its_own() -> None:
    sel = selector()
    sel.rules = [rule("unpin", "p/search_tools"), rule("pin", "p/book_hotel")]
    acme = names(sel, query="weather in Oslo", k=1, tenant_id="acme")
    assert acme == ["book_hotel", "get_weather"]
    assert names(sel, query="weather in Oslo", k=1, tenant_id="other") == ["search_tools", "get_weather"]
    found = names(sel, query="find more tools", k=6, tenant_id="acme")
    assert "search_tools" in found[1:]  # not pinned, not hidden: ranked like any other tool
    reply, _ = sel.select(SelectRequest(query="weather in Oslo", k=1, tenant_id="acme"))
    assert [t.pinned for t in reply.tools] == [True, False]
    assert reply.tools[0].reason.startswith("Pinned")


def test_a_tenants_own_choices_decide_over_the_plugins_and_the_operators_rules_over_both() -> None:
    declared = np.array([True, False, True])
    rows = {"p/a": 0, "p/b": 1, "p/c": 2}
    acme, other = Subject("acme", None, "", None, "free"), Subject("other", None, "", None, "free")

    def pinned(rules: list[Rule], who: Subject = acme) -> list[bool]:
        return pinned_mask(rules, who, rows, {}, declared, ("free",)).tolist()

    choices = [own("unpin", "p/a"), own("pin", "p/b")]
    assert pinned(choices) == [False, True, True]
    assert pinned(choices, other) == [True, False, True]  # another tenant's choices change nothing here
    # the operator's rules win over the tenant's choices, whatever their priorities
    assert pinned([*choices, rule("pin", "p/a", priority=-5), rule("unpin", "p/b", priority=-5)]) == [True, False, True]
    # an operator's rule for another tenant does not
    assert pinned([*choices, rule("pin", "p/a", tenant="other")]) == [False, True, True]
    assert declared.tolist() == [True, False, True]


def test_a_tenants_pin_joins_its_answers_and_no_other_tenants() -> None:
    sel = selector()
    sel.rules = [own("pin", "p/book_hotel"), own("unpin", "p/search_tools")]
    assert names(sel, query="weather in Oslo", k=1, tenant_id="acme") == ["book_hotel", "get_weather"]
    assert names(sel, query="weather in Oslo", k=1, tenant_id="other") == ["search_tools", "get_weather"]
    assert "search_tools" in names(sel, query="find more tools", k=6, tenant_id="acme")  # unpinned, not hidden


def test_a_request_weighs_the_shared_rules_and_its_own_tenants_only() -> None:
    shared, acme, other = rule("deny", "p/a", tenant="*"), own("pin", "p/b"), own("pin", "p/c", tenant="other")
    grouped = TenantRules.of([shared, acme, other])
    assert grouped.of_tenant("acme") == [shared, acme]
    assert grouped.of_tenant("other") == [shared, other]
    assert grouped.of_tenant("nobody") == [shared]


def test_the_selector_groups_the_rules_again_when_they_are_replaced() -> None:
    sel = selector()
    sel.rules = [own("pin", "p/book_hotel")]
    assert "book_hotel" in names(sel, query="weather in Oslo", k=1, tenant_id="acme")
    sel.rules = [own("pin", "p/book_hotel", tenant="other")]
    assert "book_hotel" not in names(sel, query="weather in Oslo", k=1, tenant_id="acme")
    assert "book_hotel" in names(sel, query="weather in Oslo", k=1, tenant_id="other")


def test_a_pin_that_fits_the_query_is_as_confident_as_if_it_were_ranked() -> None:
    """A pin was left out of the ranking, so its confidence read 0: a pinned exact match said ``no_match`` and
    advised creating a tool, and any ``min_score`` dropped it."""
    pinned = [T("get_weather", "weather forecast for a city", 2, pinned=True, pin_weight=1), *TOOLS[:2], *TOOLS[3:]]
    reply, _ = selector(pinned).select(SelectRequest(query="weather in Oslo", k=2))
    weather = next(t for t in reply.tools if t.name == "get_weather")
    ranked, _ = selector().select(SelectRequest(query="weather in Oslo", k=2))
    assert weather.pinned
    assert weather.confidence == next(t.confidence for t in ranked.tools if t.name == "get_weather") > 0.5
    assert not reply.no_match
    floor = names(selector(pinned), query="weather in Oslo", k=2, filters={"min_score": 0.3})
    assert floor == ["get_weather"]


def test_a_scoped_pin_is_ranked_like_any_tool_outside_its_scope() -> None:
    """Outside its scope a scoped pin joins no answer as a pin, yet a query that asks for it finds it."""
    desk = T("travel_desk", "travel help desk", 7, pinned=True, pin_scope={"pages": ["/travel*"]})
    sel = selector([*TOOLS, desk])
    home, _ = sel.select(SelectRequest(query="travel help desk", k=2, page="/home"))
    travel, _ = sel.select(SelectRequest(query="weather in Oslo", k=1, page="/travel/booking"))
    assert [(t.name, t.pinned) for t in home.tools][:2] == [("search_tools", True), ("travel_desk", False)]
    assert not home.tools[1].reason.startswith("Pinned")
    assert ("travel_desk", True) in [(t.name, t.pinned) for t in travel.tools]
    assert "travel_desk" not in names(sel, query="weather in Oslo", k=1, page="/home")
