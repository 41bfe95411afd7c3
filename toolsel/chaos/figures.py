"""The arithmetic of the figures, apart from the I/O that gathers them: how a reply is classed, how events are
accounted for, what counts as lost or applied twice, and which answers changed."""

import hashlib
import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from toolsel.chaos.hostile import id_field
from toolsel.contracts import ErrorCode, SelectReply

OK = "ok"
TIMEOUT = "timeout"
NO_RESPONDERS = "no_responders"
UNREADABLE = "unreadable"
"""A reply that is neither a result nor a typed error: not JSON, or an error without a known code."""
UNTYPED = (TIMEOUT, NO_RESPONDERS, UNREADABLE, ErrorCode.INTERNAL.value)
"""What a hostile request must never get."""


def verdict(reply: bytes) -> str:
    """``ok`` for a result, the error's code for a typed error reply, else ``unreadable``."""
    try:
        body = json.loads(reply)
    except ValueError:
        return UNREADABLE
    if not isinstance(body, dict) or "error" not in body:
        return OK
    code = body["error"].get("code") if isinstance(body["error"], dict) else None
    return code if code in {c.value for c in ErrorCode} else UNREADABLE


def request_figures(verdicts: Counter[str]) -> dict[str, Any]:
    """One subject's (or every subject's) replies: how many of each kind, and the share that was a result or a
    typed error other than ``internal``."""
    total = sum(verdicts.values())
    typed = sum(n for v, n in verdicts.items() if v not in UNTYPED and v != OK)
    return {
        "sent": total,
        "ok": verdicts[OK],
        "typed_errors": typed,
        "internal": verdicts[ErrorCode.INTERNAL.value],
        "timeouts": verdicts[TIMEOUT],
        "no_responders": verdicts[NO_RESPONDERS],
        "unreadable": verdicts[UNREADABLE],
        "typed_share": (verdicts[OK] + typed) / total if total else 1.0,
        "codes": dict(sorted(verdicts.items())),
    }


def identity(kind: str, body: bytes) -> str:
    """What tells an event apart: its id when it has one (a dead letter may be the event re-encoded), else its
    bytes' digest."""
    try:
        decoded = json.loads(body)
    except (ValueError, RecursionError):
        decoded = None
    own = decoded.get(id_field(kind)) if isinstance(decoded, dict) else None
    return f"id:{own}" if isinstance(own, str) else hashlib.blake2b(body, digest_size=16).hexdigest()


def dead_lettered(kind: str, published: Iterable[bytes], letters: Iterable[bytes]) -> int:
    """How many of the ``published`` events of ``kind`` came back as dead letters (each publication once)."""
    waiting = Counter(identity(kind, b) for b in published)
    found = 0
    for letter in letters:
        key = identity(kind, letter)
        if waiting[key] > 0:
            waiting[key] -= 1
            found += 1
    return found


def event_figures(published: int, dead: int, stuck: int, reasons: Counter[str]) -> dict[str, Any]:
    """One event subject's events: each dead-lettered, applied (acknowledged without a dead letter; a repeat is
    acknowledged and changes nothing) or stuck (still pending after the settle time)."""
    return {
        "published": published,
        "dead_lettered": dead,
        "applied": published - dead - stuck,
        "stuck": stuck,
        "dead_letter_reasons": dict(reasons.most_common()),
    }


REASON_MAX = 60


def reason_kind(reason: str) -> str:
    """A dead letter's reason without its details: ``malformed``, ``failed``..."""
    return reason.split(":", 1)[0].strip()[:REASON_MAX] or "unknown"


def delivery_figures(
    sent: Sequence[str], stored: Iterable[str], calls: int, alpha: float, prior_alpha: float
) -> dict[str, Any]:
    """Outcomes of one successful call each, from distinct actors, on one tool, nothing forgotten
    (``posterior_discount`` 1): each stored one adds exactly 1 to the tool's calls and to its posterior's alpha.
    Lost: sent and never stored. Applied twice: counted beyond the stored ones."""
    kept = set(sent) & set(stored)
    return {
        "sent": len(sent),
        "stored": len(kept),
        "lost": len(sent) - len(kept),
        "calls_counted": calls,
        "double_applied_calls": calls - len(kept),
        "posterior_alpha": alpha,
        "expected_alpha": prior_alpha + len(kept),
        "double_applied_posterior": round(alpha - prior_alpha - len(kept), 6),
    }


def answer(reply: SelectReply) -> list[tuple[Any, ...]]:
    """What a tenant is told, in the parts learning can move: the tools in order with their learnt parts (not the
    recency or the composite, which move with the clock)."""
    return [
        (
            t.plugin_id,
            t.name,
            round(t.breakdown.alpha, 9),
            round(t.breakdown.beta, 9),
            round(t.breakdown.quality, 9),
            round(t.breakdown.fitness, 9),
            round(t.breakdown.user_history, 9),
            round(t.breakdown.performance, 9),
            round(t.breakdown.popularity, 9),
        )
        for t in reply.tools
    ]


def changed(before: Mapping[str, list[tuple[Any, ...]]], after: Mapping[str, list[tuple[Any, ...]]]) -> list[str]:
    """The questions whose answer differs."""
    return [query for query, answered in before.items() if after.get(query) != answered]
