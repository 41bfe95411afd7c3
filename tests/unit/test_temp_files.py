"""A test run leaves nothing in the temporary directory: pytest's own folders, the homes the tests make and what
their child processes write all go under one folder of the run, removed when it ends."""

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import RUN_TEMP

ROOT = Path(__file__).resolve().parents[2]
MAKERS = (
    "tests/unit/learner/test_app.py",
    "tests/unit/toolsel/test_late_chunking.py::test_a_part_the_request_does_not_contain_is_embedded_alone",
    "tests/unit/cli/test_exit_codes.py::test_bad_input_is_usage",
)
"""Tests that make temporary homes (``mkdtemp``), pytest folders (``tmp_path_factory``) and child processes."""


def test_a_run_leaves_its_temporary_directory_as_it_found_it(tmp_path: Path) -> None:
    system = tmp_path / "tmp"
    system.mkdir()
    env = {k: v for k, v in os.environ.items() if k != RUN_TEMP} | {"TMPDIR": str(system)}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *MAKERS]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:]
    assert list(system.iterdir()) == []
