"""Record the selector's replies to real bench queries in process, to check that a change leaves them as they were.

    python scripts/record_replies.py SETS_DIR OUT.jsonl [--queries 300] [--tools 500]
    python scripts/record_replies.py --compare OLD.jsonl NEW.jsonl

Builds a catalog of ``--tools`` tools from the bench sets (``toolsel bench --data``'s format) with their vectors from
the configured model (the model's name is the file's first line: replies recorded with another model are not
compared), a few pinned tools, related tools, tenant-owned tools and a review index of past queries, then selects
for each of ``--queries`` mixed bench queries a seeded request whose options vary with its number (k, rerank off,
BM25 or vector alone, a score floor, a tool limit, another tenant), each twice (the second from the hot-query
cache), teaching the selector posteriors as it goes. Each line is one reply and its event, without what differs
from run to run (the selection id, the time and the latency).
"""

import argparse
import asyncio
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from in_process import PLUGIN, catalog_row
from threadpoolctl import threadpool_limits

from toolsel.bench.catalog import bench_queries, catalog_of, interleaved, pooled_sets
from toolsel.bench.run import QUERY_SEED
from toolsel.contracts import DEFAULT_TENANT, SelectFilters, SelectRequest
from toolsel.runtime import load_model
from toolsel.services.selector.catalog import ReviewIndex, build_catalog
from toolsel.services.selector.selector import Selector
from toolsel.settings import Settings, get_settings

VARYING = ("selection_id", "latency_ms", "occurred_at")
"""Reply and event fields that differ between two runs of the same selection."""


def requests_for(texts: Sequence[str]) -> list[SelectRequest]:
    """One seeded request per query, its options varying with its number so that every path of a selection runs."""
    modes = {0: "bm25", 5: "vector"}
    return [
        SelectRequest(
            query=text,
            tenant_id="acme" if i % 4 == 0 else DEFAULT_TENANT,
            k=(3, 5, 10)[i % 3],
            rerank=i % 7 != 0,
            retrieval=modes.get(i % 11, "hybrid"),
            filters=SelectFilters(min_score=0.2 if i % 5 == 0 else None),
            max_tools=4 if i % 9 == 0 else None,
            seed=i,
            dry_run=True,
        )
        for i, text in enumerate(texts)
    ]


def selector_for(settings: Settings, data: Path, tools: int, queries: int) -> tuple[Selector, list[str]]:
    """The selector over a catalog of bench tools (real vectors) and the bench queries it answers."""
    sets = pooled_sets(data)
    embedder = asyncio.run(load_model(settings))
    rng = np.random.default_rng(0)
    chosen = catalog_of([t for s in sets for t in s.tools], tools)
    names = [t.name.replace("/", "_").strip()[:120] for t in chosen]
    vectors = embedder.embed([f"{name}: {t.description}" for name, t in zip(names, chosen, strict=True)])
    rows = []
    for i, (name, tool, vector) in enumerate(zip(names, chosen, vectors, strict=True)):
        related = [names[(i + 1) % len(names)], names[(i + 7) % len(names)]] if i % 10 == 0 else []
        spec = {"name": name, "description": tool.description, "parameters": tool.parameters, "related_tools": related}
        row = catalog_row(spec, vector)
        row["tenant_id"] = "acme" if i % 25 == 3 else "*"
        row["is_always_pinned"], row["pin_weight"] = i in (11, 97), i % 3
        rows.append(row)
    rows.sort(key=lambda r: (-r["pin_weight"], r["plugin_id"], r["name"]))  # as the store serves them
    selector = Selector(settings, build_catalog(rows, [], [], settings), embedder, rng=np.random.default_rng(0))
    texts = bench_queries(interleaved([[q.text for q in s.queries] for s in sets], QUERY_SEED), queries)
    past = embedder.embed(texts[: queries // 5])  # each reviewed for the tool nearest it, by its own tenant
    selector.reviews = ReviewIndex(
        [f"{PLUGIN}/{names[int(i)]}" for i in np.argmax(past @ vectors.T, axis=1)],
        past,
        rng.uniform(0.5, 1.5, len(past)),
        np.array([request.tenant_id for request in requests_for(texts[: len(past)])]),
    )
    return selector, texts


def record(selector: Selector, requests: Sequence[SelectRequest]) -> list[dict[str, Any]]:
    """Each request's reply and event, twice; after every third request its first tools are taught a posterior."""
    out = []
    for i, request in enumerate(requests):
        for _ in range(2):
            reply, event = selector.select(request)
            out.append({"reply": reply.model_dump(mode="json"), "event": event.model_dump(mode="json")})
        if i % 3 == 0:
            for rank, tool in enumerate(reply.tools[:2]):
                alpha, beta = (5.0, 1.0) if rank == 0 else (1.0, 4.0)
                key = f"{tool.plugin_id}/{tool.name}"
                selector.learn(key, request.tenant_id, reply.context_key, alpha, beta, None)
    for line in out:
        for part in line.values():
            for name in VARYING:
                part.pop(name, None)
    return out


def compare(old: Path, new: Path) -> int:
    """0 when both files hold the same replies (recorded with the same model); else the first difference."""
    a, b = old.read_text().splitlines(), new.read_text().splitlines()
    if a[0] != b[0]:
        print(f"recorded with different models: {a[0]} against {b[0]}")
        return 2
    for i, (x, y) in enumerate(zip(a[1:], b[1:], strict=False)):
        if x != y:
            print(f"line {i + 2} differs:\n- {x[:2000]}\n+ {y[:2000]}")
            return 1
    if len(a) != len(b):
        print(f"{len(a)} lines against {len(b)}")
        return 1
    print(f"{len(a) - 1} replies identical")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", type=Path, nargs="?")
    parser.add_argument("out", type=Path, nargs="?")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--tools", type=int, default=500)
    parser.add_argument("--compare", type=Path, nargs=2, metavar=("OLD", "NEW"))
    args = parser.parse_args(argv)
    if args.compare:
        return compare(*args.compare)
    if args.data is None or args.out is None:
        parser.error("SETS_DIR and OUT are needed to record")
    settings = get_settings()
    threadpool_limits(settings.blas_threads, user_api="blas")
    selector, texts = selector_for(settings, args.data, args.tools, args.queries)
    lines = [json.dumps({"model": settings.embedding_model, "dim": settings.embedding_dim})]
    lines += [json.dumps(line, sort_keys=True) for line in record(selector, requests_for(texts))]
    args.out.write_text("\n".join(lines) + "\n")
    print(f"{len(lines) - 1} replies in {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
