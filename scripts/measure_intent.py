"""Measure intent labels (``TOOLSEL_INTENT_LABEL``): how well each keeps queries of one need under one bandit
context, and queries of different needs apart, on evaluation sets whose tools carry a ``category``.

    python scripts/measure_intent.py SETS_DIR [--max-queries 2000] [--seed 0] [--vectors CACHE_DIR]

Each set's tools are embedded as the indexer embeds them and put in an in-process catalog with their categories;
the product's selector labels ``toolsel eval``'s seeded sample of its queries (the nearest tool among all visible,
``TOOLSEL_INTENT_LABEL=tool``; its category is the ``category`` label). Over every pair of queries: *together* is
the share of pairs that need a tool in common which get the same label (what one teaches, the other reads), *apart*
the share of pairs with the same label that need a tool in common (what one teaches is about the other's need);
and how many labels the queries use. A set whose tools carry no category is skipped.
"""

import asyncio
import json
from collections.abc import Sequence
from itertools import combinations
from pathlib import Path

from fit_confidence import SetCatalog, set_folders, sets_parser
from in_process import PLUGIN

from toolsel.contracts import SelectRequest
from toolsel.evaluation.dataset import load_set
from toolsel.evaluation.split import sample
from toolsel.runtime import load_model
from toolsel.services.selector.selector import Selector
from toolsel.settings import get_settings


def categories_of(folder: Path) -> dict[str, str]:
    """Each tool's ``category`` from the set's tools.jsonl (the evaluation reads only name, description and
    parameters)."""
    lines = (json.loads(line) for line in (folder / "tools.jsonl").read_text().splitlines() if line.strip())
    return {str(t["name"]): str(t["category"]) for t in lines if t.get("category")}


def agreement(labels: Sequence[str], needs: Sequence[frozenset[str]]) -> dict[str, float]:
    """``together``, ``apart`` and the number of labels (see the module's docstring)."""
    same_need = same_label = both = 0
    for i, j in combinations(range(len(labels)), 2):
        shared, same = bool(needs[i] & needs[j]), labels[i] == labels[j]
        same_need += shared
        same_label += same
        both += shared and same
    return {
        "together": both / same_need if same_need else 0.0,
        "apart": both / same_label if same_label else 0.0,
        "labels": float(len(set(labels))),
    }


def main(argv: Sequence[str] | None = None) -> None:
    args = sets_parser(__doc__, 2000).parse_args(argv)
    settings = get_settings().model_copy(update={"thompson_sampling": False, "intent_label": "tool"})
    embedder = asyncio.run(load_model(settings, cache=False))
    print(f"{'set':<16} {'label':<9} {'queries':>7} {'labels':>7} {'together':>9} {'apart':>7}")
    for folder in set_folders(args.data):
        categories = categories_of(folder)
        if len(set(categories.values())) < 2:
            continue
        bench = load_set(folder)
        cached = None if args.vectors is None else args.vectors / f"{bench.name}.npy"
        catalog = SetCatalog.of(bench, settings, embedder, cached, categories)
        selector = Selector(settings, catalog.catalog, embedder)
        category_of = {f"{PLUGIN}/{wire}": categories.get(name) for wire, name in catalog.named.items()}
        queries = sample(bench.queries, args.max_queries, args.seed)
        nearest = [selector.select(SelectRequest(query=q.text[:2000], dry_run=True, k=1))[0].intent for q in queries]
        needs = [q.relevant for q in queries]
        for scheme, shown in (("tool", nearest), ("category", [category_of.get(n) or n for n in nearest])):
            got = agreement(shown, needs)
            print(
                f"{bench.name:<16} {scheme:<9} {len(queries):>7} {got['labels']:>7.0f} {got['together']:>9.3f}"
                f" {got['apart']:>7.3f}"
            )


if __name__ == "__main__":
    main()
