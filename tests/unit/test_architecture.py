"""The layers, checked by import-linter with the contracts in pyproject.toml (CI runs the same `lint-imports`):
inside the one installed package, contracts <- shared runtime <- services <- CLI, services independent of each
other, and no import cycle inside a package."""

import tomllib
from pathlib import Path

import pytest
from importlinter.cli import lint_imports

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def test_the_configured_contracts_are_the_architecture() -> None:
    contracts = tomllib.loads(PYPROJECT.read_text())["tool"]["importlinter"]["contracts"]
    by_type = {c["type"]: c for c in contracts}
    layers = by_type["layers"]
    assert layers["containers"] == ["toolsel"]
    assert layers["exhaustive"] is True  # a new runtime module must be placed in a layer
    assert [layers["layers"][0], layers["layers"][1], layers["layers"][-1]] == ["cli", "services", "contracts"]
    assert {"settings", "store", "client", "messaging"} <= set(layers["layers"][2].split(" : "))
    assert set(by_type["independence"]["modules"]) == {
        "toolsel.services.selector",
        "toolsel.services.learner",
        "toolsel.services.indexer",
    }
    assert set(by_type["acyclic_siblings"]["ancestors"]) == {
        "toolsel.cli",
        "toolsel.services",
        "toolsel",
        "toolsel.contracts",
    }


def test_every_import_contract_is_kept(capsys: pytest.CaptureFixture[str]) -> None:
    exit_code = lint_imports(config_filename=str(PYPROJECT), no_cache=True, no_logo=True)
    assert exit_code == 0, capsys.readouterr().out
