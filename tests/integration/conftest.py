"""Fixtures of the integration tests beyond the session's stack (tests/conftest.py)."""

from collections.abc import Iterator
from pathlib import Path

import pytest

from toolsel.embedded import EmbeddedNats


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/integration" in str(item.path):
            item.add_marker(pytest.mark.integration)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[EmbeddedNats]:
    """A NATS server of the test's own, with toolsel's users and JetStream, stopped after it."""
    nats_server = EmbeddedNats(tmp_path / "nats")
    nats_server.start()
    yield nats_server
    nats_server.stop()
