"""``toolsel chaos`` with tiny numbers, on a stack of its own: every scenario runs, prints its figures and writes
them as JSON, and the figures are the targets (nothing lost, applied twice, stuck or crossing tenants; every
hostile request answered with a result or a typed error; every forged broadcast refused; every reply over the
message size cut to fit and answered; every malformed MCP line answered; NATS and PostgreSQL SIGKILLed and
brought back by the stack itself)."""

import json
import subprocess
from typing import Any

import pytest

from toolsel.chaos.scenarios import SCENARIOS
from toolsel.stack import TOOLSEL_COMMAND

CHECKED = tuple(name for name in SCENARIOS if name != "nats-restart")
"""The NATS restart is left to tests/integration/test_selection_buffer.py, which restarts the server under
selecting agents with its own bounds; here, on a loaded CI machine, the scenario's reconnect wait was flaky."""
ARGS = (
    *(arg for name in CHECKED for arg in ("--scenario", name)),
    *("--fuzz", "15", "--kills", "2", "--outcomes", "300", "--rounds", "1", "--forgeries", "2", "--attacks", "4"),
    *("--server-kills", "2", "--oversize", "3", "--mcp-rounds", "1"),
)


@pytest.fixture(scope="module")
def figures(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    path = tmp_path_factory.mktemp("chaos") / "chaos.json"
    done = subprocess.run(
        [*TOOLSEL_COMMAND, "chaos", *ARGS, "--json", str(path)], capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    for name in CHECKED:
        assert name in done.stdout, f"{name}: no figures printed"
    result: dict[str, Any] = json.loads(path.read_text())
    assert list(result["scenarios"]) == list(CHECKED)
    return result["scenarios"]  # type: ignore[no-any-return]


def test_fuzz_every_request_typed_and_every_event_applied_or_dead_lettered(figures: dict[str, Any]) -> None:
    fuzz = figures["fuzz"]
    requests, events = fuzz["requests"], fuzz["events"]
    assert requests["sent"] == 15 * requests["subjects"]
    assert (requests["internal"], requests["timeouts"], requests["no_responders"], requests["unreadable"]) == (0,) * 4
    assert requests["typed_share"] == 1.0
    assert events["published"] == 15 * events["subjects"] == events["applied"] + events["dead_lettered"]
    assert events["stuck"] == 0
    assert (fuzz["service_restarts"], fuzz["unhealthy_after"]) == (0, [])


@pytest.mark.parametrize(
    ("scenario", "target"), [("kill", "learner"), ("kill-nats", "nats"), ("kill-postgres", "postgres")]
)
def test_kill_nothing_lost_nothing_applied_twice(figures: dict[str, Any], scenario: str, target: str) -> None:
    kill = figures[scenario]
    assert (kill["target"], kill["kills"], len(kill["back_s"])) == (target, 2, 2)
    assert (kill["sent"], kill["stored"], kill["lost"], kill["stuck"]) == (300, 300, 0, 0)
    assert (kill["double_applied_calls"], kill["double_applied_posterior"]) == (0, 0)


def test_mcp_stdio_every_malformed_line_answered_as_the_specification_says(figures: dict[str, Any]) -> None:
    lines = figures["mcp-stdio"]
    assert lines["sent"] == lines["kinds"] == lines["answered"] > 10
    assert (lines["unanswered"], lines["wrong_error"], lines["serving_after"]) == ({}, {}, True)


def test_oversize_every_reply_cut_to_fit_and_answered(figures: dict[str, Any]) -> None:
    oversize = figures["oversize"]
    assert (oversize["requests"], oversize["answered"], oversize["timeouts"], oversize["cut"]) == (3, 3, 0, 3)
    assert oversize["full_reply_bytes"] > oversize["limit_bytes"]
    assert oversize["schemas_summarised"] > 0
    assert "more than the 65,536 allowed (tools.0.parameters)" in oversize["oversized_schema_refused"]


def test_tenants_nothing_crosses(figures: dict[str, Any]) -> None:
    tenants = figures["tenants"]
    assert tenants["streaming_tenant_answers_changed"] > 0, "the streaming tenant learnt nothing: nothing was tested"
    assert tenants["streaming_tenant_shared_tools_learnt"] > 0, "no shared tool learnt from: nothing was tested"
    assert tenants["other_tenant_shared_tools_touched"] == 0
    assert tenants["cross_tenant_changes"] == 0


def test_forged_broadcasts_refused(figures: dict[str, Any]) -> None:
    forged = figures["forged"]
    assert forged["attempts"] == 2 * len(forged["subjects"]) == forged["refused"]
    assert forged["answers_changed"] == 0


def test_eavesdrop_no_reply_of_another_tenant_read(figures: dict[str, Any]) -> None:
    eavesdrop = figures["eavesdrop"]
    assert eavesdrop["victim_selections"] == 4
    assert eavesdrop["subscriptions_refused"] == len(eavesdrop["patterns"])
    assert eavesdrop["replies_read"] == 0


def test_spoof_every_request_naming_another_tenant_refused(figures: dict[str, Any]) -> None:
    spoof = figures["spoof"]
    assert spoof["requests"] == 3 * 4 == spoof["requests_refused"]
    assert spoof["feedback"] == 4 == spoof["feedback_refused"]
    assert spoof["cross_tenant_changes"] == 0


def test_id_reuse_every_hostile_event_refused(figures: dict[str, Any]) -> None:
    reuse = figures["id-reuse"]
    assert reuse["hostile_events"] == 2 * 4 == reuse["refused"]
    assert reuse["cross_tenant_changes"] == 0


def test_msg_id_claim_suppresses_no_selection_event(figures: dict[str, Any]) -> None:
    claim = figures["msg-id-claim"]
    assert claim["victim_selections"] == 4 == claim["stored"]
    assert claim["suppressed"] == 0
