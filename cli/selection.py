"""Selection commands: ``select`` asks the selector, ``sync`` declares a plugin's tools to the indexer."""

from pathlib import Path
from typing import Annotated, Literal

import typer

from cli.running import USAGE, client, fail, read_json, run, validated
from contracts import PluginSync, SelectReply, SelectRequest
from toolsel.render import EXPLAIN, console, selection_table, sync_table

app = typer.Typer()

Several = Annotated[list[str] | None, typer.Option(help="repeat for more")]


@app.command()
def select(
    query: str,
    page: Annotated[str, typer.Option(help="page the user is on")] = "",
    tenant: Annotated[str, typer.Option(help="tenant / organisation id")] = "default",
    tier: str = "free",
    user: Annotated[str | None, typer.Option(help="user id (visibility rules, history)")] = None,
    role: Annotated[str | None, typer.Option(help="the user's role (visibility rules)")] = None,
    session: Annotated[str | None, typer.Option(help="session id")] = None,
    k: Annotated[int | None, typer.Option(help="tools to retrieve (pins may add more)")] = None,
    retrieval: Annotated[str, typer.Option(help="hybrid, vector or bm25")] = "hybrid",
    rerank: Annotated[bool, typer.Option(help="--no-rerank: the retrieval order alone, no pins")] = True,
    seed: Annotated[int | None, typer.Option(help="seed the Thompson sample (reproducible)")] = None,
    plugin: Several = None,
    category: Several = None,
    tag: Several = None,
    server: Several = None,
    exclude: Annotated[list[str] | None, typer.Option(help="PLUGIN/NAME the session rejected; repeat")] = None,
    min_score: Annotated[float | None, typer.Option(help="least confidence of a tool returned (0..1)")] = None,
    explain: Annotated[bool, typer.Option(help="show every part of each score")] = False,
    dry_run: Annotated[bool, typer.Option(help="do not record a selection event")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print the raw reply")] = False,
) -> None:
    """Ask the selector which tools fit QUERY (every field of a selection request is an option)."""
    filters = {
        "plugins": plugin or [],
        "categories": category or [],
        "tags": tag or [],
        "servers": server or [],
        "exclude": [_ref(ref) for ref in exclude or []],
        "min_score": min_score,
    }
    fields = {
        "query": query,
        "page": page,
        "tenant_id": tenant,
        "tier": tier,
        "user_id": user,
        "role": role,
        "session_id": session,
        "k": k,
        "retrieval": retrieval,
        "rerank": rerank,
        "seed": seed,
        "filters": filters,
        "dry_run": dry_run,
    }
    body = validated(SelectRequest, fields, "select")

    async def main() -> None:
        async with client() as connected:
            reply = await connected.select(body)
        if as_json:
            print(reply.model_dump_json(indent=2))
        else:
            console.print(selection_table(reply, query, EXPLAIN if explain else (), k))
            if explain:
                _explain_retrieval(reply)
            for category, hint in reply.workflow_hints.items():
                console.print(f"[dim]{category}:[/] {hint}")

    run(main)


def _explain_retrieval(reply: SelectReply) -> None:
    """What retrieval made of the query: its parts, and how sure it is of each tool (calibrated probability)."""
    if reply.sub_queries:
        console.print("[dim]sub-queries:[/] " + " | ".join(reply.sub_queries))
    sure = ", ".join(f"{t.name} {t.confidence:.2f}" for t in reply.tools)
    console.print(f"[dim]confidence:[/] {sure}" if sure else "[dim]confidence:[/] no tools")
    if reply.no_match:
        console.print("[yellow]no match:[/] no tool is likely to fit this query")


def _ref(ref: str) -> dict[Literal["plugin_id", "name"], str]:
    plugin, _, name = ref.partition("/")
    if not plugin or not name:
        fail(f"--exclude takes PLUGIN/NAME, not {ref!r}", USAGE)
    return {"plugin_id": plugin, "name": name}


@app.command()
def sync(file: Path) -> None:
    """Sync a plugin declaration (a PluginSync JSON, or {"plugins": [...]}) and print the report. To remove a
    plugin, sync it with an empty tool list (or `toolsel plugins remove`)."""
    raw = read_json(file)
    if not isinstance(raw, dict):
        shape = type(raw).__name__
        fail(f'{file}: expected a JSON object (a PluginSync, or {{"plugins": [...]}}), not a {shape}', USAGE)
    declared = raw.get("plugins", [raw])
    if not isinstance(declared, list):
        fail(f"{file}: plugins: expected a list of PluginSync objects", USAGE)
    many = "plugins" in raw
    syncs = [validated(PluginSync, p, f"{file}: plugins.{i}" if many else str(file)) for i, p in enumerate(declared)]

    async def main() -> None:
        async with client() as connected:
            console.print(sync_table([await connected.sync(s) for s in syncs]))

    run(main)
