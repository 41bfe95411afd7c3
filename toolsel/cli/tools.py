"""``toolsel tools``: inspect and govern the tool registry through the indexer's admin requests (which carry
``TOOLSEL_ADMIN_TOKEN`` from the environment)."""

import json
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from toolsel import embedding_space
from toolsel.cli.running import (
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
    read_json,
    run,
    settings,
    validated,
)
from toolsel.client import ToolselClient
from toolsel.contracts import (
    DriftReport,
    HealthReply,
    RecomputeReport,
    RollbackReport,
    ToolDetail,
    ToolList,
    ToolSpec,
    ToolSummary,
    ToolVersions,
    subjects,
)
from toolsel.contracts.admin import ToolWriteReport
from toolsel.contracts.common import too_deep
from toolsel.embedded import redacted
from toolsel.render import clipped, console, new_table
from toolsel.settings import Settings
from toolsel.store import create_pool

if TYPE_CHECKING:
    from toolsel.services.learner.relearn import Relearnt

app = typer.Typer(help="Inspect and govern the tool registry (the indexer's admin requests).", no_args_is_help=True)


def _tools_table(title: str, tools: Iterable[ToolSummary]) -> Table:
    table = new_table(title, "tool", "tenant", "status", "schema", "embedding", "embedded at", "review", "deleted")
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


@app.command("list")
def tools_list(
    plugin: Annotated[str | None, typer.Option(help="only this plugin's tools")] = None,
    status: Annotated[str | None, typer.Option(help="draft, active, deprecated or retired")] = None,
    flagged: Annotated[bool | None, typer.Option("--flagged/--not-flagged", help="by review flag")] = None,
    deleted: Annotated[bool, typer.Option(help="include soft-deleted tools")] = False,
    limit: Annotated[int, typer.Option(help="at most this many tools")] = 200,
    fmt: Output = Format.table,
    as_json: AsJson = False,
) -> None:
    """List tools in the registry."""

    def show(listed: ToolList) -> None:
        more = f" (the first {limit}: --limit shows more)" if len(listed.tools) == limit else ""
        console.print(_tools_table(f"{len(listed.tools)} tools{more}", listed.tools))

    fields = {"plugin_id": plugin, "status": status, "flagged": flagged, "include_deleted": deleted, "limit": limit}
    ask(ToolselClient.list_tools, fields, "tools list", chosen(as_json, fmt), show, rows="tools")


@app.command("show")
def tools_show(plugin: str, name: str, fmt: ObjectOutput = ObjectFormat.table, as_json: AsJson = False) -> None:
    """Show one tool: its record and its declared spec."""

    def show(detail: ToolDetail) -> None:
        console.print(_tools_table(f"{plugin}/{name} · {detail.versions} versions", [detail.tool]))
        console.print_json(json.dumps(detail.spec))

    ask(ToolselClient.show_tool, {"plugin_id": plugin, "name": name}, "tools show", chosen(as_json, fmt), show)


@app.command("versions")
def tools_versions(plugin: str, name: str, fmt: Output = Format.table, as_json: AsJson = False) -> None:
    """A tool's version history with what each version changed."""

    def show(history: ToolVersions) -> None:
        table = new_table(f"{plugin}/{name}", "version", "at", "reason", "field", "before", "after")
        for v in history.versions:
            for i, (field, change) in enumerate(v.diff.items()):
                head = (f"v{v.version}", f"{v.created_at:%Y-%m-%d %H:%M:%S}", v.reason) if i == 0 else ("", "", "")
                table.add_row(*head, field, _value(change.before), _value(change.after))
        console.print(table)

    key = {"plugin_id": plugin, "name": name}
    ask(ToolselClient.tool_versions, key, "tools versions", chosen(as_json, fmt), show, rows="versions")


def _value(value: object) -> str:
    return clipped("" if value is None else json.dumps(value, ensure_ascii=False), 60)


@app.command("rollback")
def tools_rollback(
    plugin: str, name: str, version: int, fmt: ObjectOutput = ObjectFormat.table, as_json: AsJson = False
) -> None:
    """Restore a tool to VERSION (recorded as a new version) and re-embed it."""

    def show(report: RollbackReport) -> None:
        changed = ", ".join(report.changed_fields) or "nothing (already at that version)"
        console.print(
            f"{plugin}/{name}: restored v{report.restored_version} as v{report.new_version}; changed {changed}"
        )

    fields = {"plugin_id": plugin, "name": name, "version": version}
    ask(ToolselClient.rollback_tool, fields, "tools rollback", chosen(as_json, fmt), show)


