"""Build the retrieval model's training pairs: query → tool, from the evaluation sets and public tool-use data.

Reads every evaluation set under ``--bench`` (their labelled queries are pairs too, each tagged with its own set)
and the public sources given as ``--source NAME=CHECKOUT`` (a git checkout of the source's repository; the
names and what is read from each are in ``toolsel/training_data/readers.py``). External queries that repeat an
evaluation query, exactly or nearly, are dropped. Writes into ``--out``:

- ``pairs.jsonl``: one pair a line, ``{"query_id", "query", "tool_id", "tool_text", "source", "group"}``;
  ``tool_text`` is what serving embeds the tool from (``embedding_text``), ``group`` the evaluation set the
  pair counts as for leave-one-set-out training (or ``external``);
- ``manifest.json``: per source its repository, commit, licence (SPDX), the files read with their SHA-256,
  query and pair counts, and the duplicates removed, by evaluation set (for an evaluation set, the origin its
  SOURCE.md states).

Both are written under a temporary name and renamed, so a reader never sees half a file.

Usage (from the repository root)::

    python scripts/build_training_pairs.py --bench SETS_DIR --out ../train-data \\
        --source toollens=../train-src/COLT --source toolalpaca=../train-src/ToolAlpaca \\
        --source api_bank=../train-src/DAMO-ConvAI --source callnavi=../train-src/CallNavi \\
        --source seal_tools_dev=../train-src/Seal-Tools
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from toolsel.bench.catalog import pooled_sets
from toolsel.embedder import BATCH_TOKENS, MODEL_NAME, load_embedder
from toolsel.evaluation.dataset import BenchSet, Tool, tool_spec
from toolsel.services.indexer.hashing import embedding_text
from toolsel.services.selector.decompose import decompose
from toolsel.training_data.licences import NO_ASSERTION, PERMISSIVE, evaluation_set_origin, spdx_id
from toolsel.training_data.model import LabelledQuery, Pair, SourceSet
from toolsel.training_data.near_duplicates import NearDuplicateIndex
from toolsel.training_data.needs import need_pairs
from toolsel.training_data.pairs import Screened, assign_group, capped, screen, shared_tools, source_pairs
from toolsel.training_data.readers import SOURCES, SourceFormat


def serving_text(tool: Tool, wire_name: str) -> str:
    """The tool's text exactly as the indexer embeds it from the evaluation sets' tools."""
    return embedding_text(tool_spec(tool, wire_name))


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def commit_of(checkout: Path) -> str:
    return subprocess.run(
        ["git", "-C", str(checkout), "rev-parse", "HEAD"], check=True, capture_output=True, text=True
    ).stdout.strip()


def read_files(checkout: Path, fmt: SourceFormat) -> dict[str, bytes]:
    """The source's files under ``checkout``; a pattern matching nothing is an error (a snapshot may lack a
    large file)."""
    files: dict[str, bytes] = {}
    for pattern in fmt.patterns:
        found = sorted(p for p in checkout.glob(pattern) if p.is_file())
        if not found:
            raise SystemExit(f"{fmt.name}: nothing matches {pattern} under {checkout}")
        files.update({p.relative_to(checkout).as_posix(): p.read_bytes() for p in found})
    return files


def bench_source(bench: BenchSet) -> SourceSet:
    queries = tuple(LabelledQuery(q.id, q.text, tuple(sorted(q.relevant))) for q in bench.queries)
    return SourceSet(bench.name, bench.name, tuple(bench.tools), queries)


def counts(screened: Screened, pairs: list[Pair]) -> dict[str, Any]:
    return {
        "tools": len(screened.source.tools),
        "queries_kept": len(screened.source.queries),
        "exact_duplicates_removed": dict(sorted(screened.exact.items())),
        "near_duplicates_removed": dict(sorted(screened.near.items())),
        "pairs_before_caps": len(pairs),
    }


def stock_model_vectors(texts: Sequence[str]) -> npt.NDArray[np.float32]:
    """Unit vectors of the stock all-MiniLM-L6-v2 (packaged, offline), which never saw the evaluation sets."""
    with tempfile.TemporaryDirectory() as home:
        model = load_embedder(
            None, Path(home), threads=1, workers=1, batch_size=64, batch_tokens=BATCH_TOKENS, cache_size=0
        )
        return model.embed(texts)


def parse_args(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bench", type=Path, required=True, help="folder of evaluation sets (tools.jsonl + queries.jsonl)")
    ap.add_argument("--out", type=Path, required=True, help="folder to write pairs.jsonl and manifest.json into")
    ap.add_argument(
        "--source",
        action="append",
        default=[],
        metavar="NAME=CHECKOUT",
        help=f"a public source and its git checkout; names: {', '.join(f.name for f in SOURCES)}",
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-per-tool", type=int, default=50, help="pairs of one tool from one source, at most")
    ap.add_argument("--max-per-source", type=int, default=10_000, help="pairs from one source, at most")
    ap.add_argument(
        "--near-duplicate",
        type=float,
        default=0.7,
        help="Jaccard similarity of word sets from which a query repeats an evaluation query",
    )
    ap.add_argument(
        "--needs",
        action="store_true",
        help="also pair each tool of a request of several needs with its own need (the selector's decompose, the"
        " need nearest the tool by the stock all-MiniLM-L6-v2)",
    )
    ap.add_argument(
        "--licence",
        action="append",
        metavar="SPDX",
        help=f"use sources under this licence (repeatable; default: {', '.join(PERMISSIVE)}); "
        f"{NO_ASSERTION} admits sources whose licence could not be determined",
    )
    return ap.parse_args(argv)


def write_atomically(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    licences = sorted(set(args.licence or PERMISSIVE))
    formats = {f.name: f for f in SOURCES}
    benches = {b.name: b for b in pooled_sets(args.bench)}
    index = NearDuplicateIndex({name: [q.text for q in b.queries] for name, b in benches.items()}, args.near_duplicate)
    catalogs = {name: b.tools for name, b in benches.items()}
    pairs: list[Pair] = []
    manifest_sources: dict[str, Any] = {}

    for name, bench in benches.items():
        screened = screen(bench_source(bench), index, own_set=name)
        own = source_pairs(screened.source, name, serving_text)
        pairs += own
        files = [args.bench / name / f for f in ("tools.jsonl", "queries.jsonl")]
        source_md = args.bench / name / "SOURCE.md"
        origin = evaluation_set_origin(source_md.read_text(encoding="utf-8")) if source_md.is_file() else {}
        manifest_sources[name] = {
            "evaluation_set": True,
            **origin,
            "group": name,
            "files": {f"{name}/{f.name}": sha256(f) for f in files},
            **counts(screened, own),
        }
        print(f"{name}: {len(own)} pairs", file=sys.stderr)

    for spec in args.source:
        name, _, location = spec.partition("=")
        if name not in formats or not location:
            raise SystemExit(f"--source {spec!r}: expected NAME=CHECKOUT with NAME one of {', '.join(formats)}")
        fmt, checkout = formats[name], Path(location)
        licence_path = checkout / fmt.licence_file
        licence = spdx_id(licence_path.read_text(encoding="utf-8") if licence_path.is_file() else None)
        record: dict[str, Any] = {"repository": fmt.repository, "commit": commit_of(checkout), "licence": licence}
        manifest_sources[name] = record
        if licence not in licences:
            record["skipped"] = f"licence {licence} ({fmt.licence_file}) not admitted; --licence {licence} admits it"
            print(f"{name}: skipped, {record['skipped']}", file=sys.stderr)
            continue
        files = read_files(checkout, fmt)
        source = fmt.read(files, catalogs[fmt.catalog_of] if fmt.catalog_of else ())
        shared = shared_tools(source.tools, catalogs)
        group = assign_group(name, fmt.group, shared)
        screened = screen(source, index)
        own = source_pairs(screened.source, group, serving_text)
        pairs += own
        record.update(
            group=group,
            tools_shared_with_evaluation_sets={k: v for k, v in shared.items() if v},
            files={path: hashlib.sha256(content).hexdigest() for path, content in sorted(files.items())},
            queries_read=len(source.queries),
            **counts(screened, own),
        )
        print(f"{name}: {len(own)} pairs ({group})", file=sys.stderr)

    kept = capped(pairs, args.max_per_tool, args.max_per_source, args.seed)
    needs: dict[str, Any] = {}
    if args.needs:
        added = need_pairs(kept, decompose, stock_model_vectors)
        kept += added
        by_group = dict(sorted(Counter(p.group for p in added).items()))
        needs = {"split_by": "decompose", "aligned_by": MODEL_NAME, "need_pairs_added": by_group}
    kept_by_source = Counter(p.source for p in kept)
    for name, record in manifest_sources.items():
        record["pairs"] = kept_by_source[name]
    manifest = {
        "built_by": "scripts/build_training_pairs.py",
        "settings": {
            "seed": args.seed,
            "max_per_tool": args.max_per_tool,
            "max_per_source": args.max_per_source,
            "near_duplicate_jaccard": args.near_duplicate,
            "licences": licences,
            "needs": args.needs,
        },
        **({"needs": needs} if needs else {}),
        "pairs": len(kept),
        "pairs_by_group": dict(sorted(Counter(p.group for p in kept).items())),
        "sources": manifest_sources,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    write_atomically(args.out / "pairs.jsonl", "".join(json.dumps(asdict(p), ensure_ascii=False) + "\n" for p in kept))
    write_atomically(args.out / "manifest.json", json.dumps(manifest, indent=2, ensure_ascii=False) + "\n")
    print(json.dumps(manifest["pairs_by_group"]), file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
