"""``toolsel plugins``: what a plugin owner does as a whole. Removing a plugin is syncing it with nothing: its
tools are soft-deleted (history and versions kept), its categories and page mappings replaced by none."""

from typing import Annotated

import typer

from toolsel.cli.running import USAGE, built, client, fail, run
from toolsel.client import plugin_removal
from toolsel.contracts import SyncReport
from toolsel.render import console, sync_table

app = typer.Typer(help="Plugins as a whole.", no_args_is_help=True)


@app.command("remove")
def plugins_remove(
    plugin: str,
    tenant: Annotated[str, typer.Option(help="the tenant whose tools of the plugin go (* for the shared ones)")] = "*",
    credential: Annotated[str | None, typer.Option(help="the plugin's shared secret, if it has one")] = None,
    signing_key: Annotated[str | None, typer.Option(help="sign with this secret instead of sending it")] = None,
) -> None:
    """Remove PLUGIN's tools of one tenant: soft-delete them, and drop the plugin's categories and page mappings
    unless other tenants' tools of it stay (a later sync brings them back). Learnt posteriors and the event
    history stay."""
    if credential and signing_key:
        fail("give --credential or --signing-key, not both", USAGE)
    sync = built(lambda: plugin_removal(plugin, tenant, credential), "plugin")

    async def main() -> SyncReport:
        async with client() as connected:
            return await connected.sync(sync, signing_key=signing_key)

    report = run(main)
    console.print(sync_table([report]))
    if not report.deleted:
        fail(f"unknown plugin {plugin!r} for tenant {tenant!r}: it has no live tools there, nothing was removed")
    console.print(f"removed {plugin} for tenant {tenant!r}: {report.deleted} tools soft-deleted")