@app.command("approve")
def tools_approve(plugin: str, name: str, fmt: ObjectOutput = ObjectFormat.table, as_json: AsJson = False) -> None:
    """Approve a tool: clear its review flag and make it selectable again."""
    ask(
        ToolselClient.approve_tool,
        {"plugin_id": plugin, "name": name},
        "tools approve",
        chosen(as_json, fmt),
        lambda d: console.print(_tools_table("approved", [d.tool])),
    )


@app.command("recompute")
def tools_recompute(
    plugin: Annotated[str | None, typer.Option(help="only this plugin's tools")] = None,
    force: Annotated[bool, typer.Option(help="re-embed every live tool, not only the drifted ones")] = False,
    fmt: ObjectOutput = ObjectFormat.table,
    as_json: AsJson = False,
) -> None:
    """Recompute embeddings of missing, stale and drifted tools."""

    def show(report: RecomputeReport) -> None:
        console.print(f"to embed: {report.marked}, embedded: {report.embedded} in {report.duration_ms:.0f} ms")

    ask(
        ToolselClient.recompute_embeddings,
        {"plugin_id": plugin, "force": force},
        "tools recompute",
        chosen(as_json, fmt),
        show,
    )


@app.command("drift")
def tools_drift(
    plugin: Annotated[str | None, typer.Option(help="only this plugin's tools")] = None,
    days: Annotated[float | None, typer.Option(help="age counted as drift (default TOOLSEL_DRIFT_DAYS)")] = None,
    fmt: Output = Format.table,
    as_json: AsJson = False,
) -> None:
    """Tools whose embedding is missing, stale or older than the drift age."""

    def show(report: DriftReport) -> None:
        if not report.tools:
            where = f"{plugin}'s tools" if plugin else "the tools"
            console.print(
                f"nothing drifted: every embedding of {where} is current and younger than {report.days:g} days"
            )
            return
        title = f"embedding drift (older than {report.days:g} days)"
        table = new_table(title, "tool", "reason", "status", "days since embedded")
        for t in report.tools:
            age = "-" if t.days_since_embed is None else f"{t.days_since_embed:.1f}"
            table.add_row(f"{t.plugin_id}/{t.name}", t.reason, t.embedding_status, age)
        console.print(table)

    ask(
        ToolselClient.drift,
        {"plugin_id": plugin, "days": days},
        "tools drift",
        chosen(as_json, fmt),
        show,
        rows="tools",
    )


# writes: register, update, soft-delete


def _written(report: ToolWriteReport) -> None:
    version = f"v{report.version}" if report.version else "no new version"
    changed = ", ".join(report.changed_fields) or "nothing"
    console.print(
        f"{report.tool.plugin_id}/{report.tool.name}: {version}; changed {changed}; embedded {report.embedded}"
    )


@app.command("register")
def tools_register(
    plugin: str,
    spec: Annotated[Path, typer.Argument(help="a ToolSpec JSON file")],
    tenant: Annotated[str, typer.Option(help="tenant id, * for every tenant")] = "*",
    fmt: ObjectOutput = ObjectFormat.table,
    as_json: AsJson = False,
) -> None:
    """Register a tool in PLUGIN (as a sync would: hash, version, embedding, selectors told)."""
    tool = validated(ToolSpec, read_json(spec), str(spec))
    fields = {"plugin_id": plugin, "tenant_id": tenant, "tool": tool}
    ask(ToolselClient.register_tool, fields, "tools register", chosen(as_json, fmt), _written)


@app.command("update")
def tools_update(
    plugin: str,
    name: str,
    changes: Annotated[list[str], typer.Option("--set", help="FIELD=VALUE (VALUE as JSON, else text); repeat")],
    fmt: ObjectOutput = ObjectFormat.table,
    as_json: AsJson = False,
) -> None:
    """Change fields of a tool's spec; written as a new version."""
    parsed = {}
    for change in changes:
        field, _, value = change.partition("=")
        deep = too_deep(value)
        if deep is not None:
            fail(f"--set {field}: {deep}", USAGE)
        try:
            parsed[field] = json.loads(value)
        except json.JSONDecodeError:
            parsed[field] = value
    fields = {"plugin_id": plugin, "name": name, "changes": parsed}
    ask(ToolselClient.update_tool, fields, "tools update", chosen(as_json, fmt), _written)


