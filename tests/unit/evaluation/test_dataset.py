"""Reading a set in the bench format into plugin syncs."""

import json
from pathlib import Path

import pytest

from toolsel.evaluation import dataset
from toolsel.evaluation.dataset import (
    MAX_NAME,
    MAX_SYNC_BYTES,
    Tool,
    catalog_syncs,
    load_set,
    subset_fields,
    tool_spec,
    wire_names,
)


def write_set(folder: Path, tools: list[dict[str, object]], queries: list[dict[str, object]]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "tools.jsonl").write_text("".join(json.dumps(t) + "\n" for t in tools))
    (folder / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    return folder


SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}}
TOOLS: list[dict[str, object]] = [
    {"name": "weather", "description": "Forecast for a city.", "parameters": SCHEMA, "category": "misc"},
    {"name": "API::Get Sure BTTS/Goal", "description": None, "parameters": None},
]
QUERIES: list[dict[str, object]] = [
    {"id": "1", "query": "rain in Rome?", "relevant": ["weather"], "type": "single", "n": 1},
    {"id": "2", "query": "goals", "relevant": ["API::Get Sure BTTS/Goal", "gone"], "type": "multi", "n": 2},
    {"id": "3", "query": "nothing known", "relevant": ["gone"], "type": "single", "n": 1},
]


def test_load_set_reads_tools_queries_and_subset_labels(tmp_path: Path) -> None:
    bench = load_set(write_set(tmp_path / "tiny", TOOLS, QUERIES))
    assert bench.name == "tiny"
    assert [t.name for t in bench.tools] == ["weather", "API::Get Sure BTTS/Goal"]
    assert bench.tools[0].parameters == SCHEMA
    assert bench.tools[1].description == ""
    assert bench.dropped_queries == 1  # none of its relevant tools is in the catalog
    assert (bench.removed_labels, bench.queries_with_removed_labels) == (1, 1)  # "gone", taken off query 2
    assert bench.queries[1].relevant == frozenset({"API::Get Sure BTTS/Goal"})
    assert bench.queries[0].extras == {"type": "single"}
    assert subset_fields(bench.queries) == ["type"]
    assert bench.baselines is None


def test_labels_outside_the_catalog_are_counted_for_the_json_and_the_terminal(tmp_path: Path) -> None:
    """A label outside the catalog is taken off its query, which then scores better than it was answered: the
    output says how many were, beside the queries left with none."""
    bench = load_set(write_set(tmp_path / "tiny", TOOLS, QUERIES))
    assert bench.label_counts() == {
        "queries_without_known_tools": 1,
        "labels_outside_catalog": 1,
        "queries_with_labels_outside_catalog": 1,
    }
    assert bench.labels_note() == (
        "labels not in tools.jsonl: 1 taken off 1 queries (scored on their other tools); 1 queries with none in it "
        "not evaluated"
    )
    whole = load_set(write_set(tmp_path / "whole", TOOLS, QUERIES[:1]))
    assert whole.labels_note() == ""
    assert set(whole.label_counts().values()) == {0}


def test_duplicate_tool_names_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unique"):
        load_set(write_set(tmp_path / "dupes", [TOOLS[0], TOOLS[0]], QUERIES))


def test_wire_names_are_valid_and_unique() -> None:
    names = wire_names(["a/b", "a∕b", " lead", "x" * 200, "x" * 200 + "y"])
    assert len(set(names.values())) == 5
    assert all("/" not in n and not n[0].isspace() and len(n) <= MAX_NAME for n in names.values())


@pytest.mark.parametrize("name", [".", "..", "tab\there", "line\nbreak", "\x1b[31mred", "bell\x07", "\ud800 lone"])
def test_any_name_in_the_format_is_made_a_tool_name_the_sync_takes(name: str) -> None:
    """Control characters, lone surrogates and the path segments ``.`` and ``..`` are refused by ToolSpec: the
    evaluation stopped (``error: name: control character U+0009``) instead of reading the set."""
    wire = wire_names([name, "tool"])
    assert tool_spec(Tool(name, "", None), wire[name]).name == wire[name]
    assert len(set(wire.values())) == 2


def test_catalog_syncs_carry_name_description_schema_and_examples() -> None:
    tools = [Tool("weather", "Forecast.", SCHEMA), Tool("a/b", "Other.", None)]
    names = wire_names([t.name for t in tools])
    [sync] = catalog_syncs(tools, names, "eval-x-text", "eval-x", {"weather": ["rain tomorrow?"]})
    weather, other = sync.tools
    assert (sync.plugin_id, sync.tenant_id) == ("eval-x-text-0", "eval-x")
    assert (weather.name, weather.description, weather.parameters) == ("weather", "Forecast.", SCHEMA)
    assert weather.example_queries == ["rain tomorrow?"]
    assert other.name == names["a/b"]
    assert other.example_queries == []


def test_large_catalogs_are_split_into_plugins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dataset, "MAX_TOOLS_PER_PLUGIN", 3)
    tools = [Tool(f"t{i}", "d", None) for i in range(7)]
    syncs = catalog_syncs(tools, wire_names([t.name for t in tools]), "eval-big", "eval")
    assert [len(s.tools) for s in syncs] == [3, 3, 1]
    assert [s.plugin_id for s in syncs] == ["eval-big-0", "eval-big-1", "eval-big-2"]


def test_large_payloads_are_split_into_plugins_that_fit_one_message() -> None:
    tools = [Tool(f"t{i}", "d" * 7000, None) for i in range(300)]
    syncs = catalog_syncs(tools, wire_names([t.name for t in tools]), "eval-big", "eval")
    assert len(syncs) > 1
    assert sum(len(s.tools) for s in syncs) == 300
    assert all(len(s.model_dump_json()) < MAX_SYNC_BYTES + 10_000 for s in syncs)
