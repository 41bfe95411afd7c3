"""Torch weights rebuilt from the packaged int8 ONNX model, as ``toolsel tune`` does on a default install: the rebuilt
model reproduces the served vectors, the frozen token table is the base's float32 one, the rebuild happens once per
home, and a checkpoint with weights in the wrong places is refused."""

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="tuning needs the tune extra")

from toolsel.embedder import TOOLS_MODEL_DIM, TOOLS_MODEL_NAME, Embedder, assemble_model_dir, packaged_model_dir  # noqa: E402
from toolsel.settings import Settings  # noqa: E402
from toolsel.tuning import tune  # noqa: E402
from toolsel.tuning.build import base_weights  # noqa: E402
from toolsel.tuning.export import check, export, store_weights, stored_as  # noqa: E402
from toolsel.tuning.from_onnx import RECORD, RebuildMismatch, parity_texts, rebuilt_state, save_checkpoint, verify  # noqa: E402
from toolsel.tuning.train import load, mean_pooled  # noqa: E402

PACKAGED = packaged_model_dir(TOOLS_MODEL_NAME) / "model.onnx"  # type: ignore[operator]


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("home")


@pytest.fixture(scope="module")
def rebuilt(home: Path) -> Path:
    name, weights = tune.current_weights(Settings(home=home, model_dir=None, embedding_model=TOOLS_MODEL_NAME))
    assert name == TOOLS_MODEL_NAME
    return weights


def test_the_rebuilt_model_reproduces_the_served_vectors(rebuilt: Path, tmp_path: Path) -> None:
    texts = parity_texts()
    assert len({len(t) for t in texts}) > 20  # short queries and long descriptions alike
    directory = assemble_model_dir(tmp_path / "model", TOOLS_MODEL_NAME)
    served = Embedder(directory, model_name=TOOLS_MODEL_NAME, dim=TOOLS_MODEL_DIM).embed(texts)
    model, tokenizer = load(rebuilt)
    with torch.no_grad():
        vectors = mean_pooled(model.eval(), tokenizer, texts, 256).numpy()
    assert float((served * vectors).sum(axis=1).min()) >= 0.99
    stock, _ = load(base_weights())
    with torch.no_grad():
        base = mean_pooled(stock.eval(), tokenizer, texts, 256).numpy()
    assert float((served * base).sum(axis=1).min()) < float((served * vectors).sum(axis=1).min())
    record = json.loads((rebuilt / RECORD).read_text())
    assert record["min_cosine"] >= 0.99
    assert all(key.startswith("pooler.") for key in record["from_base"])  # the only part the graph lacks


def test_a_model_trained_from_the_int8_grid_is_stored_in_float16_which_keeps_what_int8_rounds_away(
    rebuilt: Path, tmp_path: Path
) -> None:
    assert (stored_as(base_weights()), stored_as(rebuilt)) == ("int8", "float16")
    model, tokenizer = load(rebuilt)
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():  # a few Adam steps at 2e-5: moves of one size and a direction shared across each matrix,
        for name, weight in model.named_parameters():  # each weight's less than half of int8's step
            if name.startswith("encoder.") and weight.ndim == 2:
                rows, columns = (torch.randn(n, generator=generator) for n in weight.shape)
                weight.add_(2e-4 * torch.sign(torch.outer(rows, columns)))
    trained = tmp_path / "trained"
    model.save_pretrained(trained)
    tokenizer.save_pretrained(trained)
    assert stored_as(trained) == "int8"  # off the grid now: trained further from here, int8 would do
    texts = parity_texts()[:12]
    half = check(trained, export(trained, tmp_path / "float16", "float16"), texts)
    int8_file = tmp_path / "int8.onnx"  # the weights as int8 stores them, in float32 products: what storage rounds
    store_weights(trained / "model-fp32.onnx", int8_file, "int8")
    int8, back = check(trained, int8_file, texts), check(rebuilt, int8_file, texts)
    assert half.min_cosine >= 0.9999
    assert half.min_cosine > int8.min_cosine  # float16 keeps the moves
    assert back.min_cosine > int8.min_cosine  # int8 rounded them back to where the tune started
    assert (tmp_path / "float16" / "model.onnx").stat().st_size < 0.6 * (trained / "model-fp32.onnx").stat().st_size


def test_the_frozen_token_table_is_the_bases_and_each_matrix_in_its_place(rebuilt: Path) -> None:
    model, stock = load(rebuilt)[0].state_dict(), load(base_weights())[0].state_dict()
    table, base = model["embeddings.word_embeddings.weight"], stock["embeddings.word_embeddings.weight"]
    step = base.abs().amax(dim=1, keepdim=True) / 127  # int8's step in each row
    assert bool(((table - base).abs() <= step).all())  # frozen in training: the base's, up to its int8 storage
    square = [k for k, v in stock.items() if k.startswith("encoder.") and tuple(v.shape) == (384, 384)]
    assert len(square) == 6 * 4  # query, key, value and the attention's output in each layer
    for key in square:  # fine-tuning moved each matrix a little: the base's nearest to it is its own
        assert not torch.equal(model[key], stock[key])
        assert min(square, key=lambda other: float((model[key] - stock[other]).norm())) == key


def test_the_rebuild_happens_once_per_home(rebuilt: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_: object) -> Path:
        raise AssertionError("rebuilt again")

    monkeypatch.setattr(tune, "torch_weights_from_onnx", refuse)
    again = tune.current_weights(Settings(home=home, model_dir=None, embedding_model=TOOLS_MODEL_NAME))
    assert again == (TOOLS_MODEL_NAME, rebuilt)


def test_a_checkpoint_with_one_layers_matrices_swapped_is_refused(tmp_path: Path) -> None:
    state, config, _ = rebuilt_state(PACKAGED, base_weights())
    query, key = "encoder.layer.3.attention.self.query.weight", "encoder.layer.3.attention.self.key.weight"
    state[query], state[key] = state[key], state[query]
    save_checkpoint(state, config, tmp_path, PACKAGED.parents[1])  # the package's tokenizer files
    with pytest.raises(RebuildMismatch, match="differs"):
        verify(tmp_path, PACKAGED, parity_texts())


def test_a_model_with_no_onnx_file_has_no_weights_to_tune_from(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path, model_dir=tmp_path, embedding_model="my/model")
    with pytest.raises(tune.NoWeights, match=r"no model\.onnx"):
        tune.current_weights(settings)
    assert not (tmp_path / tune.WEIGHTS_DIR).exists()