@app.command("delete")
def tools_delete(plugin: str, name: str, fmt: ObjectOutput = ObjectFormat.table, as_json: AsJson = False) -> None:
    """Soft-delete a tool (its plugin's next sync that declares it brings it back)."""
    ask(ToolselClient.delete_tool, {"plugin_id": plugin, "name": name}, "tools delete", chosen(as_json, fmt), _written)


def switch_embedding_model(current: Settings | None = None) -> None:
    """``toolsel indexer --switch-model``: the configured model (or ``current``'s) becomes the store's, with no
    service running (the embedded stack must be stopped; with TOOLSEL_NATS_URL set, no service may answer). The
    model is loaded first, so a model that does not load, or whose size the settings get wrong, drops nothing."""
    from toolsel.stack import StackRunning, stopped_stack_database

    current = current or settings()
    if current.database_url:
        if current.nats_url and (answering := run(answering_services)):
            where = redacted(current.nats_url)
            fail(f"{', '.join(answering)} still running on {where}: stop every service first", USAGE)
        again = answering_services if current.nats_url else None
        try:
            switched, embedded = run(lambda: _switch(str(current.database_url), current, again))
        except ServicesStarted as started:
            fail(
                f"{', '.join(started.services)} started on {redacted(current.nats_url or '')} while the learnt queries"
                " were embedded: nothing was switched; stop every service and run the switch again",
                USAGE,
            )
    else:
        try:
            with stopped_stack_database(current.home) as url:
                switched, embedded = run(lambda: _switch(url, current))
        except StackRunning as running:
            fail(f"{running} (the switch needs it stopped)", USAGE)
    before = "no model was recorded" if switched.previous is None else "were {}'s ({}-d)".format(*switched.previous)
    learnt = switched.learnt
    console.print(
        f"the store's vectors are now {current.embedding_model}'s ({current.embedding_dim}-d), {before}:"
        f" {embedded} tools embedded again ({switched.tools} tool vectors dropped); learnt again with it:"
        f" {learnt.examples} usage examples, {learnt.tools} usage vectors, {learnt.verdicts} review verdicts,"
        f" {learnt.entries} review-index entries"
        + (
            f"; {learnt.lost} whose selection is no longer stored were dropped (their text is unknown)"
            if learnt.lost
            else ""
        )
    )


async def answering_services() -> list[str]:
    """The services that answer their health request on the configured NATS."""
    from toolsel.stack import health_all

    async with client() as connected:
        replies = await health_all(connected, subjects.SERVICES)
    return [name for name, reply in replies.items() if isinstance(reply, HealthReply)]


class ServicesStarted(RuntimeError):
    """Services answered once the switch had embedded the learnt queries: they started with the old model."""

    def __init__(self, services: list[str]) -> None:
        super().__init__(", ".join(services))
        self.services = services


async def _switch(
    url: str, current: Settings, answering: Callable[[], Awaitable[list[str]]] | None = None
) -> tuple[embedding_space.Switched["Relearnt"], int]:
    """Embed the learnt queries with the new model (minutes on a large store), then, unless a service started
    meanwhile (``answering``: it checked the store's model before the switch recorded the new one, and would go on
    writing the old model's vectors), switch in one transaction."""
    from toolsel.cli.learning import plan_relearning
    from toolsel.runtime import load_model
    from toolsel.services.indexer.embedding import embed_pending
    from toolsel.services.learner import relearn

    embedder = await load_model(current, cache=False)
    pool = await create_pool(url)
    try:
        planned, rules = await plan_relearning(pool, current, embedder)
        if answering is not None and (started := await answering()):
            raise ServicesStarted(started)
        switched = await embedding_space.switch(
            pool, current, lambda conn: relearn.write(conn, planned, rules, current.review_merge_similarity)
        )
        return switched, (await embed_pending(pool, embedder)).tools
    finally:
        await pool.close()
