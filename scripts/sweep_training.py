"""Compare training recipes leaving each set out: for each recipe, one model per shared set trained without that
set's pairs (``toolsel.tuning.train``, as ``toolsel train-model --leave-out SET``), measured on the set it left out,
vectors alone: NDCG@10 over the set's whole catalog on the queries ``toolsel eval`` ranks (its seeded sample), the
tool texts the indexer embeds, the torch model in float32. Prints a table (and writes it as JSON with ``--json``).
Needs the ``tune`` extra; a CUDA GPU makes it minutes instead of hours.

    python scripts/sweep_training.py SETS_DIR PAIRS --out DIR \\
        --recipe first=budget:6000 --recipe wide=budget:100000,epochs:3,batch_size:128,learning_rate:4e-5

A recipe is ``NAME=KEY:VALUE,...`` with ``budget`` (pairs at most, shared fairly between the groups) and any field
of ``TrainSettings``. The models stay in ``DIR/NAME/without-SET`` (torch weights); ``toolsel train-model`` with the
chosen recipe's options trains and packages the ones to ship (deterministic from the seed).
"""

import argparse
import json
from collections.abc import Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any

import numpy as np
import torch
from fit_confidence import set_folders

from toolsel.evaluation.dataset import load_set, tool_spec, wire_names
from toolsel.evaluation.metrics import ndcg_at
from toolsel.evaluation.split import evaluated_sample
from toolsel.services.indexer.hashing import embedding_text
from toolsel.tuning.export import SERVED_MAX_TOKENS
from toolsel.tuning.pairs import Pair, choose, read_pairs
from toolsel.tuning.train import TrainSettings, load, mean_pooled, train, training_device

MAX_QUERIES = 2000
"""``toolsel eval``'s default sample of a set's queries (seed 0)."""
BATCH = 256


def recipe(text: str) -> tuple[str, int, TrainSettings]:
    """``NAME=budget:6000,epochs:3,...`` as its name, pair budget and training settings."""
    name, _, options = text.partition("=")
    budget, values = 6000, {}
    for option in filter(None, options.split(",")):
        key, _, value = option.partition(":")
        if key == "budget":
            budget = int(value)
        elif key in {f.name for f in fields(TrainSettings)}:
            values[key] = _typed(key, value)
        else:
            raise argparse.ArgumentTypeError(f"unknown recipe option {key!r}")
    return name, budget, TrainSettings(**values)


def _typed(key: str, value: str) -> bool | int | float:
    default = getattr(TrainSettings(), key)
    if isinstance(default, bool) or key == "bf16":
        return value.lower() == "true"
    if isinstance(default, int) or key == "threads":
        return int(value)
    return float(value)


def vectors(model: Any, tokenizer: Any, texts: Sequence[str]) -> np.ndarray:
    with torch.no_grad():
        parts = [
            mean_pooled(model, tokenizer, list(texts[i : i + BATCH]), SERVED_MAX_TOKENS)
            for i in range(0, len(texts), BATCH)
        ]
    return torch.cat(parts).float().cpu().numpy()


def left_out_ndcg(weights: Path, folder: Path) -> float:
    """NDCG@10 of the vectors alone over ``folder``'s set: its whole catalog, ``toolsel eval``'s queries."""
    bench = load_set(folder)
    queries = evaluated_sample(bench.queries, MAX_QUERIES, 0)
    names = wire_names([t.name for t in bench.tools])
    model, tokenizer = load(weights)
    model.to(training_device()).eval()
    tools = vectors(model, tokenizer, [embedding_text(tool_spec(t, names[t.name])) for t in bench.tools])
    asked = vectors(model, tokenizer, [q.text for q in queries])
    top = np.argsort(-(asked @ tools.T), axis=1)[:, :10]
    ranked = [[bench.tools[i].name for i in row] for row in top]
    return float(np.mean([ndcg_at(r, q.relevant, 10) for r, q in zip(ranked, queries, strict=True)]))


def sweep(
    folders: Sequence[Path],
    pairs: list[Pair],
    recipes: Sequence[tuple[str, int, TrainSettings]],
    out: Path,
    base: Path,
) -> dict[str, dict[str, float]]:
    """Each recipe's NDCG@10 by left-out set (and the base model's, untrained, as ``stock``)."""
    table: dict[str, dict[str, float]] = {"stock": {f.name: left_out_ndcg(base, f) for f in folders}}
    for name, budget, settings in recipes:
        row = {}
        for folder in folders:
            chosen = choose(pairs, leave_out=[folder.name], budget=budget, seed=settings.seed)
            trained = out / name / f"without-{folder.name}" / "torch"
            train(chosen, base, trained, settings)
            row[folder.name] = left_out_ndcg(trained, folder)
            print(f"{name} without {folder.name}: {row[folder.name]:.4f}", flush=True)
        table[name] = row
    for row in table.values():
        row["mean"] = float(np.mean(list(row.values())))
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sets_dir", type=Path)
    parser.add_argument("pairs", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--recipe", type=recipe, action="append", required=True)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--base", type=Path, help="weights trained from (default all-MiniLM-L6-v2's float32 ones)")
    args = parser.parse_args()
    from toolsel.tuning.build import base_weights

    base = args.base or base_weights()
    table = sweep(set_folders(args.sets_dir), read_pairs(args.pairs), args.recipe, args.out, base)
    sets = [f.name for f in set_folders(args.sets_dir)]
    print("| recipe | " + " | ".join(sets) + " | mean |\n|---|" + "---|" * (len(sets) + 1))
    for name, row in table.items():
        print(f"| {name} | " + " | ".join(f"{row[s]:.3f}" for s in [*sets, "mean"]) + " |")
    if args.json:
        args.json.write_text(json.dumps(table, indent=1))


if __name__ == "__main__":
    main()
