"""Output: rich tables on the terminal, JSON with every number, the learning curve as CSV and PNG."""

import csv
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rich.table import Table

from toolsel.evaluation.metrics import METRICS
from toolsel.evaluation.online import Point

REFERENCES = {"bm25": "BM25 (reference)", "minilm": "MiniLM (reference)"}
"""Retrievers of baselines.json and how the table names them."""


def references(baselines: Mapping[str, Any] | None, label: str | None = None) -> dict[str, dict[str, float]]:
    """The reference rows of baselines.json, overall (``label`` None) or of one subset."""
    if not baselines:
        return {}
    source = baselines if label is None else baselines.get("subsets", {}).get(label, {})
    return {title: dict(source[key]) for key, title in REFERENCES.items() if isinstance(source.get(key), dict)}


def metrics_table(title: str, rows: Mapping[str, Mapping[str, float]], caption: str = "") -> Table:
    """One row per retriever, one column per metric; a metric a row lacks shows as ``-``."""
    table = Table(title=title, title_justify="left", caption=caption or None, caption_justify="left")
    table.add_column("mode")
    for metric in METRICS:
        table.add_column(metric, justify="right")
    for name, values in rows.items():
        style = "dim" if name in REFERENCES.values() else None
        cells = [f"{values[m]:.3f}" if m in values else "-" for m in METRICS]
        table.add_row(name, *cells, style=style)
    return table


def offline_tables(result: Mapping[str, Any]) -> list[Table]:
    """The overall table, then one per subset label, each with the reference rows above the modes."""
    baselines, modes = result.get("baselines"), result["modes"]
    n = result["queries_evaluated"]
    caption = "references: whole set, from baselines.json" if baselines else ""
    tables = [
        metrics_table(
            f"{result['set']}: {n} queries, overall",
            {**references(baselines), **{m: r["overall"] for m, r in modes.items()}},
            caption,
        )
    ]
    labels = sorted({label for r in modes.values() for label in r["subsets"]})
    for label in labels:
        rows = {m: r["subsets"][label] for m, r in modes.items() if label in r["subsets"]}
        count = next(iter(rows.values()))["n"]
        tables.append(
            metrics_table(f"{result['set']}: {label} ({count} queries)", {**references(baselines, label), **rows})
        )
    return tables


def curve_table(curve: Sequence[Point]) -> Table:
    table = Table(title="learning curve (held-out slice, full pipeline)", title_justify="left")
    for column in ("events", "R@5", "NDCG@10"):
        table.add_column(column, justify="right")
    for p in curve:
        table.add_row(str(p.events), f"{p.recall_at_5:.3f}", f"{p.ndcg_at_10:.3f}")
    return table


def write_json(path: Path, result: Mapping[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2, sort_keys=False) + "\n")


def write_curve_csv(path: Path, curve: Sequence[Point]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(["events", "R@5", "NDCG@10"])
        writer.writerows([p.events, f"{p.recall_at_5:.4f}", f"{p.ndcg_at_10:.4f}"] for p in curve)


def write_curve_png(path: Path, curve: Sequence[Point], title: str) -> None:
    """R@5 and NDCG@10 against events, as a PNG (matplotlib, no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(7, 4))
    events = [p.events for p in curve]
    axes.plot(events, [p.recall_at_5 for p in curve], marker="o", label="R@5")
    axes.plot(events, [p.ndcg_at_10 for p in curve], marker="s", label="NDCG@10")
    axes.set(xlabel="events (select + outcome + review)", ylabel="held-out score", ylim=(0, 1), title=title)
    axes.grid(alpha=0.3)
    axes.legend()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(figure)
