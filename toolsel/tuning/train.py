"""Fine-tune a mean-pooled sentence model (all-MiniLM-L6-v2 by default) on query → tool pairs with in-batch
negatives (multiple negatives ranking: each query's own tool against the batch's other tools), on the CPU first:
length-bucketed batches, short length cuts for queries, the torch threads set once; on a CUDA GPU where torch sees
one (nothing needs one). Needs the ``tune`` extra."""

import contextlib
import os
import random
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from transformers import AutoModel, AutoTokenizer, get_linear_schedule_with_warmup

from toolsel.tuning.pairs import Pair, batches


@dataclass(frozen=True)
class TrainSettings:
    seed: int = 0
    batch_size: int = 64
    learning_rate: float = 2e-5
    scale: float = 20.0
    """Cosines times this are the logits of the in-batch softmax (sentence-transformers' default)."""
    epochs: int = 1
    warmup: float = 0.1
    """Share of the steps over which the learning rate rises from 0."""
    query_max_tokens: int = 64
    """Queries are cut here while training (the served model reads 256 tokens): the evaluation sets' queries are
    a median of 26 to 83 tokens long."""
    tool_max_tokens: int = 128
    """Tool texts are cut here while training: what tells a tool apart comes first (its name and description),
    and a step's cost grows with the longest text of the batch."""
    freeze_embeddings: bool = True
    """The token embedding table (half the weights) is left as it was: a few thousand pairs barely move it, and
    its gradient and optimiser update are a large part of a step on a CPU."""
    threads: int | None = None
    """Torch's threads for the matrix products. None: the cores this process may run on, at most
    ``MAX_THREADS``; one thread for work between operators either way (a step is one chain of operators)."""
    bf16: bool | None = None
    """Matrix products in bfloat16 (autocast; the weights stay float32). None: where the CPU has bfloat16
    instructions, which made a step about 2.5 times cheaper in CPU time on an AVX-512 machine (docs/results.md)."""


@dataclass(frozen=True)
class TrainResult:
    pairs: int
    """Distinct pairs trained on (pairs that fit no batch left out)."""
    groups: dict[str, int]
    """Distinct pairs trained on, by group."""
    examples: int
    """Pairs the steps went through: each pair once per epoch it fitted a batch in. The time follows these."""
    steps: int
    seconds: float
    cpu_seconds: float
    """CPU time of the steps over all threads: on a shared machine, what the work costs whatever else runs."""
    first_loss: float
    last_loss: float
    threads: int
    """Torch's threads for the matrix products."""
    device: str
    """Where the steps ran: ``cpu`` or ``cuda``."""
    bf16: bool
    """Whether the matrix products ran in bfloat16."""

    @property
    def seconds_per_1000_pairs(self) -> float:
        """Seconds per 1,000 pairs per epoch."""
        return 1000 * self.seconds / max(self.examples, 1)

    @property
    def cpu_seconds_per_1000_pairs(self) -> float:
        return 1000 * self.cpu_seconds / max(self.examples, 1)


MAX_THREADS = 1
"""Threads a run takes by default at most: on the 2-core machines it is meant for (users', CI), with anything else
running, two threads took 2.4 times as long per pair as one, waiting for each other (277 against 117 s per 1,000
pairs at load average 4; docs/results.md, time per 1,000 pairs). ``--threads`` gives more on an idle machine."""


def default_threads() -> int:
    """The cores this process may run on, at most ``MAX_THREADS``."""
    return max(1, min(MAX_THREADS, len(os.sched_getaffinity(0))))


Progress = Callable[[int, int, float, float], None]
"""Called after each step: step, steps, the step's loss, seconds so far."""


def training_device() -> torch.device:
    """A CUDA GPU where torch sees one (a step at batch 64 about 0.1 s there against about 17 s on two CPU
    threads), else the CPU."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def seed_everything(seed: int, threads: int | None, device: torch.device) -> None:
    """One seed for Python, numpy and torch, deterministic kernels, and torch's thread counts set once. On a GPU,
    cuBLAS is deterministic only with a fixed workspace, and a kernel that has no deterministic version warns
    rather than stops the run."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    if device.type == "cuda":
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.use_deterministic_algorithms(True, warn_only=device.type == "cuda")
    torch.set_num_threads(threads or default_threads())
    with contextlib.suppress(RuntimeError):  # set already: torch allows it once, before any parallel work
        torch.set_num_interop_threads(1)


