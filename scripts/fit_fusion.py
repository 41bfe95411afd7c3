"""Refit the fusion (BM25's z-score factor and confidence scale) and the confidence model for trained models,
leaving one set out: each set is ranked by the model that never saw it, and each set's number comes from the
parameters fitted on the other sets only.

    python scripts/fit_fusion.py SETS_DIR --model metatool=DIR [--model SET=DIR ...] [--max-queries 2000]

Each ``--model SET=DIR`` names the model that left SET out (``toolsel train-model --leave-out SET``; its card gives
its name); ``--model SET=stock`` ranks SET with the stock all-MiniLM-L6-v2. Each set's tools and queries are
embedded once (the embedder's query cache holds every query), then every point of the grid ranks the seeded sample
of the set's queries that ``toolsel eval`` ranks through the product's selector in process (full pipeline, top 10,
dry run, no Thompson draws): only the pure stages run again, never the model. For each set S, the point with the
best mean NDCG@10 over the other sets is S's fusion, and S's NDCG@10 at that point is its cold number; the
confidence model is fitted at that point on the other sets' rows (``scripts/fit_confidence.py``) and its
calibration error read on S. The shipped defaults are the point and coefficients fitted on all the sets. Prints
a table and the defaults as JSON (``TOOLSEL_FUSION_ZSCORE_BM25_FACTOR``, ``TOOLSEL_BM25_CONFIDENCE_SCALE``,
``TOOLSEL_CONFIDENCE_COEFFICIENTS``).
"""

import argparse
import asyncio
import itertools
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from fit_confidence import Matrix, Measured, SetCatalog, ece, fit

from toolsel.embedder import MODEL_NAME
from toolsel.evaluation.dataset import load_set
from toolsel.evaluation.metrics import ndcg_at
from toolsel.evaluation.split import evaluated_sample
from toolsel.runtime import load_model
from toolsel.services.selector import confidence
from toolsel.services.selector.selector import Selector
from toolsel.settings import Settings, get_settings
from toolsel.tuning.card import read_card

Point = tuple[float, float]
"""BM25's z-score factor and its confidence scale."""


@dataclass(frozen=True)
class Fold:
    name: str
    by_point: dict[Point, Measured]

    def ndcg(self, point: Point, relevant: Sequence[frozenset[str]]) -> float:
        rankings = self.by_point[point].rankings
        return float(np.mean([ndcg_at(r, q, 10) for r, q in zip(rankings, relevant, strict=True)]))


def model_settings(base: Settings, model: str) -> Settings:
    """The settings that serve ``model`` (a trained model's directory, or ``stock``), every query kept cached."""
    update: dict[str, object] = {"thompson_sampling": False, "query_cache_size": 1_000_000}
    if model == "stock":
        update |= {"model_dir": None, "embedding_model": MODEL_NAME, "embedding_dim": 384}
    else:
        card = read_card(Path(model))
        if card is None:
            raise SystemExit(f"{model}: no model card (toolsel train-model writes one)")
        update |= {"model_dir": Path(model), "embedding_model": card.name, "embedding_dim": card.dim}
    return base.model_copy(update=update)


def measure_set(folder: Path, model: str, grid: Sequence[Point], args: argparse.Namespace) -> tuple[Fold, list]:
    """Every grid point's rankings and confidence rows of the set's sampled queries, the model run once."""
    bench = load_set(folder)
    settings = model_settings(get_settings(), model)
    embedder = asyncio.run(load_model(settings))
    catalog = SetCatalog.of(bench, settings, embedder)
    queries = evaluated_sample(bench.queries, args.max_queries, args.seed)
    by_point = {}
    for factor, scale in grid:
        at = settings.model_copy(update={"fusion_zscore_bm25_factor": factor, "bm25_confidence_scale": scale})
        by_point[(factor, scale)] = catalog.measure(Selector(at, catalog.catalog, embedder), queries)
        print(f"  {bench.name} factor {factor} scale {scale}", flush=True)
    return Fold(bench.name, by_point), [q.relevant for q in queries]


def best(folds: Sequence[tuple[Fold, list]], grid: Sequence[Point]) -> Point:
    """The point with the best mean NDCG@10 over the folds (each set weighing the same)."""
    return max(grid, key=lambda p: np.mean([fold.ndcg(p, relevant) for fold, relevant in folds]))


def rows(folds: Sequence[tuple[Fold, list]], point: Point) -> list[tuple[Matrix, Matrix]]:
    return [(fold.by_point[point].terms, fold.by_point[point].labels) for fold, _ in folds]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", type=Path)
    parser.add_argument("--model", action="append", required=True, help="SET=DIR (or SET=stock), repeatable")
    parser.add_argument("--factors", default="0.3,0.4,0.5,0.6,0.67,0.8")
    parser.add_argument("--scales", default="20")
    parser.add_argument("--max-queries", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    models = dict(pair.split("=", 1) for pair in args.model)
    grid = list(
        itertools.product((float(f) for f in args.factors.split(",")), [float(s) for s in args.scales.split(",")])
    )
    folds = [measure_set(args.data / name, model, grid, args) for name, model in models.items()]
    shipped = best(folds, grid)
    coefficients = fit(rows(folds, shipped))
    print(f"{'set':<16} {'fitted without it':>18} {'NDCG@10':>8} {'ECE':>6} | {'at the shipped point':>20} {'ECE':>6}")
    for i, (fold, relevant) in enumerate(folds):
        others = [f for j, f in enumerate(folds) if j != i]
        point = best(others, grid)
        own = fold.by_point[point]
        alone = ece(own.terms, own.labels, fit(rows(others, point)))
        at_shipped = fold.by_point[shipped]
        print(
            f"{fold.name:<16} {point!s:>18} {fold.ndcg(point, relevant):>8.3f} {alone:>6.3f} |"
            f" {fold.ndcg(shipped, relevant):>20.3f} {ece(at_shipped.terms, at_shipped.labels, coefficients):>6.3f}"
        )
    print("NDCG@10 by point:")
    for point in grid:
        print(f"  {point}: " + "  ".join(f"{f.name} {f.ndcg(point, r):.3f}" for f, r in folds))
    defaults = {
        "fusion_zscore_bm25_factor": shipped[0],
        "bm25_confidence_scale": shipped[1],
        "confidence_coefficients": {t: round(float(v), 4) for t, v in zip(confidence.TERMS, coefficients, strict=True)},
    }
    print(json.dumps(defaults))


if __name__ == "__main__":
    main()
