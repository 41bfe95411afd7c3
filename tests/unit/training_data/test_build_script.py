"""``scripts/build_training_pairs.py`` end to end: evaluation sets and a public source's git checkout in, pairs
and a manifest out; and the rebuild that docs/training-data.md shows is the packaged model's."""

import hashlib
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

from scripts.build_training_pairs import parse_args
from toolsel.evaluation.dataset import Tool, tool_spec
from toolsel.services.indexer.hashing import embedding_text

ROOT = Path(__file__).resolve().parents[3]
MIT = "MIT License\n\nPermission is hereby granted, free of charge, to any person obtaining a copy\n"


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def bench(root: Path) -> Path:
    write_jsonl(root / "alpha" / "tools.jsonl", [{"name": "weather", "description": "Forecast.", "parameters": None}])
    write_jsonl(
        root / "alpha" / "queries.jsonl",
        [{"id": "1", "query": "Will it rain in Paris tomorrow?", "relevant": ["weather"]}],
    )
    write_jsonl(root / "beta" / "tools.jsonl", [{"name": "news", "description": "Headlines.", "parameters": None}])
    write_jsonl(root / "beta" / "queries.jsonl", [{"id": "9", "query": "latest headlines", "relevant": ["news"]}])
    return root


def callnavi_checkout(root: Path, licence: str | None) -> Path:
    tools = [{"name": "getBalance", "description": "Balance of an account.", "parameters": None}]
    questions = [
        {
            "id": "b1",
            "question": [{"role": "user", "content": "What is my balance?"}],
            "ground_truth": {"API": ["getBalance"]},
        },
        {
            "id": "b2",
            "question": [{"role": "user", "content": "will it rain in paris tomorrow"}],
            "ground_truth": {"API": ["getBalance"]},
        },
    ]
    (root / "Dataset" / "APISchema").mkdir(parents=True)
    (root / "Dataset" / "Questions").mkdir(parents=True)
    (root / "Dataset" / "APISchema" / "bank.json").write_text(json.dumps(tools))
    (root / "Dataset" / "Questions" / "bank.json").write_text(json.dumps(questions))
    if licence is not None:
        (root / "LICENSE").write_text(licence)
    git = ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "data"], check=True)
    return root


def build(tmp_path: Path, checkout: Path, *extra: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    out = tmp_path / "out"
    subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "build_training_pairs.py"), "--bench", str(bench(tmp_path / "bench")),
         "--out", str(out), "--source", f"callnavi={checkout}", *extra],
        check=True, capture_output=True, cwd=ROOT,
    )  # fmt: skip
    pairs = [json.loads(line) for line in (out / "pairs.jsonl").read_text().splitlines()]
    return pairs, json.loads((out / "manifest.json").read_text())


def test_pairs_are_tagged_screened_and_embedded_as_served(tmp_path: Path) -> None:
    checkout = callnavi_checkout(tmp_path / "CallNavi", MIT)
    pairs, manifest = build(tmp_path, checkout)
    assert [(p["source"], p["group"], p["query"], p["tool_id"]) for p in pairs] == [
        ("alpha", "alpha", "Will it rain in Paris tomorrow?", "alpha/weather"),
        ("beta", "beta", "latest headlines", "beta/news"),
        ("callnavi", "external", "What is my balance?", "callnavi/bank::getBalance"),
    ]
    served = embedding_text(tool_spec(Tool("bank::getBalance", "Balance of an account.", None), "bank::getBalance"))
    assert pairs[2]["tool_text"] == served
    record = manifest["sources"]["callnavi"]
    head = subprocess.run(["git", "-C", str(checkout), "rev-parse", "HEAD"], capture_output=True, text=True)
    assert record["commit"] == head.stdout.strip()
    assert record["licence"] == "MIT"
    assert record["exact_duplicates_removed"] == {"alpha": 1}
    assert record["pairs"] == 1
    questions = checkout / "Dataset" / "Questions" / "bank.json"
    assert record["files"]["Dataset/Questions/bank.json"] == hashlib.sha256(questions.read_bytes()).hexdigest()
    assert manifest["pairs_by_group"] == {"alpha": 1, "beta": 1, "external": 1}


def test_a_source_without_a_licence_is_skipped_unless_admitted(tmp_path: Path) -> None:
    checkout = callnavi_checkout(tmp_path / "CallNavi", None)
    pairs, manifest = build(tmp_path, checkout)
    assert {p["source"] for p in pairs} == {"alpha", "beta"}
    assert manifest["sources"]["callnavi"]["licence"] == "NOASSERTION"
    assert "skipped" in manifest["sources"]["callnavi"]
    allowed, _ = build(tmp_path, checkout, "--licence", "MIT", "--licence", "NOASSERTION")
    assert [p["source"] for p in allowed].count("callnavi") == 1


def test_with_needs_each_tool_of_a_compound_request_is_paired_with_its_own_need(tmp_path: Path) -> None:
    """The real stock model aligns the needs the selector's decompose finds with the tools they ask for."""
    checkout = callnavi_checkout(tmp_path / "CallNavi", MIT)
    questions = checkout / "Dataset" / "Questions" / "bank.json"
    compound = "What is my account balance? Also, send the last statement to my accountant by email."
    asked = [
        {
            "id": "c1",
            "question": [{"role": "user", "content": compound}],
            "ground_truth": {"API": ["emailFile", "getBalance"]},
        }
    ]
    tools = [
        {"name": "getBalance", "description": "Balance of an account.", "parameters": None},
        {"name": "emailFile", "description": "Send a document to someone by email.", "parameters": None},
    ]
    questions.write_text(json.dumps(asked))
    (checkout / "Dataset" / "APISchema" / "bank.json").write_text(json.dumps(tools))
    git = ["git", "-C", str(checkout), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "commit", "-qam", "a compound request"], check=True)
    whole, _ = build(tmp_path, checkout)
    assert {p["query"] for p in whole if p["source"] == "callnavi"} == {compound}
    pairs, manifest = build(tmp_path, checkout, "--needs")
    added = {(p["tool_id"], p["query"]) for p in pairs if p["source"] == "callnavi"} - {
        (p["tool_id"], p["query"]) for p in whole
    }
    assert added == {
        ("callnavi/bank::getBalance", "What is my account balance?"),
        ("callnavi/bank::emailFile", "Also, send the last statement to my accountant by email."),
    }
    assert len(pairs) == len(whole) + 2  # the whole request's pairs stay
    assert manifest["settings"]["needs"] is True
    assert manifest["needs"]["need_pairs_added"] == {"external": 2}


def test_the_documented_rebuild_is_the_packaged_models_file() -> None:
    """docs/training-data.md's rebuild command parses as the script's own options, with ``--needs``: the packaged
    model was trained on that file (operators.md's recipe), and the command left it out."""
    page = (ROOT / "docs" / "training-data.md").read_text()
    command = re.search(r"^python scripts/build_training_pairs\.py (.*?)\n```", page, re.M | re.S)
    assert command is not None
    args = parse_args(shlex.split(command[1].replace("\\\n", " ")))
    assert args.needs
    assert "scripts/build_training_pairs.py --needs" in (ROOT / "docs" / "operators.md").read_text()
