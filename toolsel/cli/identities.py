"""``toolsel identity``: the operator makes, lists and revokes tenants' identities. Each is bound to one tenant:
a NATS user that may select, sync and report only for it (and read only its own replies), and the bearer token
of MCP over HTTP. The secret is printed once, when made; the home keeps only its bcrypt hash."""

import json
from typing import Annotated

import typer

from toolsel import identities
from toolsel.cli.running import USAGE, AsJson, Format, Output, chosen, fail, settings
from toolsel.embedded import EmbeddedError, nats_config, password_variable, running_nats
from toolsel.messaging import NATS_USERS
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
def identity_nats_config() -> None:
    """Print the NATS configuration with every identity, the built-in users' passwords read from the environment
    (as compose runs it): write it to compose.nats.conf and reload NATS."""
    print(
        nats_config({u: f"${password_variable(u)}" for u in NATS_USERS}, identities.admitted(settings().home)), end=""
    )
