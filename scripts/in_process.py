"""A catalog built in process from tool specs and their vectors, as the store would hand it to a selector: for the
scripts that measure the selector's own work or fit its models without a stack."""

import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from pgvector import Vector

from toolsel.services.selector.catalog import Catalog, build_catalog
from toolsel.settings import Settings

PLUGIN = "bench"


def catalog_row(
    spec: Mapping[str, Any], vector: npt.NDArray[np.float32], category: str | None = None
) -> dict[str, Any]:
    """One registry row of a shared tool (``tenant_id`` ``*``: every tenant's requests see it), with no usage
    yet: the shape ``toolsel.store.catalog`` reads."""
    return {
        "plugin_id": PLUGIN,
        "name": spec["name"],
        "tenant_id": "*",
        "category": category,
        "spec": json.dumps(spec),
        "embedding": Vector(vector),
        "is_always_pinned": False,
        "pin_weight": 0,
        "quarantined": False,
        "rating_sum": 0,
        "rating_count": 0,
        "calls": 0,
        "failures": 0,
        "latency_sum_ms": 0,
        "latency_count": 0,
    }


def in_process_catalog(
    specs: Sequence[Mapping[str, Any]],
    vectors: npt.NDArray[np.float32],
    settings: Settings,
    categories: Sequence[str | None] | None = None,
) -> Catalog:
    """The catalog of these tools (``specs[i]`` with ``vectors[i]``, in ``categories[i]`` where given), no rules
    or usage."""
    labels = categories or [None] * len(specs)
    rows = [catalog_row(s, v, c) for s, v, c in zip(specs, vectors, labels, strict=True)]
    return build_catalog(rows, [], [], settings)
