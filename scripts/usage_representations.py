"""How a tool's learnt examples should become its retrieval vector: one centroid, several, nearest examples,
vectors trained to tell the tools apart, or the residuals a tune fits on top of the centroid. Vector signal only,
every streamed query an example of each of its relevant tools (the bound an agent that finds every tool would
reach), held-out queries never streamed.

    python scripts/usage_representations.py SET_DIR --events 10000 [--cap 64]

SET_DIR is any folder in the evaluation-set format (``tools.jsonl`` + ``queries.jsonl``, as ``toolsel eval``
reads); docs/results.md names the sets it was run on.

The split and the stream are ``toolsel eval --online``'s (same seed, same held-out slice); the centroid is the
learner's (``toolsel.services.learner.usage.centroid``) blended as the selectors blend it (``Blending``, the settings'
defaults). Prints held-out R@5 / NDCG@10 per representation. The results and what was kept are in
docs/results.md (Quality, learning from use).
"""

import argparse
import asyncio
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from toolsel.blending import Blending, blend
from toolsel.evaluation.dataset import load_set, tool_spec, wire_names
from toolsel.evaluation.metrics import mean_metrics, query_metrics
from toolsel.evaluation.online import holdout_split, stream
from toolsel.runtime import load_model
from toolsel.services.indexer.hashing import embedding_text
from toolsel.services.learner.compaction import kmeans
from toolsel.services.learner.residual_fit import Fit, fitted, judge, problem
from toolsel.services.learner.usage import centroid
from toolsel.settings import get_settings

Matrix = npt.NDArray[np.float32]
Scorer = Callable[[Matrix], Matrix]
"""Held-out query vectors -> one score per (query, tool)."""


def softmax_trained(declared: Matrix, x: Matrix, tools: npt.NDArray[np.int64], epochs: int = 300) -> Matrix:
    """Tool vectors trained, from the declared ones, so that each example's softmax over the whole catalog
    (cosine x 20) picks its tool; only tools with examples move, pulled back towards their declared vector."""
    w = declared.copy()
    learnt = np.zeros(len(w), dtype=bool)
    learnt[tools] = True
    for _ in range(epochs):
        z = 20.0 * (x @ w.T)
        p = np.exp(z - z.max(1, keepdims=True))
        p /= p.sum(1, keepdims=True)
        p[np.arange(len(x)), tools] -= 1.0
        grad = 20.0 * (p.T @ x) / len(x) + 3e-3 * (w - declared)
        w -= 0.5 * np.where(learnt[:, None], grad, 0.0).astype(np.float32)
    result: Matrix = w / np.linalg.norm(w, axis=1, keepdims=True)
    return result


def representations(
    declared: Matrix, examples: dict[int, list[Matrix]], blending: Blending, half_life: float, fit: Fit
) -> dict[str, Scorer]:
    """Each representation of the learnt tools; tools without examples keep their declared vector."""

    def centroids(k: int) -> Scorer:
        def score(held: Matrix) -> Matrix:
            out = held @ declared.T
            for tool, found in examples.items():
                mean = centroid(found, len(found), half_life)
                rows, counts = np.vstack([mean if mean is not None else declared[tool]]), [len(found)]
                if (parts := min(k, len(found) // 4)) > 1:  # the parts beside the whole, the best of them
                    centres, labels = kmeans(np.vstack(found), parts)
                    rows, counts = np.vstack([*centres, *rows]), [*np.bincount(labels).tolist(), *counts]
                weights = blending.declared_weights(np.array(counts, dtype=np.int64))
                mixed = blend(np.repeat(declared[tool : tool + 1], len(rows), 0), rows, weights)
                out[:, tool] = (held @ mixed.T).max(1)
            return out

        return score

    def nearest(m: int) -> Scorer:
        def score(held: Matrix) -> Matrix:
            out = held @ declared.T
            for tool, found in examples.items():
                near = -np.sort(-(held @ np.vstack(found).T), axis=1)[:, :m].mean(1)
                w = blending.declared_weights(np.array([len(found)]))[0]
                out[:, tool] = w * out[:, tool] + (1 - w) * near
            return out

        return score

    def trained(held: Matrix) -> Matrix:
        tools = np.array([t for t, found in examples.items() for _ in found], dtype=np.int64)
        x = np.vstack([v for found in examples.values() for v in found])
        result: Matrix = held @ softmax_trained(declared, x, tools).T
        return result

    def residuals_fitted(held: Matrix) -> Matrix:
        """The one centroid blended, plus the residuals a tune fits (``residual_fit``), read as the tune reads a
        scope's store rows; the fit's verdict on the newest queries printed."""
        means = {tool: centroid(found, len(found), half_life) for tool, found in examples.items()}
        learnt = [(tool, mean, len(examples[tool])) for tool, mean in means.items() if mean is not None]
        # the learner's rows are oldest first; ``examples`` holds each tool's newest first
        positives = sorted(
            ((tool, uuid.uuid4(), v, age) for tool, found in examples.items() for age, v in enumerate(found)),
            key=lambda row: -row[3],
        )
        found = problem(list(enumerate(declared)), learnt, [row[:3] for row in positives], blending)
        assert found is not None
        print(judge(found, fit))
        result: Matrix = held @ (found.base + fitted(found.examples, found.base, found.movable, fit)).T
        return result

    return {
        "declared only": lambda held: held @ declared.T,
        "one centroid (product)": centroids(1),
        **{f"{k} centroids, best": centroids(k) for k in (2, 4, 8)},
        **{f"nearest {m} examples": nearest(m) for m in (1, 5)},
        "softmax-trained vectors": trained,
        "one centroid + fitted residuals (tune)": residuals_fitted,
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path", type=Path)
    parser.add_argument("--events", type=int, default=2000)
    parser.add_argument("--holdout", type=int, default=200)
    parser.add_argument("--cap", type=int, default=None, help="examples kept per tool (default: the setting's)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    settings = get_settings()
    cap = args.cap or settings.usage_examples_per_tool
    bench = load_set(args.path)
    names = wire_names([t.name for t in bench.tools])
    column = {t.name: i for i, t in enumerate(bench.tools)}
    embedder = asyncio.run(load_model(settings, cache=False))
    declared = embedder.embed([embedding_text(tool_spec(t, names[t.name])) for t in bench.tools])
    held, pool = holdout_split(bench.queries, args.holdout, args.seed)
    streamed = stream(pool, args.events)
    vectors = dict(zip([q.text for q in streamed], embedder.embed([q.text for q in streamed]), strict=True))
    examples: dict[int, list[Matrix]] = {}
    for query in reversed(streamed):  # newest first, as the learner keeps them
        for name in query.relevant:
            found = examples.setdefault(column[name], [])
            if len(found) < cap:
                found.append(vectors[query.text])
    held_vectors = embedder.embed([q.text for q in held])
    blending = Blending(settings.usage_declared_weight, settings.usage_declared_prior)
    tool_names = np.array([t.name for t in bench.tools])
    print(f"{bench.name}: {len(held)} held-out queries, {args.events} streamed, at most {cap} examples per tool")
    fit = Fit.from_settings(settings)
    for label, score in representations(declared, examples, blending, settings.usage_half_life, fit).items():
        ranked = np.argsort(-score(held_vectors), axis=1)[:, :10]
        m = mean_metrics(query_metrics(list(tool_names[r]), q.relevant) for r, q in zip(ranked, held, strict=True))
        print(f"{label:<26} R@5 {m['R@5']:.3f}  NDCG@10 {m['NDCG@10']:.3f}")


if __name__ == "__main__":
    main()
