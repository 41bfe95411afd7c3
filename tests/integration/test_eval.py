"""``toolsel eval`` end to end on a tiny generated set, against the session's real stack."""

import asyncio
import json
import os
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import asyncpg

from toolsel.evaluation.metrics import METRICS
from toolsel.stack import TOOLSEL_COMMAND, Endpoints
from toolsel.store import space
from toolsel.tuning.card import ModelCard, write_card

TOOLS = [
    ("send_email", "Send an email message to one or more recipients."),
    ("get_weather", "Current weather and forecast for a city."),
    ("search_flights", "Search for flights between two airports on a date."),
    ("translate_text", "Translate text between languages."),
    ("create_event", "Create a calendar event with a time and attendees."),
    ("zyxquorp_lookup", "Look up a zyxquorp record by its identifier."),
]
QUERIES = [
    ("write an email to the team", ["send_email"], "single"),
    ("will it rain tomorrow in London", ["get_weather"], "single"),
    ("cheapest flights to New York", ["search_flights"], "single"),
    ("translate this sentence into Spanish", ["translate_text"], "single"),
    ("schedule a meeting tomorrow at 3pm", ["create_event"], "single"),
    ("zyxquorp", ["zyxquorp_lookup"], "keyword"),
    ("email my boss the forecast for Paris", ["send_email", "get_weather"], "multi"),
    ("book a flight and put it in my calendar", ["search_flights", "create_event"], "multi"),
]


