"""Reply: the chosen tools with their scores as the reply shows them, and the selection event that
records it, each validated once as a whole (nested models built in one pass, not one constructor per tool)."""

import time
from typing import Any
from uuid import uuid4

import numpy as np

from toolsel.contracts import SelectionEvent, SelectReply, SelectRequest
from toolsel.services.selector import stages
from toolsel.services.selector.catalog import Catalog
from toolsel.services.selector.pipeline.advice import advice
from toolsel.services.selector.pipeline.candidates import Candidates
from toolsel.services.selector.pipeline.choose import Choice
from toolsel.services.selector.pipeline.held import Held
from toolsel.services.selector.pipeline.rerank import Scored
from toolsel.services.selector.pipeline.visibility import Visible
from toolsel.services.selector.signals.vector import VECTOR


def run(
    held: Held,
    request: SelectRequest,
    visible: Visible,
    found: Candidates,
    scored: Scored,
    choice: Choice,
    reasons: list[str],
    method: str,
    parts: list[str],
    degraded: list[str],
    started: float,
) -> tuple[SelectReply, SelectionEvent]:
    """``reasons``: each chosen tool's (the ``reason`` stage); ``parts``: the request's atomic needs (one: the
    query was not split); ``started``: when handling began (``time.perf_counter``), which the reply's
    ``latency_ms`` counts from."""
    cat, final = held.catalog, choice.final
    exploring, pins = set(choice.explored.tolist()), set(choice.pinned.tolist())
    tools = [
        _scored(cat, r, shown, r in pins, r in exploring, why, visible.usable, choice.related.get(r))
        for r, shown, why in zip(final.tolist(), scored.shown(found.at(final)), reasons, strict=True)
    ]
    counts = {**visible.counts, "retrieved": int(found.merged.size), "returned": int(final.size)}
    selected_tokens = int(cat.schema_tokens[final].sum())
    hints = {
        f"{t['plugin_id']}/{t['category']}": hint
        for t in tools
        if t["category"] and (hint := cat.workflow_hints.get((t["plugin_id"], t["category"])))
    }
    given = any(t["confidence"] >= held.settings.no_match_confidence for t in tools if t["related_to"] is None)
    fits_over_budget = not given and _fits(held, found, scored, choice.over_budget, choice.related)
    no_match = not given and not fits_over_budget
    if len(parts) > 1:
        method += f"+decomposed({len(parts)})"
    latency = (time.perf_counter() - started) * 1000
    reply = SelectReply.model_validate(
        {
            "selection_id": uuid4(),
            "tools": tools,
            "intent": found.intent,
            "context_key": found.context_key,
            "method": method,
            "degraded": degraded,
            "candidate_counts": counts,
            "workflow_hints": hints,
            "tokens": {
                "selected": selected_tokens,
                "catalog": visible.visible_tokens,
                "saved": max(visible.visible_tokens - selected_tokens, 0),
            },
            "latency_ms": latency,
            "no_match": no_match,
            "sub_queries": parts if len(parts) > 1 else [],
            "over_budget": [cat.keys[r] for r in choice.over_budget.tolist()],
            "advice": advice(no_match, int((~stages.member(found.rows[found.merged], final)).sum()), fits_over_budget),
        }
    )
    offered_for = [None if i is None else parts[i] for i in choice.needs]
    event = SelectionEvent.model_validate(
        {
            "selection_id": reply.selection_id,
            "tenant_id": request.tenant_id,
            "user_id": request.user_id,
            "session_id": request.session_id,
            "query": request.query,
            "page": request.page,
            "tier": request.tier,
            "role": request.role,
            "intent": found.intent,
            "context_key": found.context_key,
            "method": method,
            "tools": [
                {
                    "plugin_id": t["plugin_id"],
                    "name": t["name"],
                    "rank": i,
                    "score": t["score"],
                    "pinned": t["pinned"],
                    "exploration": t["exploration"],
                    "sub_query": need,
                    "similarity": t["breakdown"][VECTOR.field],
                }
                for i, (t, need) in enumerate(zip(tools, offered_for, strict=True))
            ],
            "candidate_count": counts["retrieved"],
            "latency_ms": latency,
            "tokens_selected": selected_tokens,
            "tokens_catalog": visible.visible_tokens,
        }
    )
    return reply, event


def _fits(held: Held, found: Candidates, scored: Scored, rows: stages.Rows, related: dict[int, int]) -> bool:
    """Whether any of ``rows`` (a tool given only as another's related tool aside) clears the no-match
    confidence: a fit the token budget left out is still one the catalog holds."""
    ranked = np.array([r for r in rows.tolist() if r not in related], dtype=np.int64)
    return bool((scored.confidence[found.at(ranked)] >= held.settings.no_match_confidence).any())


def _ref(cat: Catalog, row: int) -> dict[str, str]:
    """A tool's reference as the reply carries it (``ToolRef``'s fields)."""
    return {"plugin_id": cat.plugin_ids[row], "name": cat.names[row]}


def _scored(
    cat: Catalog,
    row: int,
    shown: tuple[float, float, dict[str, float]],
    pinned: bool,
    exploration: bool,
    reason: str,
    usable: stages.Mask,
    related_to: int | None = None,
) -> dict[str, Any]:
    """Catalog row ``row`` with its scores (``Scored.shown``), as ``ScoredTool``'s fields; of the tools its plugin
    declares related, only those the request may be given (``usable``): another tenant's private tool is never
    named, nor a tool quarantined for this tenant or excluded by the request."""
    spec = cat.spec(row)
    score, sure, breakdown = shown
    parameters = spec.get("parameters")
    return {
        "plugin_id": cat.plugin_ids[row],
        "name": cat.names[row],
        "display_name": str(spec.get("display_name") or ""),
        "description": str(spec.get("description") or ""),
        "parameters": parameters if isinstance(parameters, dict) else {},
        "category": cat.categories[row],
        "score": score,
        "confidence": sure,
        "pinned": pinned,
        "exploration": exploration,
        "usage_hint": str(spec.get("usage_hint") or "") or None,
        "related_tools": [_ref(cat, r) for r in cat.related(row) if usable[r]],
        "related_to": None if related_to is None else _ref(cat, related_to),
        "breakdown": breakdown,
        "reason": reason,
        "server": str(spec.get("server") or ""),
        "execution_type": spec.get("execution_type") or "internal",
        "execution_config": config if isinstance(config := spec.get("execution_config"), dict) else {},
    }
