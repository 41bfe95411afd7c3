"""Measure the full pipeline in process on each evaluation set: NDCG@10, the confidence's calibration error and
how often a reply whose first tool is relevant says ``no_match``, under settings given as JSON (and the
spelling stage's milliseconds).

Dev script, not part of the product. Each set's tools are embedded as the indexer embeds them (kept in
``--vectors`` between runs), each query of ``toolsel eval``'s seeded sample is selected as it selects it (top 10,
dry run, seeded, no Thompson draws). ``--misspell`` first misspells one word of five letters or more in each query
(a seeded swap, drop or doubling of a letter), to measure what a typo costs. Compare runs on the same sample.

Usage (from the repository root)::

    python scripts/measure_pipeline.py SETS_DIR --max-queries 400 --vectors VECTORS \\
        --settings '{"query_spelling": false}' [--misspell]
"""

import asyncio
import json
import random
import re
from collections.abc import Sequence

import numpy as np
from fit_confidence import SetCatalog, set_folders, sets_parser

from toolsel.contracts import SelectRequest
from toolsel.evaluation.calibration import calibration
from toolsel.evaluation.dataset import load_set
from toolsel.evaluation.metrics import ndcg_at
from toolsel.evaluation.split import evaluated_sample
from toolsel.runtime import load_model
from toolsel.services.selector.selector import Selector
from toolsel.settings import get_settings

_LONG_WORD = re.compile(r"[a-z]{5,}")


def misspell(text: str, rng: random.Random) -> str:
    """``text`` with one word of five letters or more misspelt: two letters swapped, one dropped or one doubled."""
    words = list(_LONG_WORD.finditer(text))
    if not words:
        return text
    word = rng.choice(words)
    w, i, how = word.group(0), rng.randrange(len(word.group(0)) - 1), rng.randrange(3)
    typo = (w[:i] + w[i + 1] + w[i] + w[i + 2 :], w[:i] + w[i + 1 :], w[:i] + w[i] + w[i:])[how]
    return text[: word.start()] + typo + text[word.end() :]


def main(argv: Sequence[str] | None = None) -> None:
    parser = sets_parser(__doc__, 400)
    parser.add_argument("--settings", default="{}", help="settings to change, as JSON")
    parser.add_argument("--misspell", action="store_true")
    args = parser.parse_args(argv)
    settings = get_settings().model_copy(update={"thompson_sampling": False, **json.loads(args.settings)})
    embedder = asyncio.run(load_model(settings, cache=False))
    for folder in set_folders(args.data):
        bench = load_set(folder)
        cached = None if args.vectors is None else args.vectors / f"{bench.name}.npy"
        catalog = SetCatalog.of(bench, settings, embedder, cached)
        selector = Selector(settings, catalog.catalog, embedder)
        rng = random.Random(args.seed)
        ndcg, sure, right, first_right, said_none, spelling_ms = [], [], [], 0, 0, []
        for query in evaluated_sample(bench.queries, args.max_queries, args.seed):
            text = misspell(query.text[:2000], rng) if args.misspell else query.text[:2000]
            selection = selector.run(SelectRequest(query=text, dry_run=True, k=10, seed=0))
            reply = selection.reply
            spelling_ms.append(selection.stages_ms["spelling"])
            names = [catalog.named.get(t.name, "") for t in reply.tools]
            ndcg.append(ndcg_at(names, query.relevant, 10))
            sure += [t.confidence for t in reply.tools]
            right += [name in query.relevant for name in names]
            if names and names[0] in query.relevant:
                first_right += 1
                said_none += reply.no_match
        ece = calibration(sure, right)["ece"]
        print(
            f"{bench.name}: {len(ndcg)} queries, NDCG@10 {np.mean(ndcg):.4f}, ECE {ece:.4f}, "
            f"no_match where the first tool is relevant {said_none}/{first_right}, "
            f"spelling stage p50 / p99 {np.percentile(spelling_ms, 50):.3f} / {np.percentile(spelling_ms, 99):.3f} ms",
            flush=True,
        )


if __name__ == "__main__":
    main()
