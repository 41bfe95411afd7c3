"""How replies are classed and events, deliveries and answers are accounted for."""

import json
from collections import Counter
from uuid import UUID

from toolsel.chaos.figures import (
    OK,
    TIMEOUT,
    UNREADABLE,
    answer,
    changed,
    dead_lettered,
    delivery_figures,
    event_figures,
    reason_kind,
    request_figures,
    verdict,
)
from toolsel.contracts import ScoreBreakdown, ScoredTool, SelectReply, TokenEstimate


def test_a_reply_is_a_result_a_typed_error_or_unreadable() -> None:
    assert verdict(b'{"tools": []}') == OK
    assert verdict(b"[]") == OK
    assert verdict(b'{"error": {"code": "invalid_request", "message": "no"}}') == "invalid_request"
    assert verdict(b'{"error": {"code": "internal", "message": "boom"}}') == "internal"
    assert verdict(b'{"error": {"code": "teapot"}}') == UNREADABLE
    assert verdict(b'{"error": "no"}') == UNREADABLE
    assert verdict(b"\xff") == UNREADABLE


def test_only_results_and_typed_errors_other_than_internal_count_as_typed() -> None:
    figures = request_figures(Counter({OK: 2, "invalid_request": 5, "unauthorized": 1, "internal": 1, TIMEOUT: 1}))
    assert (figures["sent"], figures["ok"], figures["typed_errors"]) == (10, 2, 6)
    assert (figures["internal"], figures["timeouts"]) == (1, 1)
    assert figures["typed_share"] == 0.8
    assert request_figures(Counter())["typed_share"] == 1.0


def test_dead_letters_are_matched_by_id_even_re_encoded_and_by_bytes_otherwise() -> None:
    event = {"event_id": "e1", "rating": 0.5}
    published = [json.dumps(event).encode(), b"\x00junk", b"\x00junk", b"[[["]
    letters = [json.dumps(event, indent=1).encode(), b"\x00junk", b"\x00junk", b"\x00junk", b"other"]
    assert dead_lettered("feedback", published, letters) == 3
    selection = json.dumps({"selection_id": "s1"}).encode()
    assert dead_lettered("selection", [selection], [selection]) == 1


def test_events_not_dead_lettered_nor_stuck_were_applied() -> None:
    figures = event_figures(10, 6, 1, Counter({"malformed": 6}))
    assert (figures["applied"], figures["dead_lettered"], figures["stuck"]) == (3, 6, 1)


def test_a_reason_kind_is_its_first_word() -> None:
    assert reason_kind("malformed: Input should be a valid UUID") == "malformed"
    assert reason_kind("") == "unknown"
    assert len(reason_kind("x" * 500)) == 60


def test_lost_and_double_applied_outcomes() -> None:
    exact = delivery_figures(["a", "b", "c"], ["a", "b", "c", "z"], calls=3, alpha=4.0, prior_alpha=1.0)
    assert (exact["lost"], exact["double_applied_calls"], exact["double_applied_posterior"]) == (0, 0, 0)
    lossy = delivery_figures(["a", "b", "c"], ["a"], calls=2, alpha=3.0, prior_alpha=1.0)
    assert (lossy["lost"], lossy["double_applied_calls"], lossy["double_applied_posterior"]) == (2, 1, 1.0)


def _reply(alpha: float, recency: float) -> SelectReply:
    tool = ScoredTool(
        plugin_id="p",
        name="n",
        description="d",
        parameters={},
        score=0.5,
        breakdown=ScoreBreakdown(alpha=alpha, recency=recency, composite=recency),
    )
    return SelectReply(
        selection_id=UUID(int=0),
        tools=[tool],
        context_key="k",
        method="hybrid",
        tokens=TokenEstimate(selected=1, catalog=1, saved=0),
        latency_ms=1.0,
    )


def test_an_answer_changes_with_what_is_learnt_not_with_the_clock() -> None:
    before = {"q": answer(_reply(1.0, 0.5))}
    assert changed(before, {"q": answer(_reply(1.0, 0.4))}) == []
    assert changed(before, {"q": answer(_reply(2.0, 0.5))}) == ["q"]
    assert changed(before, {}) == ["q"]
