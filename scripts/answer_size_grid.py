"""Choose the ``k: auto`` rule (``TOOLSEL_AUTO_K_*``): for each set, the product's full-pipeline top 20 of
``toolsel eval``'s seeded sample of its queries, with each tool's calibrated confidence, and for each rule of a grid
the mean tools it would return and Complete@returned, beside fixed k=5 and k=10.

    python scripts/answer_size_grid.py SETS_DIR [--max-queries 600] [--seed 0] [--vectors CACHE_DIR]
        [--model SET=DIR ...] [--floors 0.02,0.03,0.04] [--shares 0,0.05,0.1,0.15] [--ceilings 8,10,15]

Each set's tools are embedded as the indexer embeds them (``--vectors`` keeps them between runs) and ranked in
process (dry run, no Thompson draws). ``--model SET=DIR`` ranks SET with the model in DIR (the one trained without
SET, so that its confidence is as sure as on a catalog it never saw), else the configured model. A rule keeps every
tool of the top 20 whose confidence reaches a floor and a share of the best one's, within the floor of one tool and
a ceiling (``toolsel.services.selector.pipeline.count``).
"""

import asyncio
from collections.abc import Sequence
from itertools import product

import numpy as np
from fit_confidence import SetCatalog, set_folders, sets_parser
from fit_fusion import model_settings

from toolsel.contracts import SelectRequest
from toolsel.evaluation.dataset import load_set
from toolsel.evaluation.split import evaluated_sample
from toolsel.runtime import load_model
from toolsel.services.selector.pipeline.count import auto
from toolsel.services.selector.selector import Selector
from toolsel.settings import get_settings

DEPTH = 20


def main(argv: Sequence[str] | None = None) -> None:
    parser = sets_parser(__doc__, 600)
    parser.add_argument("--model", action="append", default=[], help="SET=DIR: the model that ranks SET")
    parser.add_argument("--floors", default="0.02,0.03,0.04", help="the grid's floors")
    parser.add_argument("--shares", default="0,0.05,0.1,0.15", help="its shares of the best")
    parser.add_argument("--ceilings", default="8,10,15", help="its ceilings")
    args = parser.parse_args(argv)
    models = dict(pair.split("=", 1) for pair in args.model)
    settings = get_settings().model_copy(update={"thompson_sampling": False})
    ranked: dict[str, list[tuple[list[str], np.ndarray, frozenset[str]]]] = {}
    for folder in set_folders(args.data):
        bench = load_set(folder)
        served = model_settings(settings, models[bench.name]) if bench.name in models else settings
        embedder = asyncio.run(load_model(served, cache=False))
        model = served.embedding_model.replace("/", "_")
        cached = None if args.vectors is None else args.vectors / f"{bench.name}-{model}.npy"
        catalog = SetCatalog.of(bench, served, embedder, cached)
        selector = Selector(served, catalog.catalog, embedder)
        rows = []
        for query in evaluated_sample(bench.queries, args.max_queries, args.seed):
            reply, _ = selector.select(SelectRequest(query=query.text[:2000], dry_run=True, k=DEPTH, seed=0))
            names = [catalog.named.get(t.name, "") for t in reply.tools]
            rows.append((names, np.array([t.confidence for t in reply.tools]), query.relevant))
        ranked[bench.name] = rows

    def complete(sizes: Sequence[int], rows: list[tuple[list[str], np.ndarray, frozenset[str]]]) -> float:
        return float(np.mean([relevant <= set(names[:n]) for n, (names, _, relevant) in zip(sizes, rows, strict=True)]))

    print("rule" + "".join(f"  {name:>22}" for name in ranked))
    for k in (5, 10):
        print(f"k={k:<18}" + "".join(f"  {k:>10.2f} / {complete([k] * len(r), r):.3f}" for r in ranked.values()))
    floors, shares = [float(f) for f in args.floors.split(",")], [float(s) for s in args.shares.split(",")]
    for floor, share, ceiling in product(floors, shares, [int(c) for c in args.ceilings.split(",")]):
        rule = settings.model_copy(
            update={"auto_k_min_confidence": floor, "auto_k_relative_confidence": share, "auto_k_ceiling": ceiling}
        )
        line = f"{floor:.3f} {share:.2f} {ceiling:>2}      "
        for rows in ranked.values():
            sizes = [auto(sure, rule) for _, sure, _ in rows]
            line += f"  {np.mean(sizes):>10.2f} / {complete(sizes, rows):.3f}"
        print(line)


if __name__ == "__main__":
    main()
