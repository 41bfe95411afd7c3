"""Scoped pins: a pin its plugin scoped joins only the requests its scope holds for (directly, then through
whole selections); an unscoped pin joins every answer."""

from tests.unit.selector.factory import T
from tests.unit.selector.test_selector import TOOLS, names, selector
from toolsel.services.selector.pipeline.pins import in_scope


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
