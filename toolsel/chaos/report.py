"""The figures of a scenario as lines to print: what it did, then what it measured against what it should."""

from collections.abc import Callable, Mapping
from typing import Any


def _fuzz(f: Mapping[str, Any]) -> list[str]:
    r, e = f["requests"], f["events"]
    lines = [
        f"{f['per_subject']} hostile inputs per subject, {f['seconds']} s",
        f"requests ({r['subjects']} subjects, {r['sent']} sent): {r['ok']} results, {r['typed_errors']} typed errors, "
        f"{r['internal']} internal, {r['timeouts']} timeouts, {r['no_responders']} without a responder, "
        f"{r['unreadable']} unreadable: {r['typed_share']:.2%} typed",
        f"events ({e['subjects']} subjects, {e['published']} published): {e['applied']} applied, "
        f"{e['dead_lettered']} dead-lettered, {e['stuck']} stuck",
        f"services restarted meanwhile: {f['service_restarts']}; not answering after: "
        f"{', '.join(f['unhealthy_after']) or 'none'}",
    ]
    untyped = [s for s, x in r["by_subject"].items() if x["typed_share"] < 1]
    if untyped:
        lines.append(f"subjects with untyped answers: {', '.join(untyped)}")
    return lines


def _kill(f: Mapping[str, Any]) -> list[str]:
    return [
        f"{f['target']} SIGKILLed {f['kills']} times ({f['kills_mid_stream']} mid-stream) while {f['sent']} outcomes "
        f"streamed, {f['seconds']} s; back (restarted by the stack, serving) after at most {f['back_max_s']} s "
        f"({', '.join(str(s) for s in f['back_s'])})",
        f"stored {f['stored']}, lost {f['lost']}, stuck {f['stuck']}; calls counted {f['calls_counted']} "
        f"(double-applied {f['double_applied_calls']}); posterior alpha {f['posterior_alpha']} for "
        f"{f['expected_alpha']} expected (double-applied {f['double_applied_posterior']})",
    ]


def _restart(f: Mapping[str, Any]) -> list[str]:
    return [
        f"{f['answered']} selections answered, NATS restarted after {f['answered_before_restart']} "
        f"({f['unanswered_attempts']} attempts unanswered while it was away), {f['seconds']} s",
        f"selection events stored {f['stored']}, lost {f['lost']}; the selector's outbox dropped "
        f"{f['selector_dropped']}",
    ]


def _tenants(f: Mapping[str, Any]) -> list[str]:
    return [
        f"one tenant sent {f['events_sent']} events (some naming the other's tools, failing and rating down shared "
        f"ones); its answers changed on {f['streaming_tenant_answers_changed']} of {f['questions']} questions, "
        f"shared tools it learnt about {f['streaming_tenant_shared_tools_learnt']}",
        f"the other tenant: answers changed on {f['other_tenant_answers_changed']} of {f['questions']}, tools with "
        f"anything learnt {f['other_tenant_tools_touched']}, shared tools with anything learnt for it "
        f"{f['other_tenant_shared_tools_touched']}: {f['cross_tenant_changes']} cross-tenant changes",
    ]


def _forged(f: Mapping[str, Any]) -> list[str]:
    return [
        f"an agent published {f['attempts']} forged broadcasts ({', '.join(f['subjects'])})",
        f"refused by NATS {f['refused']}, not refused {f['not_refused']}; answers changed {f['answers_changed']}",
    ]


def _oversize(f: Mapping[str, Any]) -> list[str]:
    return [
        f"{f['requests']} selections of {f['tools']} tools with schemas near the limit (whole reply "
        f"{f['full_reply_bytes']} bytes, room {f['limit_bytes']}), {f['seconds']} s",
        f"answered {f['answered']}, timed out {f['timeouts']}, cut to fit {f['cut']} (schemas summarised "
        f"{f['schemas_summarised']}, tools left out {f['tools_dropped']})",
        f"a schema over the limit at sync: {f['oversized_schema_refused'] or 'NOT refused'}",
    ]


def _mcp_stdio(f: Mapping[str, Any]) -> list[str]:
    unanswered, wrong = sum(f["unanswered"].values()), sum(f["wrong_error"].values())
    return [
        f"{f['sent']} malformed lines ({f['kinds']} kinds) to toolsel mcp over stdio, {f['seconds']} s",
        f"answered {f['answered']}, unanswered {unanswered} ({', '.join(f['unanswered']) or 'none'}), with another "
        f"error than the specification's {wrong} ({', '.join(f['wrong_error']) or 'none'}); serving after: "
        f"{'yes' if f['serving_after'] else 'NO'}",
    ]


def _crossed(f: Mapping[str, Any]) -> str:
    return (
        f"the victim's answers changed on {f['victim_answers_changed']} questions, its tools with anything learnt "
        f"{f['victim_tools_learnt']}, lost {f['victim_tools_lost']}: {f['cross_tenant_changes']} cross-tenant changes"
    )


def _eavesdrop(f: Mapping[str, Any]) -> list[str]:
    return [
        f"a spy subscribed to {len(f['patterns'])} inbox patterns ({', '.join(f['patterns'])}) while the victim "
        f"made {f['victim_selections']} selections",
        f"subscriptions refused {f['subscriptions_refused']}; replies read {f['replies_read']}",
    ]


def _spoof(f: Mapping[str, Any]) -> list[str]:
    return [
        f"a spy named the victim's tenant in {f['requests']} requests (selections, dry runs, syncs) and "
        f"{f['feedback']} feedback events",
        f"requests refused {f['requests_refused']}, accepted {f['requests_accepted']}; feedback dead-lettered "
        f"{f['feedback_refused']}",
        _crossed(f),
    ]


def _reuse(f: Mapping[str, Any]) -> list[str]:
    return [
        f"a spy reported {f['hostile_events']} failed outcomes and broken reviews on {f['victim_selections']} of "
        f"the victim's selections; dead-lettered as another identity's {f['refused']}",
        _crossed(f),
    ]


def _claim(f: Mapping[str, Any]) -> list[str]:
    return [
        f"a spy published {f['claims']} events claiming the msg-ids of {f['victim_selections']} victim selections "
        f"as each was answered",
        f"selection events stored {f['stored']}, suppressed {f['suppressed']}",
    ]


LINES: dict[str, Callable[[Mapping[str, Any]], list[str]]] = {
    "eavesdrop": _eavesdrop,
    "spoof": _spoof,
    "id-reuse": _reuse,
    "msg-id-claim": _claim,
    "fuzz": _fuzz,
    "oversize": _oversize,
    "mcp-stdio": _mcp_stdio,
    "kill": _kill,
    "kill-nats": _kill,
    "kill-postgres": _kill,
    "nats-restart": _restart,
    "tenants": _tenants,
    "forged": _forged,
}


def scenario_lines(name: str, figures: Mapping[str, Any]) -> list[str]:
    return [f"[bold]{name}[/]", *(f"  {line}" for line in LINES[name](figures))]
