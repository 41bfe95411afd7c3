"""Output: rich tables on the terminal, JSON with every number, the learning curve as CSV and PNG."""

import csv
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rich.table import Table

from toolsel.evaluation.metrics import METRICS
from toolsel.evaluation.online import STREAM_K, Point
from toolsel.evaluation.plan import Sighting

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
    references_note = "references: whole set, from baselines.json" if baselines else ""
    caption = "\n".join(line for line in (model_line(result), references_note) if line)
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
    if "answer_sizes" in result:
        tables.append(answer_size_table(result["set"], result["answer_sizes"]))
    return tables


def answer_size_table(name: str, sizes: Mapping[str, Mapping[str, float]]) -> Table:
    """Whole answers of the full pipeline at each size: tools and tokens they cost, and Complete@returned."""
    table = Table(title=f"{name}: whole answers (full pipeline)", title_justify="left")
    for column in ("k", "tools", "tokens", "Complete@returned"):
        table.add_column(column, justify="right")
    for k, row in sizes.items():
        table.add_row(k, f"{row['tools']:.2f}", f"{row['tokens']:.0f}", f"{row['complete']:.3f}")
    return table


def model_line(result: Mapping[str, Any]) -> str:
    """Which embedding model measured the set, and a warning where it was trained on the set's queries or where
    what it was trained on is unknown (no model card of its name here)."""
    model = result.get("model")
    if not model:
        return ""
    line = f"model: {model['name']}"
    if model["trained_on"] is None:
        line += " [bold red](no model card of its name here: trained on unknown sets)[/]"
    elif result["set"] in model["trained_on"]:
        line += f" [bold red](trained on {result['set']}'s queries: not a cold number)[/]"
    return line


def curve_table(curve: Sequence[Point]) -> Table:
    table = Table(title="learning curve (held-out slice, full pipeline)", title_justify="left")
    for column in ("events", "R@5", "NDCG@10", "learner lag (s)"):
        table.add_column(column, justify="right")
    for p in curve:
        table.add_row(str(p.events), f"{p.recall_at_5:.3f}", f"{p.ndcg_at_10:.3f}", f"{p.learner_wait_s:.1f}")
    return table


def write_json(path: Path, result: Mapping[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2, sort_keys=False) + "\n")


