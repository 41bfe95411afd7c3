"""The evaluation names its embedding model and says when the model was trained on the set's queries."""

from pathlib import Path

from toolsel.embedder import TOOLS_MODEL_NAME
from toolsel.evaluation.report import model_line
from toolsel.evaluation.run import model_used
from toolsel.settings import Settings
from toolsel.tuning.card import ModelCard, read_card, write_card


def card(trained_on: list[str]) -> ModelCard:
    return ModelCard(
        name="toolsel/minilm-tools",
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
    used = model_used(Settings(model_dir=tmp_path, embedding_model="toolsel/minilm-tools"))
    assert used == {"name": "toolsel/minilm-tools", "trained_on": ["external", "metatool"]}


def test_a_model_without_a_card_was_trained_on_no_set(tmp_path: Path) -> None:
    assert model_used(Settings(model_dir=tmp_path))["trained_on"] == []


def test_the_packaged_default_model_names_every_set_it_was_trained_on() -> None:
    """The shipped model's card comes with it: an evaluation with the defaults says which sets it saw, so none of
    their numbers passes for a cold one."""
    used = model_used(Settings())
    assert used["name"] == TOOLS_MODEL_NAME == "toolsel/minilm-tools-3"
    assert {"metatool", "toolbench_stb", "seal_tools", "livemcpbench"} <= set(used["trained_on"])


def test_the_stock_model_has_no_card() -> None:
    assert model_used(Settings(embedding_model="sentence-transformers/all-MiniLM-L6-v2"))["trained_on"] == []


def test_the_table_warns_only_for_a_set_the_model_saw() -> None:
    model = {"name": "toolsel/minilm-tools", "trained_on": ["external", "metatool"]}
    assert "not a cold number" in model_line({"set": "metatool", "model": model})
    seal = model_line({"set": "seal_tools", "model": model})
    assert seal == "model: toolsel/minilm-tools"