def bf16_supported(device: torch.device) -> bool:
    """Whether ``device`` computes in bfloat16 natively (a GPU's own check; on a CPU, oneDNN's: AVX-512 BF16 or
    AMX)."""
    if device.type == "cuda":
        return bool(torch.cuda.is_bf16_supported())
    return bool(torch.backends.mkldnn.is_available() and torch.ops.mkldnn._is_mkldnn_bf16_supported())


def load(base: Path) -> tuple[Any, Any]:
    """The base model (eager attention: the same arithmetic as the export; torch's fused attention cost as much
    per pair on a CPU, docs/results.md) and its tokenizer, from files. Its weights in float32 whatever they are
    stored as: transformers 5 loads a float16 file as float16, where the optimiser's small steps round away and
    the export finds no float32 matrix to store as int8."""
    model = AutoModel.from_pretrained(base, attn_implementation="eager", dtype=torch.float32)
    return model, AutoTokenizer.from_pretrained(base)


def mean_pooled(model: Any, tokenizer: Any, texts: Sequence[str], max_tokens: int) -> torch.Tensor:
    """Unit vectors: the mean of each text's token vectors over its attention mask, as the served model pools."""
    encoded = tokenizer(list(texts), padding=True, truncation=True, max_length=max_tokens, return_tensors="pt")
    encoded = encoded.to(next(model.parameters()).device)
    states = model(**encoded).last_hidden_state
    mask = encoded["attention_mask"].unsqueeze(-1).to(states.dtype)
    pooled = (states * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)
    return torch.nn.functional.normalize(pooled, dim=-1)


def train(
    pairs: Sequence[Pair], base: Path, out: Path, settings: TrainSettings, progress: Progress | None = None
) -> TrainResult:
    """Fine-tune ``base`` on ``pairs`` and save the model and its tokenizer in ``out`` (transformers' layout)."""
    device = training_device()
    seed_everything(settings.seed, settings.threads, device)
    model, tokenizer = load(base)
    model.to(device)
    plan = [b for epoch in range(settings.epochs) for b in batches(pairs, settings.batch_size, settings.seed + epoch)]
    if not plan:
        raise ValueError("too few distinct pairs for one batch")
    if settings.freeze_embeddings:
        model.get_input_embeddings().weight.requires_grad_(False)
    trainable = [weight for weight in model.parameters() if weight.requires_grad]
    optimiser = torch.optim.AdamW(trainable, lr=settings.learning_rate)
    schedule = get_linear_schedule_with_warmup(optimiser, int(settings.warmup * len(plan)), len(plan))
    model.train()
    started, cpu_started = time.perf_counter(), time.process_time()
    losses: list[float] = []
    bf16 = bf16_supported(device) if settings.bf16 is None else settings.bf16
    for step, batch in enumerate(plan, 1):
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
            queries = mean_pooled(model, tokenizer, [p.query for p in batch], settings.query_max_tokens)
            tools = mean_pooled(model, tokenizer, [p.tool_text for p in batch], settings.tool_max_tokens)
        logits = settings.scale * queries.float() @ tools.float().T
        loss = torch.nn.functional.cross_entropy(logits, torch.arange(len(batch), device=device))
        loss.backward()
        optimiser.step()
        schedule.step()
        optimiser.zero_grad()
        losses.append(loss.item())
        if progress is not None:
            progress(step, len(plan), losses[-1], time.perf_counter() - started)
    seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu_started
    model.to("cpu").eval()
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    groups = Counter(p.group for p in {p for b in plan for p in b})
    last = losses[-10:]
    return TrainResult(
        sum(groups.values()),
        dict(sorted(groups.items())),
        sum(len(b) for b in plan),
        len(plan),
        seconds,
        cpu_seconds,
        losses[0],
        sum(last) / len(last),
        torch.get_num_threads(),
        device.type,
        bf16,
    )