def write_curve_csv(path: Path, curve: Sequence[Point]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(["events", "R@5", "NDCG@10", "learner_wait_s"])
        writer.writerows(
            [p.events, f"{p.recall_at_5:.4f}", f"{p.ndcg_at_10:.4f}", f"{p.learner_wait_s:.1f}"] for p in curve
        )


def write_sightings_csv(path: Path, sightings: Sequence[Sighting]) -> None:
    """The tracked tool's rank among the tools offered at each event of its queries (empty: not offered)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(["event", "rank"])
        writer.writerows([s.event, "" if s.rank is None else s.rank] for s in sightings)


def write_curve_png(
    path: Path,
    curve: Sequence[Point],
    title: str,
    marks: Mapping[str, int] | None = None,
    sightings: Sequence[Sighting] = (),
) -> None:
    """R@5 and NDCG@10 against events, as a PNG (matplotlib, no display needed); with ``sightings`` a second
    panel shows the tracked tool's offered rank (drawn at K + 1 when not offered); ``marks`` are vertical lines."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = 2 if sightings else 1
    figure, grid = plt.subplots(panels, 1, figsize=(7, 4 * panels), sharex=True, squeeze=False)
    axes = grid[0][0]
    events = [p.events for p in curve]
    axes.plot(events, [p.recall_at_5 for p in curve], marker="o", label="R@5")
    axes.plot(events, [p.ndcg_at_10 for p in curve], marker="s", label="NDCG@10")
    axes.set(ylabel="held-out score", ylim=(0, 1), title=title)
    if sightings:
        tracked = grid[1][0]
        ranks = [STREAM_K + 1 if s.rank is None else s.rank for s in sightings]
        tracked.scatter([s.event for s in sightings], ranks, s=12)
        tracked.set(ylabel=f"tracked tool's rank ({STREAM_K + 1}: not offered)", ylim=(STREAM_K + 1.5, 0.5))
    for panel in (row[0] for row in grid):
        for label, at in (marks or {}).items():
            panel.axvline(at, color="grey", linestyle="--", linewidth=1)
            panel.annotate(label, (at, 0.02), xycoords=("data", "axes fraction"), fontsize=8, color="grey")
        panel.grid(alpha=0.3)
    axes.legend()
    grid[-1][0].set(xlabel="events (select + outcome + review)")
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(figure)


def _after(events: int | None) -> str:
    return "never" if events is None else f"after {events} of its events"


def scenario_lines(scenario: Mapping[str, Any]) -> list[str]:
    """What a scenario measured, one line each, for the terminal."""
    name = scenario["name"]
    if name == "drift":
        return [
            f"drift: {scenario['tool']} failing from event {scenario['drift_at']} to {scenario['recover_at']} "
            f"({scenario['tool_events']['failing']} of its events while failing, {scenario['tool_events']['after']} "
            "after)",
            f"left the top {scenario['k']}: {_after(scenario['events_until_left_top_k'])} "
            f"(target ≤ {scenario['targets']['left_within']}); back after recovery: "
            f"{_after(scenario['events_until_back_in_top_k'])}",
        ]
    if name == "new-tool":
        return [
            f"new tool: {scenario['new_tool']} added at event {scenario['added_at']}, replacing {scenario['original']}"
            f" ({scenario['tool_events']} of its queries after)",
            f"offered: {_after(scenario['events_until_offered'])}; in the top 3: "
            f"{_after(scenario['events_until_top_3'])} (target ≤ {scenario['target']['top_3_within']})",
        ]
    if name == "tenants":
        return [
            f"tenants: {scenario['tenant_a']} streamed; {scenario['tenant_b']} sent nothing: "
            f"{scenario['b_changed']} of its {scenario['b_held_out_queries']} held-out answers changed (target 0)",
            f"{scenario['tenant_b']} R@5 {scenario['b_before']['recall_at_5']:.3f} → "
            f"{scenario['b_after']['recall_at_5']:.3f}",
        ]
    if name == "tune":
        before, after, p50 = scenario["before"], scenario["after"], scenario["select_ms_p50"]
        model = scenario["model"]["name"] if scenario["switched"] else "the current model kept"
        return [
            f"tune: {model}; held-out R@5 {before['recall_at_5']:.3f} → {after['recall_at_5']:.3f}, NDCG@10 "
            f"{before['ndcg_at_10']:.3f} → {after['ndcg_at_10']:.3f} (targets 0.95 / 0.90)",
            f"select p50 {p50['idle']:.1f} ms idle, {p50['while_tuning']:.1f} ms while tuning (target ≤ 2×)",
        ]
    return []


def discovery_lines(found: Mapping[str, Any]) -> list[str]:
    """What the stream could teach, for the terminal: its taught share and its least offered relevant tools."""
    if found.get("taught_share") is None:
        return []
    least = ", ".join(f"{t['tool']} ({t['offered_share']:.0%} of {t['events']})" for t in found["least_offered"][:5])
    return [
        f"taught: a relevant tool was offered in {found['taught_share']:.1%} of the events "
        f"({found['taught_share_last_quarter']:.1%} in the last quarter)",
        *([f"least offered for their own queries: {least}"] if least else []),
    ]


def write_online(out: Path, result: Mapping[str, Any]) -> Path:
    """The curve's CSV and PNG (and the tracked tool's CSV) of an online result; returns the CSV's path."""
    scenario = result["scenario"]
    stem = result["set"] if scenario["name"] == "stream" else f"{result['set']}-{scenario['name']}"
    curve = [Point(**p) for p in result["curve"]]
    sightings = [Sighting(**s) for s in scenario["sightings"]]
    write_curve_csv(out / f"{stem}-curve.csv", curve)
    if sightings:
        write_sightings_csv(out / f"{stem}-tool.csv", sightings)
    title = f"{result['set']}: learning online ({scenario['name']})"
    write_curve_png(out / f"{stem}-curve.png", curve, title, scenario["marks"], sightings)
    return out / f"{stem}-curve.csv"
