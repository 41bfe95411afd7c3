"""Selection commands: ``select`` asks the selector, ``sync`` declares a plugin's tools to the indexer."""

import json
from pathlib import Path
from typing import Annotated

import typer

from cli.running import client, run
from contracts import PluginSync, SelectRequest
from toolsel.render import EXPLAIN, console, selection_table, sync_table

app = typer.Typer()


@app.command()
def select(
    query: str,
    page: Annotated[str, typer.Option(help="page the user is on")] = "",
    tenant: Annotated[str, typer.Option(help="tenant / organisation id")] = "default",
    tier: str = "free",
    k: Annotated[int | None, typer.Option(help="tools to retrieve (pins may add more)")] = None,
    explain: Annotated[bool, typer.Option(help="show every part of each score")] = False,
    dry_run: Annotated[bool, typer.Option(help="do not record a selection event")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print the raw reply")] = False,
) -> None:
    """Ask the selector which tools fit QUERY."""

    async def main() -> None:
        async with client() as connected:
            reply = await connected.select(
                SelectRequest(query=query, page=page, tenant_id=tenant, tier=tier, k=k, dry_run=dry_run)
            )
        if as_json:
            print(reply.model_dump_json(indent=2))
        else:
            console.print(selection_table(reply, query, EXPLAIN if explain else ()))
            for category, hint in reply.workflow_hints.items():
                console.print(f"[dim]{category}:[/] {hint}")

    run(main)


@app.command()
def sync(file: Path) -> None:
    """Sync a plugin declaration (a PluginSync JSON, or {"plugins": [...]}) and print the report."""
    raw = json.loads(file.read_text())
    syncs = [PluginSync.model_validate(p) for p in raw.get("plugins", [raw])]

    async def main() -> None:
        async with client() as connected:
            console.print(sync_table([await connected.sync(s) for s in syncs]))

    run(main)
