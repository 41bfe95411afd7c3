"""The layers of issue 10, checked by import-linter with the contracts in pyproject.toml (CI runs the same
`lint-imports`): contracts <- shared runtime (toolsel) <- services <- CLI, services independent of each other,
and no import cycle inside a package."""

import tomllib
from pathlib import Path

import pytest
from importlinter.cli import lint_imports

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def test_the_configured_contracts_are_the_architecture() -> None:
    contracts = tomllib.loads(PYPROJECT.read_text())["tool"]["importlinter"]["contracts"]
    by_type = {c["type"]: c for c in contracts}
    assert by_type["layers"]["layers"] == ["cli", "services", "toolsel", "contracts"]
    assert set(by_type["independence"]["modules"]) == {"services.selector", "services.learner", "services.indexer"}
    assert set(by_type["acyclic_siblings"]["ancestors"]) == {"cli", "services", "toolsel", "contracts"}


def test_every_import_contract_is_kept(capsys: pytest.CaptureFixture[str]) -> None:
    exit_code = lint_imports(config_filename=str(PYPROJECT), no_cache=True, no_logo=True)
    assert exit_code == 0, capsys.readouterr().out
