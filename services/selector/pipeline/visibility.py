"""Policy and page filter: the rows a request may see, be given and have retrieved, with their counts."""

from dataclasses import dataclass

import numpy as np

from toolsel.contracts import SelectRequest
from toolsel.services.selector import stages
from toolsel.services.selector.pipeline.held import Held
from toolsel.services.selector.policy import Subject, pinned_mask, visible_mask


@dataclass(frozen=True)
class Visible:
    pool: stages.Mask
    """What retrieval may return: visible, within the filters and the page (the unscoped pins left out when
    reranking: they join the reply on their own; a scoped pin is ranked like any tool where its scope does not
    hold)."""
    scored: stages.Mask
    """What retrieval scores: the pool and, when reranking, the pins the request may be shown, so that a pin's
    relevance and confidence say how well it fits, on the scale of the ranked tools'."""
    allowed: stages.Mask
    """What related tools may add: visible, not excluded, within the request's filters (the page aside)."""
    usable: stages.Mask
    """What the request may be given whatever its filters: visible, not quarantined for it, not excluded (what a
    reply may name as a tool's related tools)."""
    pinned: stages.Rows
    """The pins the request may see (they survive the page and request filters): its plugins' pins and its
    organisation's pin rules', less what its unpin rules unpinned."""
    seen: stages.Mask
    """What the request may see by its tenant and the rules, before quarantine, the session's exclusions and its
    filters: where its intent is looked up, so that none of them changes it. A tool quarantined after it labelled a
    query keeps the label, so the posteriors learnt under it (the outcomes that quarantined it among them) are
    still the ones the query reads."""
    counts: dict[str, int]
    """How many rows each step left (``catalog``, ``visible``, ``filtered``, ``page``): the reply's counts. The
    ``catalog`` is the tenant's (its own tools and the shared ones): other tenants' private tools are not counted,
    so a reply never tells one tenant how many tools another has."""
    visible_tokens: int
    """What the agent would be sent without toolsel: the schema tokens of every visible tool."""
    degraded: list[str]


def run(held: Held, request: SelectRequest) -> Visible:
    cat = held.catalog
    degraded = []
    standing = cat.standing(request.tenant_id)
    counts = {"catalog": int(standing.visible.sum())}
    who = Subject(request.tenant_id, request.user_id, request.page, request.role, request.tier)
    rules, tiers = held.rules, held.settings.tier_order
    seen = standing.visible & visible_mask(rules, who, cat.rows, cat.category_rows, len(cat), tiers)
    mask = seen & ~standing.quarantined
    pins = pinned_mask(rules, who, cat.rows, cat.category_rows, cat.pinned, tiers)
    counts["visible"] = int(mask.sum())
    visible_tokens = int(cat.schema_tokens[mask].sum())
    for ref in request.filters.exclude:
        if (row := cat.rows.get(ref.key)) is not None:
            mask[row] = False
    usable = mask.copy()
    pinned = np.flatnonzero(mask & pins)
    mask = _apply_filters(held, mask, request)
    allowed = mask
    counts["filtered"] = int(mask.sum())
    wanted = stages.page_categories(cat.page_mappings, request.page, cat.category_parents)
    if wanted:
        keep = stages.rows_mask(cat.category_rows, len(cat), (f"{plugin}/{category}" for plugin, category in wanted))
        mask, applied = (mask, True) if _theirs(keep, seen) else stages.narrow(mask, keep)
        if not applied:
            degraded.append("page_filter.empty")
    counts["page"] = int(mask.sum())
    pool, scored = mask, mask
    if request.rerank:
        pool = mask & ~(pins & ~cat.pin_scoped)
        scored = mask.copy()
        scored[pinned] = True
    return Visible(pool, scored, allowed, usable, pinned, seen, counts, visible_tokens, degraded)


def _theirs(keep: stages.Mask, seen: stages.Mask) -> bool:
    """Whether the page's categories hold tools, none of which the request may see: another tenant's mapping of
    its own tools' page, which neither narrows this request nor says that it left nothing."""
    return bool(keep.any()) and not bool((keep & seen).any())


def _apply_filters(held: Held, mask: stages.Mask, request: SelectRequest) -> stages.Mask:
    """The request's own filters: plugins, servers, categories and tags, each looked up in the catalog's index."""
    cat, f = held.catalog, request.filters
    for name, wanted in (
        ("plugins", f.plugins),
        ("servers", f.servers),
        ("categories", f.categories),
        ("tags", f.tags),
    ):
        if wanted:
            mask = mask & stages.rows_mask(cat.filter_rows[name], len(cat), wanted)
    return mask
