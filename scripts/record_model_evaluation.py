"""Write what ``toolsel eval --json`` measured into a trained model's card (its ``evaluation``): by set, NDCG@10
of the full pipeline and of the vectors alone, the confidence's ECE, the model that measured it and whether that
model never saw the set (a number from a model trained on the set's queries is kept, marked as not cold).

    python scripts/record_model_evaluation.py MODEL_DIR EVAL_JSON [EVAL_JSON ...]

A leave-one-set-out model records its own left-out set; the default model, which saw every set, records its
siblings' cold numbers, the evaluation it is shipped with. A result whose model's training sets are unknown
(``trained_on`` null: no card of its name where the evaluation ran) is refused, nothing written: whether its
number is cold cannot be said.
"""

import argparse
import json
from pathlib import Path

from toolsel.tuning.card import read_card, write_card


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model_dir", type=Path)
    parser.add_argument("results", type=Path, nargs="+")
    args = parser.parse_args()
    card = read_card(args.model_dir)
    if card is None:
        raise SystemExit(f"{args.model_dir} has no model card")
    for path in args.results:
        result = json.loads(path.read_text())
        if result["model"]["trained_on"] is None:
            raise SystemExit(
                f"{path}: {result['model']['name']}'s training sets are unknown (no model card of that name beside the"
                " evaluation): run it again with TOOLSEL_MODEL_DIR set to that model's directory"
            )
        modes = result["modes"]
        card.evaluation[result["set"]] = {
            "model": result["model"]["name"],
            "cold": result["set"] not in result["model"]["trained_on"],
            "ndcg_at_10_full_pipeline": round(modes["full pipeline"]["overall"]["NDCG@10"], 4),
            "ndcg_at_10_vector": round(modes["vector (description)"]["overall"]["NDCG@10"], 4),
            "ece": round(result["calibration"]["ece"], 4),
            "queries": result["queries_evaluated"],
            # the set by name, not the evaluator's path: a card ships with the model, where that path means nothing
            "command": f"toolsel eval SETS_DIR/{result['set']} --json {path.name}",
        }
    write_card(args.model_dir, card)


if __name__ == "__main__":
    main()
