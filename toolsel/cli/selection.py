"""Selection commands: ``select`` asks the selector, ``sync`` declares a plugin's tools to the indexer."""

from pathlib import Path
from typing import Annotated, Literal

import typer
from pydantic import BaseModel
from rich.markup import escape

from toolsel.cli.running import (
    INTERRUPTED,
    USAGE,
    AsJson,
    Format,
    ObjectFormat,
    ObjectOutput,
    Output,
    ask,
    chosen,
    client,
    fail,
    print_reply,
    read_json,
    run,
    validated,
)
from toolsel.client import ToolselClient
from toolsel.contracts import DEFAULT_TENANT, DEFAULT_TIER, PluginSync, SelectReply, SyncReport
from toolsel.render import EXPLAIN, console, selection_view, sync_table
from toolsel.settings import Settings

app = typer.Typer()

Several = Annotated[list[str] | None, typer.Option(help="repeat for more")]


def _count(value: str) -> str:
    """``--k``: a number or ``auto`` (the request's validation checks the range)."""
    if value != "auto" and not value.isdigit():
        raise typer.BadParameter(f"{value!r} is not a number or auto")
    return value


Page = Annotated[str, typer.Option(help="page the user is on")]
Tenant = Annotated[str, typer.Option(help="tenant / organisation id")]
Tier = Annotated[str, typer.Option(help="the user's plan (visibility rules, the learning context)")]
User = Annotated[str | None, typer.Option(help="user id (visibility rules, history)")]
Role = Annotated[str | None, typer.Option(help="the user's role (visibility rules)")]
Count = Annotated[
    str | None,
    typer.Option(
        parser=_count,
        metavar="K|auto",
        help="tools to retrieve, 1..50 (pinned tools may add more), or auto: as many as the confidence supports",
        show_default=f"the selector's TOOLSEL_DEFAULT_K, {Settings.model_fields['default_k'].default}",
    ),
]
"""The request's options that ``toolsel admin test-selection`` shares."""


@app.command()
def select(
    query: str,
    page: Page = "",
    tenant: Tenant = DEFAULT_TENANT,
    tier: Tier = DEFAULT_TIER,
    user: User = None,
    role: Role = None,
    session: Annotated[str | None, typer.Option(help="session id")] = None,
    k: Count = None,
    token_budget: Annotated[
        int | None, typer.Option(help="the most tokens of tool definitions in the answer, pins included")
    ] = None,
    retrieval: Annotated[str, typer.Option(help="hybrid, vector or bm25")] = "hybrid",
    rerank: Annotated[bool, typer.Option(help="--no-rerank: the retrieval order alone, no pins")] = True,
    explore: Annotated[bool, typer.Option(help="--no-explore: no exploration slot, the expected best only")] = True,
    seed: Annotated[int | None, typer.Option(help="seed the Thompson sample (reproducible)")] = None,
    plugin: Several = None,
    category: Several = None,
    tag: Several = None,
    server: Several = None,
    exclude: Annotated[list[str] | None, typer.Option(help="PLUGIN/NAME the session rejected; repeat")] = None,
    min_score: Annotated[float | None, typer.Option(help="least confidence of a tool returned (0..1)")] = None,
    explain: Annotated[bool, typer.Option(help="show every part of each score")] = False,
    dry_run: Annotated[bool, typer.Option(help="do not record a selection event")] = False,
    fmt: ObjectOutput = ObjectFormat.table,
    as_json: AsJson = False,
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
        "token_budget": token_budget,
        "retrieval": retrieval,
        "rerank": rerank,
        "explore": explore,
        "seed": seed,
        "filters": filters,
        "dry_run": dry_run,
    }

    def show(reply: SelectReply) -> None:
        if reply.no_match:  # above the table: the line under it stays the selection's summary
            console.print(f"[yellow]no match:[/] no tool is likely to fit this query. {escape(reply.advice)}")
        console.print(selection_view(reply, query, EXPLAIN if explain else (), k))
        if explain:
            _explain_retrieval(reply)
        for category, hint in reply.workflow_hints.items():
            console.print(f"[dim]{category}:[/] {escape(hint)}")

    ask(ToolselClient.select, fields, "select", chosen(as_json, fmt), show)


def _explain_retrieval(reply: SelectReply) -> None:
    """What retrieval made of the query: its parts, and how sure it is of each tool (calibrated probability)."""
    if reply.sub_queries:
        console.print("[dim]sub-queries:[/] " + escape(" | ".join(reply.sub_queries)))
    sure = ", ".join(f"{t.name} {t.confidence:.2f}" for t in reply.tools)
    console.print(f"[dim]confidence:[/] {sure}" if sure else "[dim]confidence:[/] no tools")


def _ref(ref: str) -> dict[Literal["plugin_id", "name"], str]:
    plugin, _, name = ref.partition("/")
    if not plugin or not name:
        fail(f"--exclude takes PLUGIN/NAME, not {ref!r}", USAGE)
    return {"plugin_id": plugin, "name": name}


def interrupted_sync(plugins: list[str], reported: int) -> str:
    """What an interrupted ``toolsel sync`` did: the syncs whose reports came back, the one on its way (which the
    indexer applies whole, or not at all, whether or not anyone waits for its report) and those never sent."""
    parts = [f"interrupted: {reported} of {len(plugins)} syncs reported back"]
    if reported < len(plugins):
        plugin = plugins[reported]
        parts.append(
            f"the sync of {plugin} was on its way: if the indexer received it, it applies all of it even now"
            f" (one transaction, then embedding), else none of it; `toolsel tools list --plugin {plugin}` shows which"
        )
    if reported + 1 < len(plugins):
        parts.append(f"not sent: {', '.join(plugins[reported + 1 :])}")
    return "; ".join(parts)


class SyncReports(BaseModel):
    """``toolsel sync --format json``: the report of each plugin synced."""

    reports: list[SyncReport]


@app.command()
def sync(file: Path, fmt: Output = Format.table, as_json: AsJson = False) -> None:
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

    done: list[SyncReport] = []

    async def main() -> SyncReports:
        async with client() as connected:
            for declared in syncs:
                done.append(await connected.sync(declared))
        return SyncReports(reports=done)

    try:
        reports = run(main)
    except KeyboardInterrupt:
        fail(interrupted_sync([s.plugin_id for s in syncs], len(done)), INTERRUPTED)
    print_reply(reports, chosen(as_json, fmt), lambda r: console.print(sync_table(r.reports)), rows="reports")
