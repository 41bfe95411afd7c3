"""What one selection reads, held for its whole run: the selector's copies as they were when it started (the app
replaces them whole as broadcasts arrive, so a selection in flight keeps the ones it began with)."""

from dataclasses import dataclass

import numpy as np

from toolsel.embedder import Embedder
from toolsel.services.selector.catalog import Catalog, Posteriors
from toolsel.services.selector.history import UserHistory
from toolsel.services.selector.policy import Rule
from toolsel.services.selector.signals.base import ReviewLookup
from toolsel.services.selector.usage import UsageView
from toolsel.settings import Settings


@dataclass(frozen=True)
class Held:
    settings: Settings
    catalog: Catalog
    embedder: Embedder | None
    posteriors: Posteriors
    contexts: int
    """How many contexts the request's tenant has learnt under (``Learnt.contexts``): at
    ``contexts_per_tenant_max``, a page or tier it has not learnt under reads its intent's fallback
    (``candidates.context_of``)."""
    rules: list[Rule]
    history: UserHistory
    scope: str
    """Whose learning the request reads: its tenant's, or the shared scope's (``usage.scope_of``)."""
    reviews: ReviewLookup | None
    """The review index as the request's scope sees it (None without one)."""
    usage: UsageView | None
    """What the request's scope learnt from use, over this catalog copy (None: nothing yet)."""
    counted: list[str]
    """The retrieval signals beside BM25 worth computing (``Selector.counted``)."""
    rng: np.random.Generator | None
    """The request's randomness (seeded when it gives a seed); None when sampling is off."""
