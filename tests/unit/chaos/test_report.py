"""Every scenario's figures print, naming what was measured."""

from typing import Any

import pytest

from toolsel.chaos.report import LINES, scenario_lines
from toolsel.chaos.scenarios import SCENARIOS

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
    **{
        name: {
            "target": target,
            "kills": 2,
            "kills_mid_stream": 2,
            "back_s": [0.5, 1.25],
            "back_max_s": 1.25,
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
        }
        for name, target in (("kill", "learner"), ("kill-nats", "nats"), ("kill-postgres", "postgres"))
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
    "oversize": {
        "tools": 24,
        "requests": 2,
        "answered": 2,
        "timeouts": 0,
        "cut": 2,
        "full_reply_bytes": 1_500_000,
        "limit_bytes": 1_000_000,
        "schemas_summarised": 9,
        "tools_dropped": 0,
        "oversized_schema_refused": "invalid_request: the schema takes 65,600 bytes (tools.0.parameters)",
        "seconds": 1.0,
    },
    "mcp-stdio": {
        "kinds": 11,
        "sent": 22,
        "answered": 21,
        "unanswered": {"batch": 1},
        "wrong_error": {},
        "serving_after": True,
        "seconds": 1.0,
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


def test_a_kill_names_its_target_and_how_long_it_was_down() -> None:
    first = scenario_lines("kill-postgres", FIGURES["kill-postgres"])[1]
    assert first.strip().startswith("postgres SIGKILLed 2 times")
    assert "back (restarted by the stack, serving) after at most 1.25 s (0.5, 1.25)" in first


def test_a_subject_with_untyped_answers_is_named() -> None:
    assert "subjects with untyped answers: toolsel.rpc.select" in scenario_lines("fuzz", FIGURES["fuzz"])[-1]
