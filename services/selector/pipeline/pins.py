"""Which pins an answer shows: a pin its plugin scoped (``ToolSpec.pin_scope``) joins only the requests its scope
holds for (a page pattern, the category of the tool nearest the query or one of the page's, its similarity to the
query reaching a floor), and is ranked like any tool in the others, so a query that asks for it still finds it; an
unscoped pin joins every answer (seed 000), as does one that only an organisation's pin rule pinned."""

from collections.abc import Mapping

import numpy as np

from toolsel.contracts import SelectRequest
from toolsel.pages import page_matches
from toolsel.services.selector import stages
from toolsel.services.selector.pipeline.candidates import Candidates
from toolsel.services.selector.pipeline.held import Held
from toolsel.services.selector.pipeline.rerank import Scored
from toolsel.services.selector.signals.vector import VECTOR


def shown(held: Held, request: SelectRequest, pinned: stages.Rows, found: Candidates, scored: Scored) -> stages.Rows:
    """The pins among ``pinned`` whose scope holds for this request."""
    cat = held.catalog
    if not cat.pin_scoped[pinned].any():
        return pinned
    scopes = [cat.spec(row).get("pin_scope") if cat.pin_scoped[row] else None for row in pinned.tolist()]
    mapped = stages.page_categories(cat.page_mappings, request.page, cat.category_parents)
    categories = {category for _, category in mapped}
    if found.nearest_category:
        categories.add(found.nearest_category)
    near = scored.breakdown[VECTOR.field][found.at(pinned)]
    keep = [
        not isinstance(scope, Mapping) or in_scope(scope, request.page, categories, similarity)
        for scope, similarity in zip(scopes, near.tolist(), strict=True)
    ]
    result: stages.Rows = pinned[np.array(keep, dtype=bool)]
    return result


def in_scope(scope: Mapping[str, object], page: str, categories: set[str], similarity: float) -> bool:
    """Whether a pin scoped so joins a request on ``page``, of these ``categories`` (its intent's and its page's),
    whose query the pin's vector is ``similarity`` near."""
    pages, wanted, floor = scope.get("pages") or [], scope.get("categories") or [], scope.get("min_similarity")
    return (
        (bool(page) and isinstance(pages, list) and any(page_matches(str(p), page) for p in pages))
        or (isinstance(wanted, list) and not categories.isdisjoint(wanted))
        or (isinstance(floor, int | float) and similarity >= floor)
    )
