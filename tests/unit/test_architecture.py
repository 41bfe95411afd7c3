"""The layers, checked by import-linter with the contracts in pyproject.toml (CI runs the same `lint-imports`):
inside the one installed package, contracts <- shared runtime <- services <- CLI, services independent of each
other, the services and the runtime under them free of the tools built on the wire, and no import cycle inside a
package."""

import re
import tomllib
from pathlib import Path

import pytest
from importlinter.cli import lint_imports

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = ROOT / "pyproject.toml"
SQL = re.compile(r"\b(?:INSERT INTO|UPDATE \w+ SET|DELETE FROM|SELECT\b[^;\"']{0,300}?\bFROM)\b")
"""A statement that reads or writes a table (quotes end the search for FROM, so prose next to a string is no hit)."""
SQL_HOMES = ("toolsel/store/", "toolsel/migrations/")
SQL_ALLOWED = {
    "toolsel/embedded.py": "the bootstrap: whether the embedded server has the database the migrations then fill",
    "scripts/bench_learner.py": "fixture rows for a benchmark's scratch database, of a kind no store function writes",
    "scripts/bench_periodic_reads.py": "the same: tools and posteriors in bulk, without the indexer or the learner",
}
"""Code outside the store that holds SQL, and why (the store would otherwise ship writers only benchmarks use)."""


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
    forbidden = by_type["forbidden"]
    assert {"toolsel.services", "toolsel.store", "toolsel.messaging", "toolsel.contracts"} <= set(
        forbidden["source_modules"]
    )
    assert {"toolsel.client", "toolsel.mcp", "toolsel.dashboard", "toolsel.chaos", "toolsel.tuning"} <= set(
        forbidden["forbidden_modules"]
    )
    assert set(by_type["acyclic_siblings"]["ancestors"]) == {
        "toolsel.cli",
        "toolsel.services",
        "toolsel",
        "toolsel.contracts",
    }


def test_every_import_contract_is_kept(capsys: pytest.CaptureFixture[str]) -> None:
    exit_code = lint_imports(config_filename=str(PYPROJECT), no_cache=True, no_logo=True)
    assert exit_code == 0, capsys.readouterr().out


def test_sql_lives_in_the_store_alone() -> None:
    """Each table is written from one store module (CONTRIBUTING.md): the import contracts cannot see a query
    written elsewhere, so the source is searched for one."""
    sources = {
        p.resolve() for top in ("toolsel", "contracts", "services", "scripts") for p in (ROOT / top).rglob("*.py")
    }
    holding = {str(p.relative_to(ROOT)) for p in sources if SQL.search(p.read_text())}
    assert {p for p in holding if not p.startswith(SQL_HOMES)} == set(SQL_ALLOWED)
