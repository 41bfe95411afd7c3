"""The ``toolsel`` command: run the stack or one service, and talk to a running stack."""

import asyncio
import json
import logging
import os
import signal
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import BaseModel, ValidationError
from rich.table import Table

from contracts import (
    DriftReport,
    HealthReply,
    PluginSync,
    RecomputeReport,
    RollbackReport,
    SelectRequest,
    ToolDetail,
    ToolSummary,
    ToolVersions,
    subjects,
)
from toolsel.client import ToolselClient, ToolselError
from toolsel.messaging import validation_reply
from toolsel.render import EXPLAIN, console, selection_table, status_table, sync_table
from toolsel.settings import Settings, get_settings
from toolsel.stack import Stack, configured_endpoints, health_all

cli = typer.Typer(
    help="toolsel: which few tools an LLM agent should see.", no_args_is_help=True, pretty_exceptions_enable=False
)


def _settings() -> Settings:
    return get_settings()


@asynccontextmanager
async def _client() -> AsyncIterator[ToolselClient]:
    endpoints = configured_endpoints(_settings())
    if endpoints is None:
        console.print("[red]No running toolsel:[/] start one with `toolsel up`, or set TOOLSEL_NATS_URL.")
        raise typer.Exit(2)
    async with ToolselClient(endpoints.nats_url) as client:
        yield client


def _run(main: Callable[[], Awaitable[Any]]) -> Any:
    try:
        return asyncio.run(main())  # type: ignore[arg-type]
    except ToolselError as error:
        console.print(f"[red]{error}[/]")
        raise typer.Exit(1) from error
    except ValidationError as error:
        console.print(f"[red]{validation_reply(error).error.message} ({validation_reply(error).error.field})[/]")
        raise typer.Exit(2) from error


def _where(stack: Stack) -> Table:
    assert stack.endpoints is not None
    table = Table(title="toolsel is up", title_justify="left", show_header=False)
    table.add_row("data directory", str(stack.settings.home))
    table.add_row("NATS", stack.endpoints.nats_url + ("  (embedded)" if stack.nats else ""))
    table.add_row("PostgreSQL", stack.endpoints.database_url + ("  (embedded)" if stack.postgres else ""))
    table.add_row("logs", str(stack.settings.home / "logs"))
    table.add_row("select subject", subjects.SELECT)
    return table


