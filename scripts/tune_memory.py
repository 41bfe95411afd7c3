"""The training's resident memory step by step: ``toolsel.tuning.train.train`` on a set's own query → tool pairs
(batch 64, one thread, the settings' defaults otherwise), the process's RSS printed every 5 steps; with
``--mmap-threshold-mb``, glibc's mmap threshold fixed there first (``mallopt``), so that blocks above it go back to
the system when freed. Needs the ``tune`` extra.

    python scripts/tune_memory.py ../shared/bench/metatool --steps 40 [--mmap-threshold-mb 1]
"""

import argparse
import ctypes
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

from toolsel.evaluation.dataset import load_set, tool_spec, wire_names
from toolsel.services.indexer.hashing import embedding_text
from toolsel.tuning.build import base_weights
from toolsel.tuning.pairs import Pair
from toolsel.tuning.train import TrainSettings, train

M_MMAP_THRESHOLD = -3
BATCH = 64


def rss_mb() -> int:
    return int(Path(f"/proc/{os.getpid()}/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 2**20


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("set_dir", type=Path)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--mmap-threshold-mb", type=int)
    args = parser.parse_args(argv)
    if args.mmap_threshold_mb is not None:
        ctypes.CDLL("libc.so.6").mallopt(M_MMAP_THRESHOLD, args.mmap_threshold_mb << 20)
    bench = load_set(args.set_dir)
    names = wire_names([t.name for t in bench.tools])
    texts = {t.name: embedding_text(tool_spec(t, names[t.name])) for t in bench.tools}
    pairs = [Pair(q.text, name, texts[name], bench.name) for q in bench.queries for name in sorted(q.relevant)]
    pairs = pairs[: BATCH * args.steps * 2]  # enough for the steps once a batch's repeats wait

    def progress(step: int, steps: int, _: float, seconds: float) -> None:
        if step % 5 == 0:
            print(f"step {step}/{steps}: RSS {rss_mb()} MB, {seconds:.0f} s", flush=True)
        if step == args.steps:
            raise SystemExit(0)

    with tempfile.TemporaryDirectory() as out:
        train(pairs, base_weights(), Path(out), TrainSettings(threads=1, batch_size=BATCH), progress)


if __name__ == "__main__":
    main()
