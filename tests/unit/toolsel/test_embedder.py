"""Tool2Vec's pure part: the normalised mean of unit vectors; the packaged model's layout on disk; a model that
cannot be loaded says why."""

import math
from pathlib import Path

import numpy as np
import pytest

from toolsel.embedder import (
    TOKENIZER_FILES,
    Embedder,
    ModelUnavailable,
    _normalise,
    assemble_model_dir,
    load_embedder,
    mean_of_normalised,
)


def test_normalise_rows_to_unit_length() -> None:
    rows = np.array([[3, 4], [0, -2]], dtype=np.float32)
    result = _normalise(rows)
    assert result.dtype == np.float32
    np.testing.assert_allclose(result, [[0.6, 0.8], [0.0, -1.0]], rtol=1e-6)


def test_normalise_leaves_a_zero_row_zero() -> None:
    result = _normalise(np.zeros((1, 3), dtype=np.float32))
    assert result.tolist() == [[0.0, 0.0, 0.0]]


def test_mean_of_normalised_hand_computed() -> None:
    # mean of (1, 0) and (0.6, 0.8) is (0.8, 0.4); its length is sqrt(0.8), so the unit vector is (2, 1) / sqrt(5)
    rows = np.array([[1, 0], [0.6, 0.8]], dtype=np.float32)
    result = mean_of_normalised([rows])
    assert result.shape == (2,)
    assert result.tolist() == pytest.approx([2 / math.sqrt(5), 1 / math.sqrt(5)], abs=1e-6)


def test_mean_of_normalised_stacks_several_blocks() -> None:
    blocks = [np.array([[1, 0]], dtype=np.float32), np.array([[0, 1]], dtype=np.float32)]
    assert mean_of_normalised(blocks).tolist() == pytest.approx([math.sqrt(0.5), math.sqrt(0.5)], abs=1e-6)


def test_mean_of_normalised_is_a_unit_vector() -> None:
    rows = _normalise(np.random.default_rng(3).normal(size=(5, 384)).astype(np.float32))
    result = mean_of_normalised([rows])
    assert result.dtype == np.float32
    assert float(np.linalg.norm(result)) == pytest.approx(1.0, abs=1e-5)


def test_mean_of_one_vector_is_that_vector() -> None:
    assert mean_of_normalised([np.array([[0.0, 0.6, 0.8]], dtype=np.float32)]).tolist() == pytest.approx(
        [0.0, 0.6, 0.8], abs=1e-6
    )


def test_laying_out_the_model_again_leaves_every_file_in_place(tmp_path: Path) -> None:
    """The services of a new home lay the model out at once, each while the others may be loading it: a file
    already right is never rewritten under a reader."""
    first = assemble_model_dir(tmp_path / "model")
    before = {p.name: (p.lstat().st_ino, p.lstat().st_mtime_ns) for p in first.iterdir()}
    assemble_model_dir(tmp_path / "model")
    assert {p.name: (p.lstat().st_ino, p.lstat().st_mtime_ns) for p in first.iterdir()} == before
    assert set(before) == {"model.onnx", *TOKENIZER_FILES}


def test_laying_out_the_model_replaces_a_damaged_file_whole(tmp_path: Path) -> None:
    directory = assemble_model_dir(tmp_path / "model")
    good = (directory / "tokenizer.json").read_bytes()
    (directory / "tokenizer.json").write_bytes(good[: len(good) // 2])
    assemble_model_dir(directory)
    assert (directory / "tokenizer.json").read_bytes() == good
    assert sorted(p.name for p in directory.iterdir()) == sorted(["model.onnx", *TOKENIZER_FILES])


def test_a_model_fastembed_does_not_know_is_read_from_its_directory_as_a_mean_pooled_model(tmp_path: Path) -> None:
    """A local model under a name of its own (the packaged model's files here): the vectors are the known model's."""
    directory = assemble_model_dir(tmp_path / "model")
    known = Embedder(directory)
    local = Embedder(directory, model_name="local/minilm-copy", dim=384)
    texts = ["book a flight to Rome", "send an email to Bob about the meeting"]
    assert local.dim == 384
    assert np.allclose(local.embed(texts), known.embed(texts), atol=1e-5)
    request, parts = "book a flight to Rome and then email Bob", ["book a flight to Rome", "email Bob"]
    read_once = known.embed_request(request, parts)  # late chunking: the parts read in the request's context
    assert not np.allclose(read_once[1], known.embed([parts[0]])[0], atol=1e-3)
    assert np.allclose(np.vstack(local.embed_request(request, parts)), np.vstack(read_once), atol=1e-5)
    with pytest.raises(ValueError, match="give its vector size"):
        Embedder(directory, model_name="local/unsized")
    with pytest.raises(ValueError, match="makes 384-d vectors, not 768"):
        Embedder(directory, model_name="local/missized", dim=768)


def test_requests_embedded_together_get_the_vectors_each_gets_alone(tmp_path: Path) -> None:
    """Micro-batching: the plain queries in one model call, the compound one in its own context, all cached."""
    model = Embedder(assemble_model_dir(tmp_path / "model"))
    alone = Embedder(assemble_model_dir(tmp_path / "model"))
    requests = [
        ("book a flight to Rome", []),
        ("send an email to Bob about the quarterly meeting notes", []),
        ("book a flight to Rome and then email Bob", ["book a flight to Rome", "email Bob"]),
        ("book a flight to Rome", []),
    ]
    together = model.embed_requests(requests)
    assert all(model.cached(query, parts) for query, parts in requests)
    for (query, parts), vectors in zip(requests, together, strict=True):
        assert np.allclose(np.vstack(vectors), np.vstack(alone.embed_request(query, parts)), atol=1e-5)


def test_a_fastembed_model_not_in_the_cache_with_downloads_off_says_so_and_what_to_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As under compose (the image sets HF_HUB_OFFLINE=1): fastembed said only "Could not load model ... from any
    source"."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelUnavailable) as refused:
        load_embedder(
            None,
            tmp_path,
            threads=1,
            workers=1,
            batch_size=8,
            batch_tokens=512,
            cache_size=0,
            model_name="BAAI/bge-small-en-v1.5",
            dim=384,
        )
    said = str(refused.value)
    assert f"BAAI/bge-small-en-v1.5 is not in the model cache ({tmp_path / 'models'})" in said
    assert "downloads are off (HF_HUB_OFFLINE=1" in said
    assert "set TOOLSEL_MODEL_DIR" in said
    assert "`toolsel indexer --switch-model` run with HF_HUB_OFFLINE unset" in said