def tiny_set(folder: Path) -> Path:
    folder.mkdir()
    tools = [{"name": n, "description": d, "parameters": None, "category": "demo"} for n, d in TOOLS]
    queries = [{"id": str(i), "query": q, "relevant": r, "type": t} for i, (q, r, t) in enumerate(QUERIES, 1)]
    (folder / "tools.jsonl").write_text("".join(json.dumps(t) + "\n" for t in tools))
    (folder / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    return folder


def run_eval(
    endpoints: Endpoints, folder: Path, out: Path, *args: str, shell: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``toolsel eval`` against the session's servers; ``shell``: more of its own environment."""
    env = {
        **os.environ,
        "TOOLSEL_NATS_URL": endpoints.nats_url,
        "TOOLSEL_DATABASE_URL": endpoints.database_url,
        "COLUMNS": "200",
        **(shell or {}),
    }
    return subprocess.run(
        [*TOOLSEL_COMMAND, "eval", str(folder), "--json", str(out), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_eval_offline_writes_every_mode_overall_and_per_subset(endpoints: Endpoints, tmp_path: Path) -> None:
    out = tmp_path / "result.json"
    done = run_eval(endpoints, tiny_set(tmp_path / "tiny"), out)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "full pipeline" in done.stdout

    result = json.loads(out.read_text())
    assert result["set"] == "tiny"
    assert result["queries_evaluated"] == len(QUERIES)
    assert result["subset_fields"] == ["type"]
    assert result["settings"]["own_stack"] is False
    assert result["settings"]["options"]["seed"] == 0
    assert set(result["modes"]) == {"bm25", "vector (description)", "hybrid", "full pipeline"}
    for mode in result["modes"].values():
        assert set(mode["overall"]) == set(METRICS)
        assert {label: s["n"] for label, s in mode["subsets"].items()} == {
            "type=keyword": 1,
            "type=multi": 2,
            "type=single": 5,
        }
        for values in [mode["overall"], *mode["subsets"].values()]:
            assert all(0.0 <= values[m] <= 1.0 for m in METRICS)
    assert result["modes"]["bm25"]["subsets"]["type=keyword"]["R@1"] == 1.0  # "zyxquorp" finds its tool first


def test_eval_with_a_train_split_adds_tool2vec_and_never_evaluates_a_training_query(
    endpoints: Endpoints, tmp_path: Path
) -> None:
    out = tmp_path / "result.json"
    done = run_eval(endpoints, tiny_set(tmp_path / "tiny"), out, "--train-fraction", "0.5", "--seed", "3")
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(out.read_text())
    assert "tool2vec" in result["modes"]
    assert result["split"]["train_queries"] == 4
    assert result["queries_evaluated"] == result["split"]["evaluation_queries"] == len(QUERIES) - 4
    assert "seed 3" in result["split"]["description"]
    assert all(0.0 <= v <= 1.0 for m in result["modes"].values() for v in (m["overall"][k] for k in METRICS))


ONLINE = ("--online", "--events", "12", "--every", "6", "--holdout", "2", "--seed", "1")


def run_online(endpoints: Endpoints, tmp_path: Path, scenario: str, *args: str) -> tuple[dict[str, Any], Path]:
    out, curves = tmp_path / "result.json", tmp_path / "curves"
    done = run_eval(
        endpoints, tiny_set(tmp_path / "tiny"), out, *ONLINE, "--scenario", scenario, "--out", str(curves), *args
    )
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(out.read_text())
    assert [p["events"] for p in result["curve"]] == [0, 6, 12]
    assert all(0.0 <= p[m] <= 1.0 for p in result["curve"] for m in ("recall_at_5", "ndcg_at_10"))
    assert result["scenario"]["name"] == scenario
    assert result["overlap_dropped"] == 0  # no text of the tiny set is another's
    taught = result["discovery"]
    assert 0.0 <= taught["taught_share"] <= 1.0
    assert 0.0 <= taught["taught_share_last_quarter"] <= 1.0
    assert all(t["events"] >= 5 and 0.0 <= t["offered_share"] <= 1.0 for t in taught["least_offered"])
    stem = "tiny" if scenario == "stream" else f"tiny-{scenario}"
    assert (curves / f"{stem}-curve.csv").read_text().startswith("events,R@5,NDCG@10")
    assert (curves / f"{stem}-curve.png").stat().st_size > 0
    return result["scenario"], curves


def test_eval_online_stream_measures_the_held_out_curve(endpoints: Endpoints, tmp_path: Path) -> None:
    scenario, _ = run_online(endpoints, tmp_path, "stream")
    assert scenario["sightings"] == []


def test_eval_online_drift_tracks_the_failing_tool_over_its_events(endpoints: Endpoints, tmp_path: Path) -> None:
    scenario, curves = run_online(endpoints, tmp_path, "drift", "--drift-at", "4", "--recover-at", "8")
    assert scenario["tool"] in {name for name, _ in TOOLS}
    assert (scenario["drift_at"], scenario["recover_at"]) == (4, 8)
    counts = scenario["tool_events"]
    assert len(scenario["sightings"]) == counts["before"] + counts["failing"] + counts["after"]
    assert counts["failing"] > 0
    assert {"events_until_left_top_k", "events_until_back_in_top_k"} <= set(scenario)
    assert (curves / "tiny-drift-tool.csv").exists()


def test_eval_online_new_tool_is_synced_mid_stream_and_tracked(endpoints: Endpoints, tmp_path: Path) -> None:
    scenario, _ = run_online(endpoints, tmp_path, "new-tool", "--add-at", "4")
    assert scenario["new_tool"] == f"{scenario['original']} alternative"
    assert scenario["added_at"] == 4
    assert scenario["tool_events"] == len(scenario["sightings"]) > 0
    assert scenario["events_until_offered"] is not None  # its copy's description finds it at once
    assert all(s["event"] >= 4 for s in scenario["sightings"])


def test_eval_online_tenants_one_tenants_stream_never_moves_the_others_answers(
    endpoints: Endpoints, tmp_path: Path
) -> None:
    scenario, _ = run_online(endpoints, tmp_path, "tenants")
    assert scenario["a_failing_tool"] in {name for name, _ in TOOLS}
    assert scenario["a_failing_from"] == 4  # a third of the 12 events
    assert len(scenario["sightings"]) == scenario["a_failing_tool_events"] > 0
    assert scenario["b_held_out_queries"] == 2
    assert scenario["b_changed"] == 0, scenario
    with_tool = scenario["b_held_out_answers_with_failing_tool"]
    assert with_tool["before"] == with_tool["after"]
    assert scenario["b_before"]["recall_at_5"] == scenario["b_after"]["recall_at_5"]


ODD_TOOLS = [
    {"name": ".", "description": "Convert a currency amount."},
    {"name": "tab\tname", "description": "Roll dice."},
]
ODD_QUERIES = [
    {"id": "odd-1", "query": "convert 20 euros to dollars", "relevant": ["."], "type": "single"},
    {
        "id": "odd-2",
        "query": "roll two dice and email me",
        "relevant": ["tab\tname", "send_mail_gone"],
        "type": "multi",
    },
    {"id": "odd-3", "query": "book a table for two", "relevant": ["reserve_gone"], "type": "single"},
]
"""Names ToolSpec refuses as they are (a path segment, a control character) and labels outside the catalog."""


async def test_against_configured_servers_the_eval_names_their_model_and_removes_its_catalog(
    endpoints: Endpoints, pool: asyncpg.Pool, tmp_path: Path
) -> None:
    """This shell is set for another model (its card beside it) than the servers serve: the numbers are the
    servers' model's, whose training this card does not tell. The set's odd names are read, its labels outside
    the catalog counted, and its catalog gone from the servers when the run ends."""
    folder = tiny_set(tmp_path / "tiny")
    with (folder / "tools.jsonl").open("a") as tools, (folder / "queries.jsonl").open("a") as queries:
        tools.writelines(json.dumps(t) + "\n" for t in ODD_TOOLS)
        queries.writelines(json.dumps(q) + "\n" for q in ODD_QUERIES)
    other = tmp_path / "cold-model"
    other.mkdir()
    write_card(other, cold_card("my/minilm-tools-without-tiny"))
    shell = {"TOOLSEL_EMBEDDING_MODEL": "my/minilm-tools-without-tiny", "TOOLSEL_MODEL_DIR": str(other)}
    synced = "SELECT count(*) FROM tools WHERE plugin_id LIKE 'eval-%-text-%'"
    before = await pool.fetchval(synced)
    out = tmp_path / "result.json"
    done = await asyncio.to_thread(run_eval, endpoints, folder, out, shell=shell)
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(out.read_text())
    async with pool.acquire() as conn:
        served = await space.recorded(conn)
    assert served is not None
    assert result["model"] == {"name": served[0], "trained_on": None}
    assert "trained on unknown sets" in done.stdout
    assert "labels not in tools.jsonl: 1 taken off 1 queries" in " ".join(done.stdout.split())
    assert result["queries_evaluated"] == len(QUERIES) + 2
    split = result["split"]
    assert (split["labels_outside_catalog"], split["queries_with_labels_outside_catalog"]) == (1, 1)
    assert split["queries_without_known_tools"] == 1
    assert await pool.fetchval(synced) == before + len(TOOLS) + len(ODD_TOOLS)
    assert await pool.fetchval(f"{synced} AND deleted_at IS NULL") == 0


def cold_card(name: str) -> ModelCard:
    return ModelCard(
        name=name,
        base_model="sentence-transformers/all-MiniLM-L6-v2",
        base_weights="test",
        dim=384,
        trained_on=["external"],
        pairs_file="pairs.jsonl",
        pairs_sha256="0" * 64,
        pairs={"external": 10},
        settings={"seed": 0},
        training={"steps": 1},
        export={"min_cosine": 0.998},
    )
