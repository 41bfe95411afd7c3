"""Learning commands: ``feedback`` (people's ratings and tools' quality), ``compact`` (the review index) and the
replay behind ``toolsel learner --rebuild``. The learner's jobs are imported only when such a command runs."""

from typing import Annotated

import typer

from toolsel.cli.running import (
    USAGE,
    AsJson,
    Format,
    Output,
    Rows,
    ask,
    chosen,
    client,
    fail,
    run,
    settings,
    validated,
    warn,
    with_database,
)
from toolsel.client import ToolselClient, ToolselError
from toolsel.contracts import ErrorCode, FeedbackEvent
from toolsel.render import console

app = typer.Typer()
feedback_app = typer.Typer(
    help="People's ratings of tools (0..1, with a comment) and the quality they and the calls give each tool.",
    no_args_is_help=True,
)
app.add_typer(feedback_app, name="feedback")


def _tool(ref: str) -> tuple[str, str]:
    plugin, _, name = ref.partition("/")
    if not plugin or not name:
        fail(f"--tool takes PLUGIN/NAME, not {ref!r}", USAGE)
    return plugin, name


@feedback_app.command("submit")
def feedback_submit(
    tool: Annotated[str, typer.Option(help="PLUGIN/NAME")],
    rating: Annotated[float, typer.Option(help="0..1")],
    comment: str = "",
    tenant: str = "default",
    author: str | None = None,
) -> None:
    """Rate a tool; published durably for the learner (toolsel.events.feedback) once the registry knows it."""
    plugin, name = _tool(tool)
    fields = {"plugin_id": plugin, "name": name, "rating": rating, "comment": comment, "tenant_id": tenant}
    event = validated(FeedbackEvent, fields | {"author": author}, "feedback")

    async def main() -> None:
        async with client() as connected:
            try:
                shown = await connected.show_tool(plugin, name)
            except ToolselError as error:
                if error.detail.code is ErrorCode.NOT_FOUND:
                    fail(f"unknown tool {tool}: the registry has no such tool, nothing was sent")
                warn(f"could not check that {tool} exists ({error}); sending anyway")
            else:
                if shown.tool.deleted_at is not None:
                    fail(f"tool {tool} was removed on {shown.tool.deleted_at:%Y-%m-%d}: nothing was sent")
            await connected.report([event])

    run(main)
    console.print(f"feedback {event.event_id} for {tool}: {rating}")


@feedback_app.command("list")
def feedback_list(
    tool: Annotated[str, typer.Option(help="PLUGIN/NAME")],
    limit: int = 20,
    fmt: Output = Format.table,
    as_json: AsJson = False,
) -> None:
    """A tool's most recent feedback."""
    plugin, name = _tool(tool)
    fields = {"plugin_id": plugin, "name": name, "limit": limit}
    ask(ToolselClient.list_feedback, fields, "feedback", chosen(as_json, fmt), Rows(f"feedback on {tool}", "feedback"))


@feedback_app.command("metrics")
def feedback_metrics(
    tool: Annotated[str | None, typer.Option(help="PLUGIN/NAME")] = None,
    degraded: Annotated[bool, typer.Option(help="every tool that is not healthy")] = False,
    fmt: Output = Format.table,
    as_json: AsJson = False,
) -> None:
    """Quality of one tool (calls, success rate, ratings, latency, state) or of the degraded ones."""
    plugin, name = _tool(tool) if tool else (None, None)
    fields = {"plugin_id": plugin, "name": name, "degraded": degraded}
    ask(ToolselClient.quality, fields, "feedback", chosen(as_json, fmt), Rows("tool quality", "tools"))


@app.command()
def compact(
    clusters: Annotated[
        int | None, typer.Option(help="index entries per tool (default TOOLSEL_REVIEW_CLUSTERS)")
    ] = None,
) -> None:
    """Rebuild the review index from the review log (k-means per tool) and report how much it shrank."""
    from toolsel.services.learner.reviews import compact_review_index

    k = clusters or settings().review_clusters
    done = with_database(lambda pool: compact_review_index(pool, k))
    console.print(f"review index: {done.before} -> {done.after} entries ({done.tools} tools, at most {k} each)")


def rebuild_from_history() -> None:
    """Recompute posteriors and quality from the stored event history (``toolsel learner --rebuild``)."""
    from toolsel.services.learner.outcomes import OutcomeRules
    from toolsel.services.learner.rebuild import rebuild

    current = settings()
    done = with_database(lambda pool: rebuild(pool, OutcomeRules.from_settings(current)))
    console.print(
        f"rebuilt {done.posteriors} posteriors and {done.qualities} tool qualities (per tool and tenant)"
        f" from {done.outcomes} outcomes and {done.feedback} feedback ratings"
    )
