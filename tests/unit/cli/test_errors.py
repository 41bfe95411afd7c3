"""Bad input to every command group: one line on stderr naming the file or field, exit code 2, no traceback.
These fail before any connection, so no stack runs."""

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from toolsel.cli.main import app

TOOL = {"name": "get_weather", "description": "Weather for a city."}
PLUGIN = {"plugin_id": "weather", "plugin_version": "1.0.0", "tools": [TOOL]}


def _bad(*args: str) -> str:
    """Run ``toolsel ARGS``; assert it refused the input as usage; return its one stderr line."""
    done = CliRunner().invoke(app, list(args))
    assert done.exit_code == 2, done.output
    assert done.exception is None or isinstance(done.exception, SystemExit), done.exception
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "Traceback" not in done.output
    return lines[0]


def _file(tmp_path: Path, content: object) -> str:
    path = tmp_path / "plugin.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return str(path)


@pytest.mark.parametrize(
    ("content", "named"),
    [
        ("{not json", "not JSON"),
        ("", "empty file"),
        ([PLUGIN], "not a list"),
        ({**PLUGIN, "tools": [{"name": "x"}]}, "tools.0.description: Field required"),
        ({k: v for k, v in PLUGIN.items() if k != "plugin_id"}, "plugin_id: Field required"),
        ({**PLUGIN, "tools": [{**TOOL, "pin_weight": "high"}]}, "tools.0.pin_weight"),
        ({**PLUGIN, "colour": "red"}, "colour: Extra inputs are not permitted"),
        ({**PLUGIN, "tools": [{**TOOL, "category": "nowhere"}]}, "tools.0.category: unknown category 'nowhere'"),
        ({**PLUGIN, "tools": [TOOL, TOOL]}, "duplicate tool names ['get_weather']"),
        ({"plugins": [PLUGIN, {**PLUGIN, "plugin_version": "one"}]}, "plugins.1: plugin_version"),
        ("[" * 100_000 + "]" * 100_000, "JSON nested 100000 levels deep"),
        ('{"tools": ' + "[" * 100_000, "JSON nested 100001 levels deep"),
        ({**PLUGIN, "tools": [{**TOOL, "name": "get\x1b[31mweather"}]}, "control character U+001B"),
        ({**PLUGIN, "tools": [{**TOOL, "display_name": "ring\x07"}]}, "control character U+0007"),
        ({**PLUGIN, "tools": [{**TOOL, "description": "x" * 9000}]}, "at most 8000 characters"),
        (
            {**PLUGIN, "categories": [{"name": "a", "parent": "b"}, {"name": "b", "parent": "a"}]},
            "categories: the parents form a cycle (a -> b -> a)",
        ),
    ],
)
def test_sync_names_the_file_and_the_field(tmp_path: Path, content: object, named: str) -> None:
    path = _file(tmp_path, content)
    line = _bad("sync", path)
    assert path in line
    assert named in line


def test_sync_of_a_missing_file_or_a_directory(tmp_path: Path) -> None:
    assert "no such file" in _bad("sync", str(tmp_path / "nothing.json"))
    assert "is a directory" in _bad("sync", str(tmp_path))


def test_select_names_the_field() -> None:
    assert "k: Input should be less than or equal to 50" in _bad("select", "x", "--k", "99")
    assert "retrieval" in _bad("select", "x", "--retrieval", "psychic")
    assert "--exclude takes PLUGIN/NAME" in _bad("select", "x", "--exclude", "nameless")


def test_tools_register_and_update_name_the_file_or_field(tmp_path: Path) -> None:
    text = tmp_path / "bad.txt"
    text.write_text("not a spec")
    assert f"{text}: not JSON" in _bad("tools", "register", "weather", str(text))
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"name": "x"}))
    assert f"{spec}: description: Field required" in _bad("tools", "register", "weather", str(spec))
    assert "plugin_id" in _bad("tools", "update", "Not A Plugin", "x", "--set", "description=y")


def test_admin_rules_and_mappings_name_the_field() -> None:
    line = _bad("admin", "rules", "create", "--type", "tier", "--effect", "deny", "--target-kind", "tool", "a/b",
                "--conditions", "{tier")  # fmt: skip
    assert "--conditions: not JSON" in line
    line = _bad("admin", "rules", "create", "--type", "tier", "--effect", "deny", "--target-kind", "tool", "a/b",
                "--conditions", "[" * 100_000)  # fmt: skip
    assert "--conditions: JSON nested 100000 levels deep" in line
    line = _bad("admin", "rules", "create", "--type", "weather", "--effect", "deny", "--target-kind", "tool", "a/b")
    assert "rule_type" in line
    assert "plugin_id" in _bad("admin", "page-mappings", "create", "Not A Plugin", "/x", "c")


def test_feedback_names_the_field() -> None:
    assert "rating: Input should be less than or equal to 1" in _bad(
        "feedback", "submit", "--tool", "a/b", "--rating", "5"
    )
    assert "--tool takes PLUGIN/NAME" in _bad("feedback", "submit", "--tool", "nameless", "--rating", "1")


def test_status_and_env_name_an_unknown_service_or_user() -> None:
    assert "unknown service 'bogus'" in _bad("status", "--service", "bogus")
    assert "unknown NATS user 'root'" in _bad("env", "--user", "root")
    assert "or an identity's TENANT.NAME" in _bad("env", "--user", "acme.nobody")


def test_plugins_remove_names_a_bad_plugin_id() -> None:
    assert "plugin_id" in _bad("plugins", "remove", "Not A Plugin")


def test_train_model_names_a_missing_file_before_training(tmp_path: Path) -> None:
    """It found a missing pairs file only once training began: ``FileNotFoundError``, exit 1."""
    model = ("--out", str(tmp_path / "model"), "--name", "x/y")
    assert _bad("train-model", str(tmp_path / "none.jsonl"), *model) == f"error: {tmp_path}/none.jsonl: no such file"
    assert _bad("train-model", str(tmp_path), *model) == f"error: {tmp_path}: is a directory, not a file"
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text('{"query": "q", "tool_id": "t", "tool_text": "t", "group": "g"}\n')
    line = _bad("train-model", str(pairs), *model, "--manifest", str(tmp_path / "manifest.json"))
    assert line == f"error: {tmp_path}/manifest.json: no such file"
    assert not (tmp_path / "model").exists()


def test_eval_names_the_file_a_set_lacks_on_stderr(tmp_path: Path) -> None:
    """It printed its refusal on stdout, without ``error:``."""
    assert _bad("eval", str(tmp_path / "none")).startswith(f"error: {tmp_path}/none/tools.jsonl: no such file")


def test_analytics_names_a_missing_export(tmp_path: Path) -> None:
    assert "no such export directory" in _bad("analytics", "heatmap", "--export", str(tmp_path / "none"))


def test_version() -> None:
    done = CliRunner().invoke(app, ["--version"])
    assert done.exit_code == 0
    assert done.stdout.startswith("toolsel ")
