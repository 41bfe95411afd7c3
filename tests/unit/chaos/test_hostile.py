"""The seeded hostile input: repeatable by its seed, hostile in every way the fuzz tests are, and its events keep
what they refer to."""

import json
from uuid import UUID

from toolsel.chaos.hostile import HOSTILE_TEXTS, REFERENCES, Hostile, deep, event_body, event_templates
from toolsel.contracts import SelectedTool, SelectionEvent


def _selection() -> SelectionEvent:
    return SelectionEvent(
        tenant_id="t",
        query="weather",
        tier="free",
        context_key="free::general",
        method="hybrid",
        tools=[SelectedTool(plugin_id="p", name="get_weather", rank=0, score=0.5)],
        candidate_count=1,
        latency_ms=1.0,
        tokens_selected=1,
        tokens_catalog=1,
    )


def test_the_same_seed_draws_the_same_bodies() -> None:
    first, second = Hostile(7), Hostile(7)
    assert [first.body("token") for _ in range(200)] == [second.body("token") for _ in range(200)]
    assert [first.body() for _ in range(50)] != [Hostile(8).body() for _ in range(50)]


def test_the_bodies_are_hostile_in_every_way() -> None:
    hostile = Hostile(0)
    bodies = [hostile.body("secret") for _ in range(2000)]
    assert any(b.startswith(b'{"query": [[[') for b in bodies), "no deep JSON"
    assert any(b"\\ud800" in b for b in bodies), "no lone surrogate"
    assert any(b"\\u0000" in b for b in bodies), "no NUL"
    assert any(b"NaN" in b or b"Infinity" in b for b in bodies), "no non-finite number"
    assert any(b'"admin_token": "secret"' in b for b in bodies), "the token is never carried"
    assert any(not b.startswith((b"{", b"[")) for b in bodies), "no raw bytes"


def test_deep_nests_as_deep_as_asked() -> None:
    assert deep(3) == b'{"query": [[[]]]}'


def test_an_event_body_keeps_its_references_under_a_fresh_id() -> None:
    templates = event_templates(_selection(), "t", "p", "get_weather")
    hostile = {"plugin_id": "other", "selection_id": "x", "name": "\x00", "rating": float("nan")}
    feedback = json.loads(event_body("feedback", templates["feedback"], hostile))
    assert (feedback["plugin_id"], feedback["name"]) == ("p", "get_weather")
    assert feedback["event_id"] != templates["feedback"]["event_id"]
    outcome = json.loads(event_body("outcome", templates["outcome"], hostile))
    assert outcome["selection_id"] == templates["outcome"]["selection_id"]
    selection = json.loads(event_body("selection", templates["selection"], {}))
    assert UUID(selection["selection_id"]) != UUID(templates["selection"]["selection_id"])
    assert "event_id" not in selection, "a selection event has no event_id: it would be refused for that alone"
    assert set(hostile) >= REFERENCES


def test_hostile_text_draws_the_known_cases_and_random_code_points() -> None:
    hostile = Hostile(1)
    drawn = {hostile.text() for _ in range(500)}
    assert set(HOSTILE_TEXTS) <= drawn
    assert len(drawn - set(HOSTILE_TEXTS)) > 100
