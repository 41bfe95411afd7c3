"""Fit the confidence model (``TOOLSEL_CONFIDENCE_COEFFICIENTS``) on evaluation sets and say how well it is
calibrated on each set, fitted on all of them and fitted on the others only (leave one set out).

    python scripts/fit_confidence.py SETS_DIR [--max-queries 2000] [--seed 0] [--vectors CACHE_DIR]

SETS_DIR holds evaluation sets in ``toolsel eval``'s format, one folder each. Each set's tools are embedded as the
indexer embeds them (``--vectors`` keeps them between runs), the product's selector ranks ``toolsel eval``'s
seeded sample of its queries in process (full pipeline, top 10, dry run, no Thompson draws), and every returned
tool gives one row: the signals the selector's confidence model read (``toolsel.services.selector.confidence.Signals``)
and whether the tool is relevant. A logistic regression over them (Newton's method in numpy, each set weighing
the same) gives the coefficients; the expected calibration error is ``toolsel eval``'s. Prints the errors and the
coefficients as JSON, ready for ``TOOLSEL_CONFIDENCE_COEFFICIENTS``.
"""

import argparse
import asyncio
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
from in_process import in_process_catalog

from toolsel.contracts import SelectRequest
from toolsel.embedder import Embedder
from toolsel.evaluation.calibration import calibration
from toolsel.evaluation.dataset import BenchSet, Query, load_set, tool_spec, wire_names
from toolsel.evaluation.split import evaluated_sample
from toolsel.runtime import load_model
from toolsel.services.indexer.hashing import embedding_text
from toolsel.services.selector import confidence
from toolsel.services.selector.catalog import Catalog
from toolsel.services.selector.selector import Selector
from toolsel.settings import Settings, get_settings

Matrix = npt.NDArray[np.float64]
RIDGE = 1e-6
"""A touch of L2 on the coefficients, so that a term no row moves stays at 0 instead of failing the solve."""


def rows_of(folder: Path, settings: Settings, embedder: Embedder, args: argparse.Namespace) -> tuple[Matrix, Matrix]:
    """The terms and relevance of every tool returned for the set's sampled queries."""
    bench = load_set(folder)
    cached = None if args.vectors is None else args.vectors / f"{bench.name}.npy"
    catalog = SetCatalog.of(bench, settings, embedder, cached)
    measured = catalog.measure(
        Selector(settings, catalog.catalog, embedder), evaluated_sample(bench.queries, args.max_queries, args.seed)
    )
    return measured.terms, measured.labels


@dataclass(frozen=True)
class Measured:
    rankings: list[list[str]]
    """Each query's returned tools by their set names, best first."""
    terms: Matrix
    labels: Matrix


@dataclass(frozen=True)
class SetCatalog:
    """An evaluation set's tools in an in-process catalog, embedded as the indexer embeds them."""

    catalog: Catalog
    named: dict[str, str]
    """The set's tool name of each wire name."""

    @classmethod
    def of(
        cls,
        bench: BenchSet,
        settings: Settings,
        embedder: Embedder,
        cached: Path | None = None,
        categories: Mapping[str, str] | None = None,
    ) -> "SetCatalog":
        """The catalog of ``bench``'s tools (their vectors kept in ``cached`` between runs, where given; each in its
        ``categories`` entry, where given)."""
        names = wire_names([t.name for t in bench.tools])
        specs = [tool_spec(t, names[t.name]) for t in bench.tools]
        if cached is not None and cached.exists():
            vectors = np.load(cached)
        else:
            vectors = embedder.embed([embedding_text(s) for s in specs])
            if cached is not None:
                cached.parent.mkdir(parents=True, exist_ok=True)
                np.save(cached, vectors)
        labels = [(categories or {}).get(t.name) for t in bench.tools]
        catalog = in_process_catalog([s.model_dump(exclude_none=True) for s in specs], vectors, settings, labels)
        return cls(catalog, {wire: name for name, wire in names.items()})

    def measure(self, selector: Selector, queries: Sequence[Query]) -> Measured:
        """The selector's top 10 for each query (full pipeline, dry run), with each returned tool's confidence
        terms and relevance."""
        rankings, terms, labels = [], [], []
        for query in queries:
            selection = selector.run(SelectRequest(query=query.text[:2000], dry_run=True, k=10, seed=0))
            reply, scored = selection.reply, selection.scored
            at = {int(row): i for i, row in enumerate(selection.candidates.rows)}
            picked = [at[self.catalog.rows[tool.key]] for tool in reply.tools]
            terms.append(confidence.terms(scored.signals, len(reply.sub_queries) > 1)[picked])
            ranked = [self.named.get(tool.name, "") for tool in reply.tools]
            rankings.append(ranked)
            labels.append([name in query.relevant for name in ranked])
        return Measured(rankings, np.vstack(terms), np.concatenate(labels).astype(np.float64))


