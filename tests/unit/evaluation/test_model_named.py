"""The evaluation names the embedding model that made its numbers and says when the model was trained on the set's
queries, or that what it was trained on is unknown."""

import json
import sys
from pathlib import Path

import pytest

from scripts import record_model_evaluation
from toolsel.embedder import MODEL_NAME, TOOLS_MODEL_NAME
from toolsel.evaluation.report import model_line
from toolsel.evaluation.run import model_used
from toolsel.settings import Settings
from toolsel.tuning.card import ModelCard, read_card, write_card


def card(trained_on: list[str], name: str = "toolsel/minilm-tools") -> ModelCard:
    return ModelCard(
        name=name,
        base_model="sentence-transformers/all-MiniLM-L6-v2",
        base_weights="test",
        dim=384,
        trained_on=trained_on,
        pairs_file="pairs.jsonl",
        pairs_sha256="0" * 64,
        pairs={group: 10 for group in trained_on},
        settings={"seed": 0},
        training={"steps": 1},
        export={"min_cosine": 0.998},
    )


def test_a_model_with_a_card_names_the_sets_it_was_trained_on(tmp_path: Path) -> None:
    write_card(tmp_path, card(["external", "metatool"]))
    assert read_card(tmp_path) == card(["external", "metatool"])
    used = model_used(Settings(model_dir=tmp_path, embedding_model="toolsel/minilm-tools"), "toolsel/minilm-tools")
    assert used == {"name": "toolsel/minilm-tools", "trained_on": ["external", "metatool"]}


def test_the_servers_model_is_named_and_another_models_card_says_nothing_of_it(tmp_path: Path) -> None:
    """Against configured servers this shell may be set for a cold model while the servers serve the packaged one,
    trained on every set: the numbers are the served model's, and the shell's card is not its card."""
    write_card(tmp_path, card(["external", "metatool"], name="my/minilm-tools-without-livemcpbench"))
    shell = Settings(model_dir=tmp_path, embedding_model="my/minilm-tools-without-livemcpbench")
    assert model_used(shell, TOOLS_MODEL_NAME) == {"name": TOOLS_MODEL_NAME, "trained_on": None}


def test_a_model_without_a_card_was_trained_on_unknown_sets(tmp_path: Path) -> None:
    assert model_used(Settings(model_dir=tmp_path), TOOLS_MODEL_NAME)["trained_on"] is None
    assert model_used(Settings(), "BAAI/bge-small-en-v1.5")["trained_on"] is None


def test_the_packaged_default_model_names_every_set_it_was_trained_on() -> None:
    """The shipped model's card comes with it: an evaluation with the defaults says which sets it saw, so none of
    their numbers passes for a cold one."""
    used = model_used(Settings(), TOOLS_MODEL_NAME)
    assert used["name"] == TOOLS_MODEL_NAME == "toolsel/minilm-tools-3"
    assert {"metatool", "toolbench_stb", "seal_tools", "livemcpbench"} <= set(used["trained_on"])


def test_the_stock_model_has_no_card_and_saw_none_of_the_sets() -> None:
    assert model_used(Settings(), MODEL_NAME) == {"name": MODEL_NAME, "trained_on": []}


def test_the_table_warns_for_a_set_the_model_saw_and_for_a_model_of_unknown_training() -> None:
    model = {"name": "toolsel/minilm-tools", "trained_on": ["external", "metatool"]}
    assert "not a cold number" in model_line({"set": "metatool", "model": model})
    seal = model_line({"set": "seal_tools", "model": model})
    assert seal == "model: toolsel/minilm-tools"
    unknown = model_line({"set": "seal_tools", "model": {"name": "toolsel/minilm-tools", "trained_on": None}})
    assert "trained on unknown sets" in unknown


def test_recording_refuses_a_result_whose_model_training_is_unknown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whether the number is cold cannot be said: nothing is written into the card."""
    write_card(tmp_path, card(["external"]))
    result = {
        "set": "livemcpbench",
        "model": {"name": TOOLS_MODEL_NAME, "trained_on": None},
        "modes": {m: {"overall": {"NDCG@10": 0.5}} for m in ("full pipeline", "vector (description)")},
        "calibration": {"ece": 0.05},
        "queries_evaluated": 94,
    }
    path = tmp_path / "livemcpbench.json"
    path.write_text(json.dumps(result))
    monkeypatch.setattr(sys, "argv", ["record_model_evaluation.py", str(tmp_path), str(path)])
    with pytest.raises(SystemExit, match="training sets are unknown"):
        record_model_evaluation.main()
    assert read_card(tmp_path) == card(["external"])
    cold = {**result, "model": {"name": TOOLS_MODEL_NAME, "trained_on": ["external"]}}
    path.write_text(json.dumps(cold))
    record_model_evaluation.main()
    recorded = read_card(tmp_path)
    assert recorded is not None
    assert recorded.evaluation["livemcpbench"]["cold"] is True
