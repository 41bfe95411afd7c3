"""Every scenario's figures print, naming what was measured."""

from typing import Any

import pytest

from toolsel.chaos.report import LINES, scenario_lines
from toolsel.chaos.run import SCENARIOS

REQUESTS = {"subjects": 1, "sent": 2, "ok": 1, "typed_errors": 1, "internal": 0, "timeouts": 0, "no_responders": 0,
            "unreadable": 0, "typed_share": 1.0}  # fmt: skip
CROSSED = {"victim_answers_changed": 0, "victim_tools_learnt": 0, "victim_tools_lost": 0, "cross_tenant_changes": 0}
FIGURES: dict[str, dict[str, Any]] = {
    "fuzz": {
        "per_subject": 2,
        "seconds": 1.0,
        "requests": {**REQUESTS, "by_subject": {"toolsel.rpc.select": {**REQUESTS, "typed_share": 0.5}}},
        "events": {"subjects": 1, "published": 2, "applied": 1, "dead_lettered": 1, "stuck": 0},
        "service_restarts": 0,
        "unhealthy_after": [],
    },
    "kill": {
        "kills": 2,
        "kills_mid_stream": 2,
        "sent": 10,
        "seconds": 1.0,
        "stored": 10,
        "lost": 0,
        "stuck": 0,
        "calls_counted": 10,
        "double_applied_calls": 0,
        "posterior_alpha": 11.0,
        "expected_alpha": 11.0,
        "double_applied_posterior": 0.0,
    },
    "nats-restart": {
        "answered": 10,
        "answered_before_restart": 5,
        "unanswered_attempts": 3,
        "seconds": 1.0,
        "stored": 10,
        "lost": 0,
        "selector_dropped": 0,
    },
    "tenants": {
        "events_sent": 6,
        "streaming_tenant_answers_changed": 5,
        "streaming_tenant_shared_tools_learnt": 2,
        "questions": 5,
        "other_tenant_answers_changed": 0,
        "other_tenant_tools_touched": 0,
        "other_tenant_shared_tools_touched": 0,
        "cross_tenant_changes": 0,
    },
    "forged": {"attempts": 4, "subjects": ["a"], "refused": 4, "not_refused": 0, "answers_changed": 0},
    "eavesdrop": {"patterns": [">", "_INBOX.>"], "subscriptions_refused": 2, "victim_selections": 3, "replies_read": 0},
    "spoof": {
        "requests": 6,
        "requests_refused": 6,
        "requests_accepted": 0,
        "feedback": 2,
        "feedback_refused": 2,
        **CROSSED,
    },
    "id-reuse": {"victim_selections": 3, "hostile_events": 4, "refused": 4, **CROSSED},
    "msg-id-claim": {"victim_selections": 2, "claims": 6, "stored": 2, "suppressed": 0},
}


def test_every_scenario_has_lines() -> None:
    assert set(LINES) == set(SCENARIOS) == set(FIGURES)


@pytest.mark.parametrize("name", SCENARIOS)
def test_the_figures_print(name: str) -> None:
    lines = scenario_lines(name, FIGURES[name])
    assert lines[0] == f"[bold]{name}[/]"
    assert len(lines) > 2


def test_a_subject_with_untyped_answers_is_named() -> None:
    assert "subjects with untyped answers: toolsel.rpc.select" in scenario_lines("fuzz", FIGURES["fuzz"])[-1]
