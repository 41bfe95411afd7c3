"""Training the embedding model through the real code path: real all-MiniLM-L6-v2 weights, a few steps on a tiny
set, the int8 ONNX export checked against torch, the card, and the product's embedder serving the result."""

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="training needs the tune extra")

from toolsel.embedder import Embedder, assemble_model_dir  # noqa: E402
from toolsel.tuning.build import base_weights, build, parity_texts, round_base  # noqa: E402
from toolsel.tuning.card import file_sha256, read_card  # noqa: E402
from toolsel.tuning.export import check, onnx_session, onnx_vectors  # noqa: E402
from toolsel.tuning.pairs import read_pairs  # noqa: E402
from toolsel.tuning.train import TrainSettings  # noqa: E402

TOOLS = {
    "send_email": "send email: Send an email message to one or more recipients.\nParameters: to (addresses); body",
    "get_weather": "get weather: The weather forecast for a city, today or on the days ahead.",
    "book_flight": "book flight: Book a seat on a flight between two airports on a date, economy or business, "
    "with the traveller's name, passport number and seat preference.\nParameters: from; to; date; class",
    "convert_currency": "convert currency: Convert an amount from one currency to another at today's rate.",
    "search_contacts": "search contacts: Find a person's email address in the address book.",
    "translate_text": "translate text: Translate a text into another language.",
}
QUERIES = {
    "send_email": ["email my boss the report", "send a note to anna", "write to the team about friday"],
    "get_weather": ["will it rain in paris tomorrow", "weather in rome", "is it cold in oslo this week"],
    "book_flight": ["fly from berlin to lisbon on monday", "a plane ticket to new york", "book me a flight"],
    "convert_currency": ["how many dollars is 50 euros", "yen to pounds", "convert 100 chf to usd"],
    "search_contacts": ["what is bob's email address", "find anna's contact", "look up the cfo's address"],
    "translate_text": ["say this in german", "translate hello to french", "what is 'thank you' in japanese"],
}
SETTINGS = TrainSettings(seed=5, batch_size=4, threads=1)


@pytest.fixture(scope="module")
def pairs_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("pairs") / "pairs.jsonl"
    rows = [
        {"query": q, "tool_id": f"demo/{tool}", "tool_text": TOOLS[tool], "group": group, "source": "test"}
        for tool, queries in QUERIES.items()
        for q, group in zip(queries, ("travel", "office", "heldout"), strict=True)
    ]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


@pytest.fixture(scope="module")
def built(pairs_file: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("model")
    build(pairs_file, out, name="test/tools", leave_out=["heldout"], budget=12, settings=SETTINGS)
    return out


def test_the_card_says_what_the_model_was_trained_on(built: Path, pairs_file: Path) -> None:
    card = read_card(built)
    assert card is not None
    assert card.trained_on == ["office", "travel"]
    assert card.left_out == ["heldout"]
    assert card.pairs == {"office": 6, "travel": 6}
    assert card.pairs_sha256 == file_sha256(pairs_file)
    assert card.base_weights.endswith(file_sha256(base_weights() / "model.safetensors"))
    assert card.settings["seed"] == 5
    assert card.training["steps"] == 3
    assert card.training["pairs"] == card.training["examples"] == 12
    assert card.training["device"] == "cpu"
    assert file_sha256(pairs_file) in (built / "MODEL_CARD.md").read_text()


def test_epochs_step_through_the_pairs_again_and_the_card_counts_each_pair_once(
    pairs_file: Path, tmp_path: Path
) -> None:
    twice = replace(SETTINGS, epochs=2)
    card = build(pairs_file, tmp_path, name="test/tools", leave_out=["heldout"], budget=12, settings=twice)
    assert card.pairs == {"office": 6, "travel": 6}
    assert card.training["pairs"] == 12
    assert card.training["examples"] == 24
    assert card.training["steps"] == 6


def test_the_export_reproduces_the_torch_model_in_padded_batches(built: Path, pairs_file: Path) -> None:
    texts = parity_texts(read_pairs(pairs_file), 0)
    parity = check(built / "torch", built / "model.onnx", texts)
    assert parity.passed
    assert parity.min_batch_cosine > 0.9999  # the weights alone are int8: a text's batch does not change it


def test_a_dynamically_quantised_export_fails_the_check(built: Path, pairs_file: Path, tmp_path: Path) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(built / "torch" / "model-fp32.onnx", tmp_path / "dynamic.onnx", weight_type=QuantType.QInt8)
    texts = [*TOOLS.values(), "x"]  # one token beside texts of dozens: the batch's range is the long texts'
    assert not check(built / "torch", tmp_path / "dynamic.onnx", texts).passed


def test_training_moved_the_weights_and_is_repeatable_from_its_seed(
    built: Path, pairs_file: Path, tmp_path: Path
) -> None:
    from transformers import AutoModel

    build(pairs_file, tmp_path, name="test/tools", leave_out=["heldout"], budget=12, settings=SETTINGS)
    again, first = (AutoModel.from_pretrained(p / "torch").state_dict() for p in (tmp_path, built))
    assert all(torch.equal(again[name], first[name]) for name in first)
    base = AutoModel.from_pretrained(base_weights()).state_dict()
    assert not torch.equal(base["encoder.layer.5.output.dense.weight"], first["encoder.layer.5.output.dense.weight"])


def test_weights_stored_as_float16_train_and_export_in_float32(pairs_file: Path, tmp_path: Path) -> None:
    from safetensors.torch import load_file

    half = tmp_path / "half"
    round_base(half)

    card = build(
        pairs_file, tmp_path / "out", name="t/h", leave_out=["heldout"], budget=12, settings=SETTINGS, base=("h", half)
    )
    trained = load_file(str(tmp_path / "out" / "torch" / "model.safetensors"))
    assert {v.dtype for v in trained.values()} == {torch.float32}
    assert card.weights == "int8"


def test_the_product_serves_the_trained_model(built: Path, tmp_path: Path) -> None:
    from transformers import AutoTokenizer

    embedder = Embedder(built, model_name="test/tools", dim=384)
    texts = list(TOOLS.values())
    served = embedder.embed(texts)
    expected = onnx_vectors(onnx_session(built / "model.onnx"), AutoTokenizer.from_pretrained(built), texts)
    assert np.allclose(served, expected, atol=1e-4)
    stock = Embedder(assemble_model_dir(tmp_path / "stock")).embed(texts)
    assert float((served * stock).sum(axis=1).min()) < 0.9999  # the served vectors are the trained model's