@cli.command()
def up() -> None:
    """Start NATS, PostgreSQL (embedded unless configured) and the three services; Ctrl-C stops all."""
    stack = Stack(_settings())
    stopping = False

    def _stop(signum: int, frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    try:
        with console.status("starting toolsel"):
            asyncio.run(stack.start())
        console.print(_where(stack))
        console.print("Press Ctrl-C to stop.")
        while not stopping:
            dead = stack.dead_services()
            if dead:
                console.print(f"[red]service(s) exited: {', '.join(dead)}[/]; see {stack.settings.home / 'logs'}")
                raise typer.Exit(1)
            time.sleep(0.2)
    finally:
        stack.stop()
        console.print("toolsel stopped.")


@cli.command()
def demo() -> None:
    """Sync the demo catalog, select, report outcomes and show the ranking move (starts a stack if none)."""
    from toolsel.demo_run import run_demo

    settings = _settings()
    endpoints = configured_endpoints(settings)
    stack: Stack | None = None
    try:
        if endpoints is None:
            stack = Stack(settings)
            with console.status("starting an embedded toolsel for the demo"):
                asyncio.run(stack.start())
            console.print(_where(stack))
            endpoints = stack.endpoints
        assert endpoints is not None
        url = endpoints.nats_url

        async def main() -> None:
            async with ToolselClient(url) as client:
                await run_demo(client)

        _run(main)
    finally:
        if stack is not None:
            stack.stop()


@cli.command()
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
        async with _client() as client:
            reply = await client.select(
                SelectRequest(query=query, page=page, tenant_id=tenant, tier=tier, k=k, dry_run=dry_run)
            )
        if as_json:
            print(reply.model_dump_json(indent=2))
        else:
            console.print(selection_table(reply, query, EXPLAIN if explain else ()))
            for category, hint in reply.workflow_hints.items():
                console.print(f"[dim]{category}:[/] {hint}")

    _run(main)


@cli.command()
def sync(file: Path) -> None:
    """Sync a plugin declaration (a PluginSync JSON, or {"plugins": [...]}) and print the report."""
    raw = json.loads(file.read_text())
    syncs = [PluginSync.model_validate(p) for p in raw.get("plugins", [raw])]

    async def main() -> None:
        async with _client() as client:
            console.print(sync_table([await client.sync(s) for s in syncs]))

    _run(main)


@cli.command()
def status(service: Annotated[str | None, typer.Option(help="check one service only")] = None) -> None:
    """Ask every service for its health; exit 0 only when all answer."""
    services = (service,) if service else subjects.SERVICES

    async def main() -> dict[str, HealthReply | str]:
        async with _client() as client:
            return await health_all(client, services)

    replies = _run(main)
    console.print(status_table(replies))
    if not all(isinstance(r, HealthReply) for r in replies.values()):
        raise typer.Exit(1)


@cli.command()
def migrate() -> None:
    """Apply the database migrations and exit."""
    from toolsel.db import migrate as apply

    url = _settings().database_url
    if not url:
        console.print("[red]Set TOOLSEL_DATABASE_URL.[/]")
        raise typer.Exit(2)
    applied = asyncio.run(apply(url))
    console.print(f"applied: {', '.join(applied) or 'nothing (up to date)'}")


tools_cli = typer.Typer(
    help="Inspect and govern the tool registry (the indexer's admin requests).", no_args_is_help=True
)
cli.add_typer(tools_cli, name="tools")
AsJson = Annotated[bool, typer.Option("--json", help="print the raw reply")]


def _admin(call: Callable[[ToolselClient], Awaitable[BaseModel]], as_json: bool, show: Callable[[Any], None]) -> None:
    """Send one admin request and print its reply, raw or as ``show`` renders it."""

    async def main() -> BaseModel:
        async with _client() as client:
            return await call(client)

    reply = _run(main)
    if as_json:
        print(reply.model_dump_json(indent=2))
    else:
        show(reply)


def _tools_table(title: str, tools: Iterable[ToolSummary]) -> Table:
    table = Table(title=title, title_justify="left")
    for column in ("tool", "tenant", "status", "schema", "embedding", "embedded at", "review", "deleted"):
        table.add_column(column)
    for t in tools:
        review = "flagged" if t.review_flag else "approved" if t.approved else ""
        embedded = f"{t.last_embedded_at:%Y-%m-%d %H:%M}" if t.last_embedded_at else "-"
        table.add_row(
            f"{t.plugin_id}/{t.name}",
            t.tenant_id,
            t.status,
            t.schema_version,
            t.embedding_status,
            embedded,
            review,
            "yes" if t.deleted_at else "",
        )
    return table


@tools_cli.command("list")
def tools_list(
    plugin: Annotated[str | None, typer.Option(help="only this plugin's tools")] = None,
    status: Annotated[str | None, typer.Option(help="draft, active, deprecated or retired")] = None,
    flagged: Annotated[bool | None, typer.Option("--flagged/--not-flagged", help="by review flag")] = None,
    deleted: Annotated[bool, typer.Option(help="include soft-deleted tools")] = False,
    as_json: AsJson = False,
) -> None:
    """List tools in the registry."""
    query = {"plugin_id": plugin, "status": status, "flagged": flagged, "include_deleted": deleted}
    _admin(
        lambda c: c.list_tools(**query),
        as_json,
        lambda r: console.print(_tools_table(f"{len(r.tools)} tools", r.tools)),
    )


@tools_cli.command("show")
def tools_show(plugin: str, name: str, as_json: AsJson = False) -> None:
    """Show one tool: its record and its declared spec."""

    def show(detail: ToolDetail) -> None:
        console.print(_tools_table(f"{plugin}/{name} · {detail.versions} versions", [detail.tool]))
        console.print_json(json.dumps(detail.spec))

    _admin(lambda c: c.show_tool(plugin, name), as_json, show)


@tools_cli.command("versions")
def tools_versions(plugin: str, name: str, as_json: AsJson = False) -> None:
    """A tool's version history with what each version changed."""

    def show(history: ToolVersions) -> None:
        table = Table(title=f"{plugin}/{name}", title_justify="left")
        for column in ("version", "at", "reason", "field", "before", "after"):
            table.add_column(column)
        for v in history.versions:
            for i, (field, change) in enumerate(v.diff.items()):
                head = (f"v{v.version}", f"{v.created_at:%Y-%m-%d %H:%M:%S}", v.reason) if i == 0 else ("", "", "")
                table.add_row(*head, field, _short(change.before), _short(change.after))
        console.print(table)

    _admin(lambda c: c.tool_versions(plugin, name), as_json, show)


def _short(value: object, width: int = 60) -> str:
    text = "" if value is None else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= width else text[: width - 1] + "…"


@tools_cli.command("rollback")
def tools_rollback(plugin: str, name: str, version: int, as_json: AsJson = False) -> None:
    """Restore a tool to VERSION (recorded as a new version) and re-embed it."""

    def show(report: RollbackReport) -> None:
        changed = ", ".join(report.changed_fields) or "nothing (already at that version)"
        console.print(
            f"{plugin}/{name}: restored v{report.restored_version} as v{report.new_version}; changed {changed}"
        )

    _admin(lambda c: c.rollback_tool(plugin, name, version), as_json, show)


@tools_cli.command("approve")
def tools_approve(plugin: str, name: str, as_json: AsJson = False) -> None:
    """Approve a tool: clear its review flag and make it selectable again."""
    _admin(lambda c: c.approve_tool(plugin, name), as_json, lambda d: console.print(_tools_table("approved", [d.tool])))


@tools_cli.command("recompute")
def tools_recompute(
    plugin: Annotated[str | None, typer.Option(help="only this plugin's tools")] = None,
    force: Annotated[bool, typer.Option(help="re-embed every live tool, not only the drifted ones")] = False,
    as_json: AsJson = False,
) -> None:
    """Recompute embeddings of missing, stale and drifted tools."""

    def show(report: RecomputeReport) -> None:
        console.print(f"to embed: {report.marked}, embedded: {report.embedded} in {report.duration_ms:.0f} ms")

    _admin(lambda c: c.recompute_embeddings(plugin, force=force), as_json, show)


@tools_cli.command("drift")
def tools_drift(
    plugin: Annotated[str | None, typer.Option(help="only this plugin's tools")] = None,
    days: Annotated[float | None, typer.Option(help="age counted as drift (default TOOLSEL_DRIFT_DAYS)")] = None,
    as_json: AsJson = False,
) -> None:
    """Tools whose embedding is missing, stale or older than the drift age."""

    def show(report: DriftReport) -> None:
        table = Table(title=f"embedding drift (older than {report.days:g} days)", title_justify="left")
        for column in ("tool", "reason", "status", "days since embedded"):
            table.add_column(column)
        for t in report.tools:
            age = "-" if t.days_since_embed is None else f"{t.days_since_embed:.1f}"
            table.add_row(f"{t.plugin_id}/{t.name}", t.reason, t.embedding_status, age)
        console.print(table)

    _admin(lambda c: c.drift(plugin, days), as_json, show)


@cli.command("eval")
def eval_(
    path: Annotated[Path, typer.Argument(help="a folder with tools.jsonl and queries.jsonl")],
    train_fraction: Annotated[float, typer.Option(help="queries moved into example queries (Tool2Vec)")] = 0.0,
    seed: Annotated[int, typer.Option(help="seed of the split, the sample and the selections")] = 0,
    max_queries: Annotated[int, typer.Option(help="seeded sample of the evaluation queries (0: all)")] = 2000,
    online: Annotated[
        bool, typer.Option(help="measure learning from a simulated agent's outcomes and reviews")
    ] = False,
    events: Annotated[int, typer.Option(help="online: queries streamed (select, outcome, review)")] = 2000,
    every: Annotated[int, typer.Option(help="online: measure after this many events")] = 250,
    holdout: Annotated[int, typer.Option(help="online: held-out queries measured, never streamed")] = 200,
    json_file: Annotated[Path | None, typer.Option("--json", help="write every number and the settings")] = None,
    out: Annotated[Path, typer.Option(help="online: directory for the curve's CSV and PNG")] = Path("eval-out"),
) -> None:
    """Measure retrieval quality (or, with --online, learning) on a labelled set, through a real stack."""
    from toolsel.evaluation import report
    from toolsel.evaluation.online import Point
    from toolsel.evaluation.run import Options, run_offline, run_online

    options = Options(path, train_fraction, seed, max_queries, online, events, every, holdout, out=out)
    if not (path / "tools.jsonl").is_file() or not (path / "queries.jsonl").is_file():
        console.print(f"[red]{path} needs tools.jsonl and queries.jsonl[/]")
        raise typer.Exit(2)
    result = _run(lambda: run_online(options) if online else run_offline(options))
    if online:
        curve = [Point(**p) for p in result["curve"]]
        console.print(report.curve_table(curve))
        report.write_curve_csv(out / f"{result['set']}-curve.csv", curve)
        report.write_curve_png(out / f"{result['set']}-curve.png", curve, f"{result['set']}: learning online")
        console.print(f"curve written to {out}/{result['set']}-curve.csv and .png")
    else:
        for table in report.offline_tables(result):
            console.print(table)
    if json_file is not None:
        report.write_json(json_file, result)


def _serve(module: str) -> None:
    logging.basicConfig(level=_settings().log_level, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    app = __import__(f"services.{module}.app", fromlist=["app"]).app
    asyncio.run(app.run())


@cli.command()
def selector() -> None:
    """Run a selector (more copies share the load through a queue group)."""
    _serve("selector")


@cli.command()
def learner(
    rebuild: Annotated[
        bool, typer.Option(help="recompute posteriors and quality from the stored event history, then exit")
    ] = False,
) -> None:
    """Run a learner (more copies share the durable consumers)."""
    if not rebuild:
        _serve("learner")
        return
    from services.learner.rebuild import rebuild as replay

    settings = _settings()
    done = _with_database(
        lambda pool: replay(pool, settings.prior_alpha, settings.prior_beta, settings.not_called_penalty)
    )
    console.print(
        f"rebuilt {done.posteriors} posteriors and the quality of {done.tools} tools"
        f" from {done.outcomes} outcomes and {done.feedback} feedback ratings"
    )


@cli.command()
def compact(
    clusters: Annotated[
        int | None, typer.Option(help="index entries per tool (default TOOLSEL_REVIEW_CLUSTERS)")
    ] = None,
) -> None:
    """Rebuild the review index from the review log (k-means per tool) and report how much it shrank."""
    from services.learner.reviews import compact_review_index

    k = clusters or _settings().review_clusters
    done = _with_database(lambda pool: compact_review_index(pool, k))
    console.print(f"review index: {done.before} -> {done.after} entries ({done.tools} tools, at most {k} each)")


def _with_database(job: Callable[[Any], Awaitable[Any]]) -> Any:
    """Run one job against the configured (or running stack's) PostgreSQL."""
    from toolsel.db import create_pool

    settings = _settings()
    url = settings.database_url or getattr(configured_endpoints(settings), "database_url", None)
    if not url:
        console.print("[red]No database:[/] start toolsel with `toolsel up`, or set TOOLSEL_DATABASE_URL.")
        raise typer.Exit(2)

    async def main() -> Any:
        pool = await create_pool(url)
        try:
            return await job(pool)
        finally:
            await pool.close()

    return _run(main)


@cli.command()
def indexer() -> None:
    """Run an indexer."""
    _serve("indexer")


@cli.command()
def asyncapi(
    out: Annotated[Path, typer.Option(help="directory for the documents")] = Path("docs/asyncapi"),
    check: Annotated[bool, typer.Option(help="fail if the committed documents are stale")] = False,
) -> None:
    """Write (or check) the AsyncAPI document of each service, generated from the apps."""
    from toolsel.asyncapi import documents

    stale = []
    for name, text in documents().items():
        path = out / f"{name}.json"
        if check:
            if not path.exists() or path.read_text() != text:
                stale.append(str(path))
        else:
            out.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    if stale:
        console.print(f"[red]stale AsyncAPI documents:[/] {', '.join(stale)}; run `toolsel asyncapi`")
        raise typer.Exit(1)


def main() -> None:
    import toolsel.cli_ops  # noqa: F401  (adds the operator commands; they use the helpers above)
    from toolsel.cli import cli as app  # under `python -m toolsel.cli` this module is __main__, not toolsel.cli

    app(sys.argv[1:])


if __name__ == "__main__":
    main()
