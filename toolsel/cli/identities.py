"""``toolsel identity``: the operator makes, lists and revokes tenants' identities. Each is bound to one tenant:
a NATS user that may select, sync and report only for it (and read only its own replies), and the bearer token
of MCP over HTTP. The secret is printed once, when made; the home keeps only its bcrypt hash."""

import json
import os
import re
import tempfile
from pathlib import Path
from typing import Annotated

import typer

from toolsel import identities
from toolsel.cli.running import FAILED, USAGE, AsJson, Format, Output, chosen, fail, settings
from toolsel.embedded import EmbeddedError, nats_config, password_variable, running_nats
from toolsel.nats_permissions import NATS_USERS
from toolsel.render import console, rows_csv, rows_table

app = typer.Typer(
    help="Tenants' identities: NATS users bound to a tenant, and MCP bearer tokens.", no_args_is_help=True
)
COLUMNS = ("tenant", "name", "user", "user_id", "role", "tier", "created_at")


@app.command("create")
def identity_create(
    tenant: str,
    name: str,
    user_id: Annotated[str | None, typer.Option(help="the user MCP selections are made for")] = None,
    role: Annotated[str | None, typer.Option(help="the role MCP selections are made with")] = None,
    tier: Annotated[str | None, typer.Option(help="the tier MCP selections are made for")] = None,
) -> None:
    """Make an identity NAME of TENANT and print its secret (once: only its hash is kept). A running `toolsel
    up` admits it at once."""
    home = settings().home
    try:
        made = identities.create(home, tenant, name, user_id=user_id, role=role, tier=tier)
    except identities.IdentityError as error:
        fail(str(error), USAGE)
    except EmbeddedError as error:
        fail(str(error))
    running = running_nats(home / "nats")
    url = made.nats_url(running[1] if running else "nats://HOST:4222")
    console.print(f"identity {tenant}/{name} made; its secret is shown this once:", soft_wrap=True)
    print(f"TOOLSEL_NATS_URL={url}")
    print(f"MCP bearer token: {made.bearer}")


@app.command("list")
def identity_list(fmt: Output = Format.table, as_json: AsJson = False) -> None:
    """Every identity (never a secret)."""
    rows = [
        {
            "tenant": i.tenant,
            "name": i.name,
            "user": i.scope.user,
            "user_id": i.user_id,
            "role": i.role,
            "tier": i.tier,
            "created_at": i.created_at,
        }
        for i in identities.load(settings().home).values()
    ]
    match chosen(as_json, fmt):
        case Format.json:
            print(json.dumps(rows, indent=2))
        case Format.csv:
            print(rows_csv(rows, COLUMNS), end="")
        case Format.table:
            console.print(rows_table("identities", rows, COLUMNS))


@app.command("revoke")
def identity_revoke(tenant: str, name: str) -> None:
    """Remove identity NAME of TENANT: NATS closes its connections and admits it no more, and MCP refuses its
    token."""
    try:
        gone = identities.revoke(settings().home, tenant, name)
    except identities.IdentityError as error:
        fail(str(error), USAGE)
    except EmbeddedError as error:
        fail(str(error))
    console.print(f"revoked {gone.tenant}/{gone.name}")


@app.command("nats-config")
def identity_nats_config(
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            help="write it to this file (compose.nats.conf), only once the whole configuration is made; else print it",
        ),
    ] = None,
) -> None:
    """The NATS configuration with every identity, the built-in users' passwords read from the environment (as
    compose runs it): `toolsel identity nats-config --out compose.nats.conf && docker compose kill -s HUP nats`.
    A configuration without its users is never written: NATS would reload it and admit anyone."""
    config = nats_config({u: f"${password_variable(u)}" for u in NATS_USERS}, identities.admitted(settings().home))
    users = set(re.findall(r'^\s*\{user: "([^"]+)"', config, re.MULTILINE))
    missing = [user for user in NATS_USERS if user not in users]
    if missing:
        why = "has no users: NATS would admit anyone" if not users else f"lacks the users {', '.join(missing)}"
        fail(f"refusing to write {out or 'the NATS configuration'}: the configuration made {why}", FAILED)
    if out is None:
        print(config, end="")
        return
    try:
        replace_config(out, config)
    except OSError as error:
        fail(f"{out}: not written ({error}); it is as it was", FAILED)
    console.print(f"wrote {out} ({len(users)} users): reload NATS (`docker compose kill -s HUP nats`)", soft_wrap=True)


def replace_config(path: Path, text: str) -> None:
    """Put ``text`` in ``path`` only once all of it is on disk beside it (a temporary file, flushed): a failure
    before then leaves ``path`` as it was. An existing file is then rewritten in place, not renamed over: compose
    bind-mounts compose.nats.conf as a single file, which goes on showing the container the file it was started
    with once another is renamed over it (NATS would reload the old users). Should that rewrite fail, the old
    text is put back."""
    descriptor, staged = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(descriptor, "w") as staging:
            staging.write(text)
            staging.flush()
            os.fsync(staging.fileno())
        if not path.is_file():
            os.chmod(staged, 0o644)  # no password in it: the built-in users' come from NATS's environment
            os.replace(staged, path)
            return
        before = path.read_bytes()
        with path.open("r+b") as target:
            try:
                target.write(text.encode())
                target.truncate()
                target.flush()
                os.fsync(target.fileno())
            except OSError:
                target.seek(0)
                target.write(before)
                target.truncate()
                raise
    finally:
        Path(staged).unlink(missing_ok=True)
