"""The benchmark's numbers as a table and as JSON."""

import json
from pathlib import Path
from typing import Any

from rich.table import Table

COLUMNS = (
    ("tools", "tools"),
    ("select p50/p95/p99 ms", "select"),
    ("overhead p50/p99 ms (in selector)", "overhead"),
    ("inside p50/p95/p99 ms", "inside"),
    ("in process p50/p95/p99 ms (CPU p50)", "in_process"),
    ("repeated p50 ms", "select_repeated_p50_ms"),
    ("selector RSS MB", "selector_rss_mb"),
    ("sync tools/s (of batch / model rate)", "sync"),
    ("sync s: write / embed (model)", "sync_phases"),
    ("indexer RSS / peak MB", "indexer_rss"),
)


def cells(size: dict[str, Any]) -> list[str]:
    """One row: the uncached percentiles in one cell, the selector's (the reply's latency) and the selection's in
    process without the embedding likewise (with its CPU time's p50); the overhead beside its part inside the
    selector; the sync's rate beside its share of the model's batch rate (on the reference's queries) and of the
    model's rate on the sync's own texts (the share of the sync's time spent in the model); its phases and the
    indexer's memory in one cell each; every other column as measured."""
    u, i, p = size["select_uncached_ms"], size["selector_inside_ms"], size["in_process_ms"]
    joined = {
        "select": f"{u['p50']} / {u['p95']} / {u['p99']}",
        "overhead": (
            f"{size['overhead_p50_ms']} / {size['overhead_p99_ms']} "
            f"({size['overhead_in_selector_p50_ms']} / {size['overhead_in_selector_p99_ms']})"
        ),
        "inside": f"{i['p50']} / {i['p95']} / {i['p99']}",
        "in_process": f"{p['p50']} / {p['p95']} / {p['p99']} ({size['in_process_cpu_ms']['p50']})",
        "sync": f"{size['sync_tools_per_s']} ({size['sync_of_batch_rate']:.0%} / {size['sync_of_model_rate']:.0%})",
        "sync_phases": f"{size['sync_write_s']} / {size['sync_embed_s']} ({size['sync_model_s']})",
        "indexer_rss": f"{size['indexer_rss_mb']} / {size['indexer_peak_rss_mb']}",
    }
    return [joined[key] if key in joined else str(size[key]) for _, key in COLUMNS]


def table(result: dict[str, Any]) -> Table:
    ref, t = result["reference"], result["throughput"]
    caption = (
        f"reference: NATS round trip p50 {ref['round_trip_p50_ms']} ms, one query embedding p50 "
        f"{ref['embed_query_p50_ms']} ms, model batch {ref['batch_texts_per_s']} texts/s\n"
        f"throughput at {t['tools']} tools, {t['in_flight']} in flight: one selector {t['one_selector_per_s']}/s "
        f"(before / after two: {' / '.join(map(str, t['one_selector_before_after_per_s']))}), "
        f"two {t['two_selectors_per_s']}/s ({t['two_over_one']}x); select p50 / p99 under that load: one selector "
        f"{t['one_selector_select_ms']['p50']} / {t['one_selector_select_ms']['p99']} ms, two "
        f"{t['two_selectors_select_ms']['p50']} / {t['two_selectors_select_ms']['p99']} ms"
    )
    out = Table(*(title for title, _ in COLUMNS), title=f"toolsel bench ({', '.join(result['sets'])})", caption=caption)
    for size in result["sizes"]:
        out.add_row(*cells(size))
    return out


def write_json(path: Path, result: dict[str, Any]) -> None:
    path.write_text(json.dumps(result, indent=2) + "\n")
