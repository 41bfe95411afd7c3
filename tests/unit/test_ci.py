"""CI checks the package a user installs, not only the editable checkout: before the README's test command,
``.ci/run`` builds the wheel, installs it (not editable) in a fresh virtualenv and runs ``toolsel demo`` from it
on a fresh home, outside the repository (so nothing is imported from the checkout), failing the run if it fails."""

from pathlib import Path

CI = Path(__file__).resolve().parents[2] / ".ci" / "run"


def _steps() -> list[str]:
    """The commands of ``.ci/run``, comments left out."""
    lines = (line.split("#", 1)[0].strip() for line in CI.read_text().splitlines())
    return [line for line in lines if line]


def _first(steps: list[str], *words: str) -> int:
    found = [i for i, step in enumerate(steps) if all(word in step for word in words)]
    assert found, f".ci/run has no step with {words}"
    return found[0]


def test_ci_runs_the_demo_from_the_built_wheel_before_the_tests() -> None:
    steps = _steps()
    assert steps[0] == "set -euo pipefail"  # a failing step fails the run
    built = _first(steps, "pip wheel", "--no-deps", "--wheel-dir")
    fresh = _first(steps, "-m venv", "wheel_check")
    installed = _first(steps, "pip install", ".whl")
    demo = _first(steps, "toolsel", "demo", "TOOLSEL_HOME=")
    assert built < installed < demo
    assert fresh < installed
    assert " -e " not in steps[installed]
    assert steps[demo].startswith('(cd "$wheel_check"')  # outside the checkout
    assert demo < steps.index("pytest")


def test_ci_checks_the_wheel_installs_one_top_level_package() -> None:
    """Nothing of ours may shadow another project's ``services`` or ``cli``: the wheel holds ``toolsel`` alone."""
    steps = _steps()
    check = _first(steps, "tops ==", '{"toolsel"}')
    assert _first(steps, "pip install", ".whl") < check < _first(steps, "toolsel", "demo", "TOOLSEL_HOME=")
