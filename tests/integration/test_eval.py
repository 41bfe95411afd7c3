"""``toolsel eval`` end to end on a tiny generated set, against the session's real stack."""

import json
import os
import subprocess
from pathlib import Path

from toolsel.evaluation.metrics import METRICS
from toolsel.stack import TOOLSEL_COMMAND, Endpoints

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


def run_eval(endpoints: Endpoints, folder: Path, out: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "TOOLSEL_NATS_URL": endpoints.nats_url,
        "TOOLSEL_DATABASE_URL": endpoints.database_url,
        "COLUMNS": "200",
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
