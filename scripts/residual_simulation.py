"""What the listwise residuals (``learner.usage.Listwise``) add to the vector signal, and how their rate
and bound move it, without a stack: the declared vectors alone against the declared vectors plus residuals moved
by each streamed query's step over the 10 tools it would have been offered.

    python scripts/residual_simulation.py SET_DIR --events 10000 --holdout 1000

SET_DIR is any folder in the evaluation-set format (``tools.jsonl`` + ``queries.jsonl``, as ``toolsel eval``
reads). The split and the stream are ``toolsel eval --online``'s (same seed, same held-out slice); the step and
the bound are the learner's own. Each streamed query is reviewed as the online evaluation's agent reviews it: its
relevant tools among the offered ones perfect, the others unrelated. Prints held-out R@5 / NDCG@10 per variant;
the results are in docs/results.md (Quality).
"""

import argparse
import asyncio
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from toolsel.evaluation.dataset import load_set, tool_spec, wire_names
from toolsel.evaluation.metrics import mean_metrics, query_metrics
from toolsel.evaluation.online import holdout_split, stream
from toolsel.runtime import load_model
from toolsel.services.indexer.hashing import embedding_text
from toolsel.services.learner.usage import Listwise
from toolsel.settings import get_settings

Matrix = npt.NDArray[np.float64]
OFFERED = 10
"""Tools a streamed query is offered (the online evaluation's k)."""


def residuals(declared: Matrix, queries: Matrix, relevant: Sequence[set[int]], step: Listwise) -> Matrix:
    """Every tool's residual after the stream: each query's offered tools (top ``OFFERED`` by cosine plus
    residual, as the selector ranks them) take the learner's listwise step, in stream order, along the query less
    the mean of the queries before it when the step is ``centred``."""
    moved, before = np.zeros_like(declared), np.cumsum(queries, axis=0) - queries
    for i, (q, wanted) in enumerate(zip(queries, relevant, strict=True)):
        scores = declared @ q + moved @ q
        offered = np.argpartition(-scores, OFFERED)[:OFFERED]
        c = step.coefficients(scores[offered], np.array([t in wanted for t in offered]))
        along = q - before[i] / i if step.centred and i else q
        if c.any():
            for t, ct in zip(offered, c, strict=True):
                moved[t] = step.held(moved[t] + step.rate * ct * along)
    return moved


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path", type=Path)
    parser.add_argument("--events", type=int, default=2000)
    parser.add_argument("--holdout", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    settings = get_settings()
    bench = load_set(args.path)
    names = wire_names([t.name for t in bench.tools])
    column = {t.name: i for i, t in enumerate(bench.tools)}
    embedder = asyncio.run(load_model(settings, cache=False))
    declared = embedder.embed([embedding_text(tool_spec(t, names[t.name])) for t in bench.tools]).astype(np.float64)
    held, pool, _ = holdout_split(bench.queries, args.holdout, args.seed)
    streamed = stream(pool, args.events)
    texts = list(dict.fromkeys(q.text for q in streamed))
    vectors = dict(zip(texts, embedder.embed(texts).astype(np.float64), strict=True))
    queries = np.vstack([vectors[q.text] for q in streamed])
    relevant = [{column[n] for n in q.relevant if n in column} for q in streamed]
    held_vectors = embedder.embed([q.text for q in held]).astype(np.float64)
    tool_names = np.array([t.name for t in bench.tools])

    def measured(moved: Matrix) -> str:
        ranked = np.argsort(-(held_vectors @ (declared + moved).T), axis=1)[:, :10]
        m = mean_metrics(query_metrics(list(tool_names[r]), q.relevant) for r, q in zip(ranked, held, strict=True))
        return f"R@5 {m['R@5']:.3f}  NDCG@10 {m['NDCG@10']:.3f}"

    shipped = Listwise.from_settings(settings)
    print(f"{bench.name}: {len(held)} held-out queries, {len(streamed)} streamed")
    print(f"{'declared vectors only':<54} {measured(np.zeros_like(declared))}")
    variants = [(shipped.rate, shipped.max_norm, centred) for centred in (False, True)]
    variants += [(rate, max_norm, shipped.centred) for rate, max_norm in ((0.05, 1.0), (0.2, 1.0), (0.1, 0.3))]
    for rate, max_norm, centred in variants:
        step = Listwise(rate, shipped.sharpness, max_norm, centred)
        label = f"residuals, rate {rate}, bound {max_norm}" + (", centred" if centred else "")
        label += " (default)" if step == shipped else ""
        print(f"{label:<54} {measured(residuals(declared, queries, relevant, step))}")


if __name__ == "__main__":
    main()
