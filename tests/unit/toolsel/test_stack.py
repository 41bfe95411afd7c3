"""A stack that fails to start says why: each dead service's exit code and the end of its log."""

import subprocess
import sys
from pathlib import Path

from toolsel.settings import Settings
from toolsel.stack import START_LOG_LINES, Stack


def test_a_failed_start_quotes_the_dead_services_exit_code_and_the_end_of_its_log(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    lines = [f"line {i}" for i in range(START_LOG_LINES + 5)]
    (logs / "indexer.log").write_text("\n".join(lines))
    stack = Stack(Settings(home=tmp_path, nats_url=None, database_url=None))
    stack.services["indexer"] = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    stack.services["indexer"].wait()

    message = stack.start_failure(stack.dead_services())

    assert "services did not start (indexer)" in message
    assert "indexer exited with 3" in message
    assert message.endswith(lines[-1])
    assert lines[-START_LOG_LINES] in message.splitlines()
    assert lines[-START_LOG_LINES - 1] not in message.splitlines()
