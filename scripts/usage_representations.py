"""How a tool's learnt examples should become its retrieval vector: one centroid, several, nearest examples,
vectors trained to tell the tools apart, or residuals fitted on top of the centroid. Vector signal only, every
streamed query an example of each of its relevant tools (the bound an agent that finds every tool would reach),
held-out queries never streamed.

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
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from toolsel.evaluation.dataset import Query, load_set, tool_spec, wire_names
from toolsel.evaluation.metrics import mean_metrics, query_metrics
from toolsel.evaluation.online import holdout_split, stream
from toolsel.runtime import load_model
from toolsel.services.indexer.hashing import embedding_text
from toolsel.services.learner.compaction import kmeans
from toolsel.services.learner.usage import centroid
from toolsel.services.selector.usage import Blending, blend
from toolsel.settings import get_settings

Matrix = npt.NDArray[np.float32]
Scorer = Callable[[Matrix], Matrix]
"""Held-out query vectors -> one score per (query, tool)."""


def softmax_gradient(x: Matrix, scored: Matrix, targets: Matrix, sharpness: float = 20.0) -> Matrix:
    """The gradient, per tool's scored vector, of the mean cross-entropy between ``targets`` (one row per example,
    summing to 1) and each example's softmax over the whole catalog (its scores x ``sharpness``)."""
    z = sharpness * (x @ scored.T)
    p = np.exp(z - z.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    result: Matrix = (sharpness * ((p - targets).T @ x) / len(x)).astype(np.float32)
    return result


def softmax_trained(declared: Matrix, x: Matrix, tools: npt.NDArray[np.int64], epochs: int = 300) -> Matrix:
    """Tool vectors trained, from the declared ones, so that each example's softmax over the whole catalog
    (cosine x 20) picks its tool; only tools with examples move, pulled back towards their declared vector."""
    w = declared.copy()
    targets = np.zeros((len(x), len(w)), dtype=np.float32)
    targets[np.arange(len(x)), tools] = 1.0
    learnt = (targets.sum(0) > 0)[:, None]
    for _ in range(epochs):
        grad = softmax_gradient(x, w, targets) + 3e-3 * (w - declared)
        w -= 0.5 * np.where(learnt, grad, 0.0).astype(np.float32)
    result: Matrix = w / np.linalg.norm(w, axis=1, keepdims=True)
    return result


def fitted_residuals(base: Matrix, x: Matrix, targets: Matrix, steps: int = 200, sharpness: float = 20.0) -> Matrix:
    """Residuals on top of ``base`` fitted so that each example's softmax over the whole catalog (score x
    ``sharpness``) picks its tools (``targets``, each row summing to 1): full-batch steps of rate 1 from zero, only
    the tools with examples moving, each held within the online residuals' bound of 1. What a tune could write in
    place of the online residuals: measured, and left out (docs/results.md)."""
    residuals = np.zeros_like(base)
    movable = (targets.sum(0) > 0)[:, None]
    for _ in range(steps):
        residuals -= np.where(movable, softmax_gradient(x, base + residuals, targets, sharpness), 0.0).astype(
            np.float32
        )
        norms = np.linalg.norm(residuals, axis=1, keepdims=True)
        residuals *= np.minimum(1.0, 1.0 / np.maximum(norms, 1e-12)).astype(np.float32)
    return residuals


Kept = list[tuple[int, int, str]]
"""(stream position, tool, query text) of each example kept, newest first."""


def blended_and_fitted(
    declared: Matrix, kept: Kept, vectors: dict[str, Matrix], blending: Blending, half_life: float, cap: int
) -> tuple[Matrix, Matrix]:
    """The product's blend of these examples (one centroid per tool), and residuals fitted on top of it to their
    distinct queries."""
    base = declared.copy()
    by_tool: dict[int, list[Matrix]] = {}
    for _, tool, text in kept:
        by_tool.setdefault(tool, []).append(vectors[text])
    for tool, found in by_tool.items():
        mean = centroid(found, cap, half_life)
        if mean is not None:
            weight = blending.declared_weights(np.array([min(len(found), cap)], dtype=np.int64))
            base[tool] = blend(declared[tool : tool + 1], mean[None, :], weight)[0]
    served: dict[str, set[int]] = {}
    for _, tool, text in kept:
        served.setdefault(text, set()).add(tool)
    targets = np.zeros((len(served), len(declared)), dtype=np.float32)
    for i, tools in enumerate(served.values()):
        targets[i, sorted(tools)] = 1.0 / len(tools)
    x = np.vstack([vectors[text] for text in served]).astype(np.float32)
    return base, fitted_residuals(base, x, targets)


def representations(
    declared: Matrix, examples: dict[int, list[Matrix]], blending: Blending, half_life: float
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

    return {
        "declared only": lambda held: held @ declared.T,
        "one centroid (product)": centroids(1),
        **{f"{k} centroids, best": centroids(k) for k in (2, 4, 8)},
        **{f"nearest {m} examples": nearest(m) for m in (1, 5)},
        "softmax-trained vectors": trained,
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
    held, pool, _ = holdout_split(bench.queries, args.holdout, args.seed)
    streamed = stream(pool, args.events)
    vectors = dict(zip([q.text for q in streamed], embedder.embed([q.text for q in streamed]), strict=True))
    examples: dict[int, list[Matrix]] = {}
    kept: Kept = []
    for position in reversed(range(len(streamed))):  # newest first, as the learner keeps them
        for name in streamed[position].relevant:
            found = examples.setdefault(column[name], [])
            if len(found) < cap:
                found.append(vectors[streamed[position].text])
                kept.append((position, column[name], streamed[position].text))
    held_vectors = embedder.embed([q.text for q in held])
    blending = Blending(settings.usage_declared_weight, settings.usage_declared_prior)
    tool_names = np.array([t.name for t in bench.tools])
    print(f"{bench.name}: {len(held)} held-out queries, {args.events} streamed, at most {cap} examples per tool")
    half_life = settings.usage_half_life

    def measured(label: str, scores: Matrix, queries: Sequence[Query]) -> None:
        ranked = np.argsort(-scores, axis=1)[:, :10]
        m = mean_metrics(query_metrics(list(tool_names[r]), q.relevant) for r, q in zip(ranked, queries, strict=True))
        print(f"{label:<26} R@5 {m['R@5']:.3f}  NDCG@10 {m['NDCG@10']:.3f}")

    for label, score in representations(declared, examples, blending, half_life).items():
        measured(label, score(held_vectors), held)
    base, residuals = blended_and_fitted(declared, kept, vectors, blending, half_life, cap)
    measured("one centroid + residuals fitted", held_vectors @ (base + residuals).T, held)
    # judged as a tune would judge the fit: on the stream's newest fifth of the distinct queries, fitted and
    # blended from the older examples only
    newest_first = list(dict.fromkeys(text for _, _, text in sorted(kept, reverse=True)))
    newest = set(newest_first[: len(newest_first) // 5])
    older = [k for k in kept if k[2] not in newest]
    base, residuals = blended_and_fitted(declared, older, vectors, blending, half_life, cap)
    by_text = {q.text: q for q in streamed}
    judged = [by_text[text] for text in newest_first[: len(newest_first) // 5]]
    judged_vectors = np.vstack([vectors[q.text] for q in judged])
    print(f"the stream's newest {len(judged)} distinct queries, from the older examples alone:")
    measured("  one centroid", judged_vectors @ base.T, judged)
    measured("  + residuals fitted", judged_vectors @ (base + residuals).T, judged)


if __name__ == "__main__":
    main()
