"""A catalog built in process from tool specs and their vectors, as the store would hand it to a selector: for the
scripts that measure the selector's own work or fit its models without a stack."""

import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from pgvector import Vector

from toolsel.bench.catalog import catalog_of
from toolsel.evaluation.dataset import BenchSet
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
        "written": 0,
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


def bench_tools(sets: Sequence[BenchSet], size: int, dim: int) -> tuple[list[dict[str, Any]], npt.NDArray[np.float32]]:
    """``size`` tools of these sets as ``toolsel bench`` picks them, as a sync names them, with random unit vectors
    (seeded; the vectors' values do not change the selector's work)."""
    rng = np.random.default_rng(0)
    specs, vectors = [], []
    for tool in catalog_of([t for s in sets for t in s.tools], size):
        name = tool.name.replace("/", "_").strip()[:120]  # as a sync's names are
        specs.append({"name": name, "description": tool.description, "parameters": tool.parameters})
        vector = rng.standard_normal(dim).astype(np.float32)
        vectors.append(vector / np.linalg.norm(vector))
    return specs, np.array(vectors)
