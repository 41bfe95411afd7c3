"""The model card written next to a trained model's weights: what it was trained from and how, and which
evaluation sets' queries it saw, which ``toolsel eval`` reads to say when a set's number is not a cold one."""

import hashlib
import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

CARD_FILE = "model_card.json"
CARD_TEXT = "MODEL_CARD.md"


class ModelCard(BaseModel):
    name: str
    """The model's name, as ``TOOLSEL_EMBEDDING_MODEL`` gives it and the store records it."""
    base_model: str
    base_weights: str
    """Where the base weights came from (package and file hash)."""
    dim: int
    trained_on: list[str]
    """The groups of the pairs it was trained on: evaluation set names (and ``external`` for other data)."""
    left_out: list[str] = Field(default_factory=list)
    pairs_file: str
    pairs_sha256: str
    pairs: dict[str, int]
    """Pairs trained on, by group."""
    sources: list[dict[str, Any]] = Field(default_factory=list)
    """The training data's sources, as the pairs' manifest lists them (name, repository, commit, licence, hash)."""
    settings: dict[str, Any]
    training: dict[str, Any]
    """Distinct pairs, pairs stepped through (over the epochs), steps, seconds, seconds per 1,000 pairs per epoch,
    first and last loss, threads, bfloat16, device."""
    export: dict[str, float]
    """The ONNX export against the torch model: least cosine, least cosine of a text alone against in a batch."""
    weights: str = "int8"
    """How the ONNX file stores its large weights: int8, its feed-forward products then computed in int8 too
    (``export.integer_products``), or float16 for a model trained from int8 weights (``export.stored_as``)."""
    evaluation: dict[str, Any] = Field(default_factory=dict)
    """What it was shipped with: NDCG@10 by set, of the sets it never saw."""


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as data:
        for block in iter(lambda: data.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_card(model_dir: Path) -> ModelCard | None:
    """The card of the model in ``model_dir``, or None where there is none (a model not trained here)."""
    path = model_dir / CARD_FILE
    return ModelCard.model_validate_json(path.read_text()) if path.is_file() else None


def write_card(model_dir: Path, card: ModelCard) -> None:
    """The card as JSON (read back by ``read_card``) and as text for people."""
    (model_dir / CARD_FILE).write_text(card.model_dump_json(indent=2) + "\n")
    (model_dir / CARD_TEXT).write_text(render(card))


INTEGER_PRODUCTS = (
    " The feed-forward layers' matrix products are computed in int8, each token's input cut to 8 bits by its own"
    " range (`toolsel.tuning.export.integer_products`); the attention's in float32."
)


def render(card: ModelCard) -> str:
    rows = "\n".join(f"| {group} | {count:,} |" for group, count in sorted(card.pairs.items()))
    sources = "\n".join(f"- {json.dumps(source)}" for source in card.sources)
    evaluation = "\n".join(f"- {k}: {json.dumps(v)}" for k, v in sorted(card.evaluation.items())) or "- none yet"
    return f"""# {card.name}

Fine-tuned from {card.base_model} ({card.base_weights}) on query → tool pairs with in-batch negatives; {card.dim}-d,
mean-pooled, {card.weights} weights (ONNX). Trained on the pairs of: {", ".join(card.trained_on)}; left out:
{", ".join(card.left_out) or "none"}.

## Training data

`{card.pairs_file}` (sha256 {card.pairs_sha256})

| group | pairs |
|---|---|
{rows}

{sources or "No sources listed."}

## Settings

{json.dumps(card.settings, indent=2)}

## Training

{json.dumps(card.training, indent=2)}

## Export check

Large weights stored as {card.weights}.{INTEGER_PRODUCTS if card.weights == "int8" else ""}

{json.dumps(card.export, indent=2)}

## Evaluation

{evaluation}
"""
