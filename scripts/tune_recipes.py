"""Compare recipes for ``toolsel tune`` on one set's stream, without a stack: the evidence the tune scenario of
``toolsel eval --online`` would store (each streamed query offered the current model's top 5 by its vector, the
relevant ones offered called and reviewed 'perfect', the others 'unrelated'), the tune's pairs and held-back
queries made from it by the tune's own code (``pairs_from_use``: the older 80%, usage memory's bounds), then for each
recipe a candidate trained from the current model's weights (rebuilt from its ONNX file, as a tune rebuilds them)
and measured with its vectors alone: on the eval's held-out queries (never streamed) and on the tune's held-back
ones; with ``--others``, also on every other set there (vectors alone, NDCG@10 over its whole catalog, on the
queries ``toolsel eval`` ranks): what a tune on one deployment's use does to catalogs it never saw. Needs the
``tune`` extra.

    python scripts/tune_recipes.py SET_DIR MODEL_DIR --out DIR --events 10000 --others SETS_DIR \\
        --recipe one=epochs:1,learning_rate:2e-5 --recipe three=epochs:3,learning_rate:4e-5

MODEL_DIR holds the current model's ``model.onnx`` (the sibling that never saw the set, for a cold start). A recipe
is ``NAME=KEY:VALUE,...`` of ``TrainSettings`` fields (as ``scripts/sweep_training.py`` reads them); the models stay
in ``DIR/NAME``. The split and the stream are ``toolsel eval --online``'s (seed 0, 200 held out).
"""

import argparse
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
from fit_confidence import set_folders
from sweep_training import left_out_ndcg, recipe, vectors

from toolsel.evaluation.dataset import load_set, tool_spec, wire_names
from toolsel.evaluation.metrics import mean_metrics, query_metrics
from toolsel.evaluation.online import holdout_split, stream
from toolsel.services.indexer.hashing import embedding_text
from toolsel.settings import get_settings
from toolsel.tuning.from_use import Evidence, Limits, pairs_from_use
from toolsel.tuning.train import load, train
from toolsel.tuning.tune import rebuilt_weights

OFFERED = 5
"""Tools each simulated selection offers."""
Judged = list[tuple[str, frozenset[str]]]


def measured(weights: Path, keys: Sequence[str], texts: Sequence[str], judged: dict[str, Judged]) -> str:
    """R@5 / NDCG@10 of the model's vectors alone, over the whole catalog, for each judged list."""
    model, tokenizer = load(weights)
    model.eval()
    tools = vectors(model, tokenizer, texts)
    said = []
    for name, queries in judged.items():
        ranked = np.argsort(-(vectors(model, tokenizer, [q for q, _ in queries]) @ tools.T), axis=1)[:, :10]
        m = mean_metrics(query_metrics([keys[i] for i in r], rel) for r, (_, rel) in zip(ranked, queries, strict=True))
        said.append(f"{name} ({len(queries)}): R@5 {m['R@5']:.3f} NDCG@10 {m['NDCG@10']:.3f}")
    return "; ".join(said)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("set_dir", type=Path)
    parser.add_argument("model_dir", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--recipe", type=recipe, action="append", required=True)
    parser.add_argument("--others", type=Path, help="a folder of evaluation sets: measure the other sets too")
    args = parser.parse_args(argv)
    settings = get_settings()
    bench = load_set(args.set_dir)
    names = wire_names([t.name for t in bench.tools])
    keys = [f"{bench.name}/{names[t.name]}" for t in bench.tools]
    key_of = {t.name: k for t, k in zip(bench.tools, keys, strict=True)}
    texts = [embedding_text(tool_spec(t, names[t.name])) for t in bench.tools]
    weights = rebuilt_weights(args.model_dir / "model.onnx", args.out / "current")
    held, pool, _ = holdout_split(bench.queries, 200, 0)
    streamed = stream(pool, args.events)

    model, tokenizer = load(weights)
    model.eval()
    distinct = sorted({q.text for q in streamed})
    scores = vectors(model, tokenizer, distinct) @ vectors(model, tokenizer, texts).T
    offers = {text: [keys[i] for i in np.argsort(-row)[:OFFERED]] for text, row in zip(distinct, scores, strict=True)}
    start = datetime(2026, 1, 1, tzinfo=UTC)
    relevant = [{key_of[n] for n in q.relevant} for q in streamed]
    evidence = [
        Evidence(f"s{i}", "a", f"s{i}", q.text, key, key in relevant[i], start + timedelta(seconds=i))
        for i, q in enumerate(streamed)
        for key in offers[q.text]
    ]
    limits = Limits(settings.tune_max_pairs, settings.usage_examples_per_tool, settings.learning_credits_per_actor)
    split = pairs_from_use(evidence, dict(zip(keys, texts, strict=True)), limits, settings.tune_holdout_share)
    judged = {
        "held-out": [(q.text, frozenset(key_of[n] for n in q.relevant)) for q in held],
        "held-back": [(j.query, j.relevant) for j in split.held_out],
    }
    print(f"{bench.name}: {len(split.pairs)} pairs from {args.events} events, {len(split.held_out)} held back")
    others = [f for f in set_folders(args.others) if f.name != bench.name] if args.others else []

    def elsewhere(model: Path) -> str:
        return "".join(f"; {f.name} {left_out_ndcg(model, f):.3f}" for f in others)

    print(f"current model: {measured(weights, keys, texts, judged)}{elsewhere(weights)}", flush=True)
    for name, _, recipe_settings in args.recipe:
        result = train(split.pairs, weights, args.out / name, recipe_settings)
        print(
            f"{name} ({result.steps} steps, {result.seconds:.0f} s, {result.seconds_per_1000_pairs:.0f} s per 1,000"
            f" pairs): {measured(args.out / name, keys, texts, judged)}{elsewhere(args.out / name)}",
            flush=True,
        )


if __name__ == "__main__":
    main()
