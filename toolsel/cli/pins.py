"""``toolsel pins``: a tenant's own pins. With a tenant's identity (TOOLSEL_NATS_URL with its credentials) they are
its tenant's; the operator names the tenant with ``--tenant``. Pinning adds a tool to every answer of the tenant;
unpinning takes a plugin's pin out of them without hiding the tool; clearing returns to what the plugin declares.
The operator's rules (``toolsel admin rules``) decide over these."""

from collections.abc import Callable
from typing import Annotated, Any

import typer

from toolsel.cli.running import AsJson, Format, Output, ask, chosen
from toolsel.client import ToolselClient
from toolsel.client_methods import Request
from toolsel.contracts import PinList
from toolsel.render import console, new_table

app = typer.Typer(help="A tenant's own pins: tools that join its answers on their own.", no_args_is_help=True)

Tenant = Annotated[str | None, typer.Option(help="the tenant (the operator's; a tenant's identity acts for its own)")]


def _shown(done: str) -> Callable[[PinList], None]:
    """Print the tenant's pins after ``done`` (what the request did, or did not need to do)."""

    def show(pins: PinList) -> None:
        if done:
            console.print(done if pins.changed else f"{done}: already so, nothing changed")
        table = new_table(f"pins of tenant {pins.tenant_id}", "tool", "pinned", "by")
        chosen_keys = set()
        for c in pins.choices:
            chosen_keys.add(f"{c.plugin_id}/{c.name}")
            table.add_row(f"{c.plugin_id}/{c.name}", "yes" if c.pinned else "no", f"the tenant, {c.made_at:%Y-%m-%d}")
        for key in pins.declared:
            if key not in chosen_keys:
                table.add_row(key, "yes", "its plugin")
        console.print(table)

    return show


def _ask(method: Request[Any, PinList], tenant: str | None, tool: dict[str, str], done: str, fmt: Format) -> None:
    fields = {**tool, **({} if tenant is None else {"tenant_id": tenant})}
    ask(method, fields, "pins", fmt, _shown(done), rows="choices")


@app.command("list")
def pins_list(tenant: Tenant = None, fmt: Output = Format.table, as_json: AsJson = False) -> None:
    """The tools the tenant pinned or unpinned for itself, and those its plugins pin."""
    _ask(ToolselClient.list_pins, tenant, {}, "", chosen(as_json, fmt))


@app.command("pin")
def pins_pin(
    plugin: str, name: str, tenant: Tenant = None, fmt: Output = Format.table, as_json: AsJson = False
) -> None:
    """Pin PLUGIN's tool NAME into every answer of the tenant."""
    tool = {"plugin_id": plugin, "name": name}
    _ask(ToolselClient.pin_tool, tenant, tool, f"pinned {plugin}/{name}", chosen(as_json, fmt))


@app.command("unpin")
def pins_unpin(
    plugin: str, name: str, tenant: Tenant = None, fmt: Output = Format.table, as_json: AsJson = False
) -> None:
    """Take PLUGIN's tool NAME out of the tenant's answers where only a pin put it (it stays visible, ranked)."""
    tool = {"plugin_id": plugin, "name": name}
    _ask(ToolselClient.unpin_tool, tenant, tool, f"unpinned {plugin}/{name}", chosen(as_json, fmt))


@app.command("clear")
def pins_clear(
    plugin: str, name: str, tenant: Tenant = None, fmt: Output = Format.table, as_json: AsJson = False
) -> None:
    """Drop the tenant's own choice on PLUGIN's tool NAME: its plugin's declaration holds again."""
    tool = {"plugin_id": plugin, "name": name}
    _ask(ToolselClient.clear_pin, tenant, tool, f"cleared the choice on {plugin}/{name}", chosen(as_json, fmt))
