"""``toolsel tune``'s stages: read what the store's events say (``toolsel.store.use``), choose pairs and held-back
queries (``from_use``), train a candidate from the current model's weights (``build``), and measure both models
on the held-back queries (``shadow``). Switching is the caller's (the store must be re-embedded with no service
running). Needs the ``tune`` extra."""

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import asyncpg

from toolsel.embedder import packaged_model_dir
from toolsel.settings import Settings
from toolsel.store import use
from toolsel.tenancy import actor
from toolsel.tuning.build import BASE_MODEL, base_weights, build
from toolsel.tuning.card import ModelCard, file_sha256, write_card
from toolsel.tuning.from_onnx import NotRebuildable, torch_weights_from_onnx
from toolsel.tuning.from_use import USAGE_GROUP, Evidence, Limits, Use, UseSplit, pairs_from_use
from toolsel.tuning.train import Progress, TrainSettings

TORCH_DIR = "torch"
"""Where a model trained here keeps its torch weights, beside its ONNX file: a later tune starts from them."""
WEIGHTS_DIR = "weights"
"""Where, under the home, torch weights rebuilt from a model's ONNX file stay (by the file's hash)."""


class NoWeights(RuntimeError):
    """The current model has no torch weights to train from."""


async def read_use(pool: asyncpg.Pool, text_of: Callable[[Any], str], credits_window_s: float) -> Use:
    """The store's evidence (actors in learning credits' windows) and live tools; ``text_of`` makes a tool's
    embedded text from its stored spec."""
    rows = await use.evidence(pool)
    tools = await use.live_tool_specs(pool)
    evidence = [
        Evidence(
            str(r["selection_id"]),
            r["tenant"],
            actor(r, credits_window_s),
            r["query"],
            r["tool"],
            r["positive"],
            r["at"],
        )
        for r in rows
    ]
    texts = {r["key"]: text_of(json.loads(r["spec"]) if isinstance(r["spec"], str) else r["spec"]) for r in tools}
    return Use(evidence, texts, {r["key"]: r["tenant_id"] for r in tools})


def split(found: Use, settings: Settings) -> UseSplit:
    limits = Limits(settings.tune_max_pairs, settings.usage_examples_per_tool, settings.learning_credits_per_actor)
    return pairs_from_use(found.evidence, found.shared(), limits, settings.tune_holdout_share)


def current_weights(settings: Settings) -> tuple[str, Path]:
    """The current model's name and torch weights: a model trained here keeps them in its ``torch`` folder; the
    stock all-MiniLM-L6-v2's come with the tune extra; any other model ``export`` wrote (the packaged default
    among them) has them rebuilt from its ONNX file once, into the home."""
    if settings.model_dir is not None and (settings.model_dir / TORCH_DIR / "model.safetensors").is_file():
        return settings.embedding_model, settings.model_dir / TORCH_DIR
    if settings.model_dir is None and settings.embedding_model == BASE_MODEL:
        return BASE_MODEL, base_weights()
    directory = settings.model_dir or packaged_model_dir(settings.embedding_model)
    if directory is None or not (directory / "model.onnx").is_file():
        raise NoWeights(
            f"{settings.embedding_model} has no torch weights to tune from and no model.onnx to rebuild them from"
            f" (a model trained by toolsel keeps them in {TORCH_DIR}/ beside model.onnx)"
        )
    return settings.embedding_model, rebuilt_weights(directory / "model.onnx", settings.home / WEIGHTS_DIR)


def rebuilt_weights(onnx: Path, root: Path) -> Path:
    """The torch weights rebuilt from ``onnx``, under ``root`` by the file's hash: rebuilt and checked once."""
    out = root / file_sha256(onnx)[:16]
    if (out / "model.safetensors").is_file():
        return out
    try:
        return torch_weights_from_onnx(onnx, out, base_weights())
    except NotRebuildable as refused:
        raise NoWeights(f"no torch weights to tune from could be rebuilt from {onnx}: {refused}") from refused


def train_candidate(
    chosen: UseSplit, settings: Settings, out: Path, name: str, train: TrainSettings, progress: Progress | None
) -> ModelCard:
    """The candidate trained from the current model on the pairs, exported and checked, in ``out`` with its card
    (the pairs file beside it: they are this deployment's own queries and stay in its home)."""
    out.mkdir(parents=True, exist_ok=True)
    pairs_file = out / "pairs.jsonl"
    pairs_file.write_text(
        "".join(
            json.dumps({"query": p.query, "tool_id": p.tool_id, "tool_text": p.tool_text, "group": p.group}) + "\n"
            for p in chosen.pairs
        )
    )
    card = build(
        pairs_file,
        out,
        name=name,
        leave_out=[],
        budget=len(chosen.pairs),
        settings=train,
        progress=progress,
        base=current_weights(settings),
    )
    usage = {"group": USAGE_GROUP, "pairs_by_tenant": chosen.by_tenant, "held_out": len(chosen.held_out)}
    card = card.model_copy(update={"sources": [*card.sources, usage]})
    write_card(out, card)
    return card


def as_served(settings: Settings, name: str, model_dir: Path) -> Settings:
    """The settings with this model in place of the configured one."""
    return settings.model_copy(update={"embedding_model": name, "model_dir": model_dir})


def discard(out: Path) -> None:
    shutil.rmtree(out, ignore_errors=True)