def fit(sets: Sequence[tuple[Matrix, Matrix]]) -> Matrix:
    """Maximum-likelihood logistic regression, each set's rows weighing 1 / its size (the weights scaled to mean 1)."""
    x = np.vstack([t for t, _ in sets])
    y = np.concatenate([labels for _, labels in sets])
    w = np.concatenate([np.full(len(labels), 1.0 / len(labels)) for _, labels in sets])
    w *= len(w) / w.sum()
    b = np.zeros(x.shape[1])
    for _ in range(100):
        p = 1.0 / (1.0 + np.exp(-np.clip(x @ b, -50.0, 50.0)))
        gradient = x.T @ (w * (p - y)) + RIDGE * b
        hessian = (x * (w * p * (1 - p))[:, None]).T @ x + RIDGE * np.eye(x.shape[1])
        step = np.linalg.solve(hessian, gradient)
        b -= step
        if np.abs(step).max() < 1e-9:
            break
    return b


def ece(terms: Matrix, labels: Matrix, b: Matrix) -> float:
    p = 1.0 / (1.0 + np.exp(-np.clip(terms @ b, -50.0, 50.0)))
    return float(calibration(list(p), list(labels.astype(bool)))["ece"])


def sets_parser(doc: str, max_queries: int) -> argparse.ArgumentParser:
    """The arguments of every in-process measurement over the evaluation sets: their folder, the seeded sample's
    size and seed, and where the sets' tool vectors are kept between runs."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("data", type=Path, help="folder of evaluation sets (one folder per set)")
    parser.add_argument("--max-queries", type=int, default=max_queries)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--vectors", type=Path, default=None)
    return parser


def set_folders(data: Path) -> list[Path]:
    """The evaluation sets under ``data``, in name order."""
    return sorted(p for p in data.iterdir() if (p / "queries.jsonl").exists())


def main(argv: Sequence[str] | None = None) -> None:
    args = sets_parser(__doc__, 2000).parse_args(argv)
    settings = get_settings().model_copy(update={"thompson_sampling": False})
    embedder = asyncio.run(load_model(settings, cache=False))
    folders = set_folders(args.data)
    sets = {f.name: rows_of(f, settings, embedder, args) for f in folders}
    shipped = fit(list(sets.values()))
    print(f"{'set':<16} {'rows':>6} {'relevant':>8} {'ECE, all':>9} {'ECE, others':>12}")
    for name, (terms, labels) in sets.items():
        others = fit([rows for other, rows in sets.items() if other != name])
        print(f"{name:<16} {len(labels):>6} {labels.mean():>8.3f} {ece(terms, labels, shipped):>9.3f}", end="")
        print(f" {ece(terms, labels, others):>12.3f}")
    print(json.dumps({term: round(float(v), 4) for term, v in zip(confidence.TERMS, shipped, strict=True)}))


if __name__ == "__main__":
    main()
