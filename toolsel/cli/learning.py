"""Learning commands: ``feedback`` (people's ratings and tools' quality), ``compact`` (the review index) and the
replay behind ``toolsel learner --rebuild``. The learner's jobs are imported only when such a command runs."""

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated

import asyncpg
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
from toolsel.contracts import DEFAULT_TENANT, ErrorCode, FeedbackEvent
from toolsel.render import console
from toolsel.settings import Settings

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from toolsel.embedder import Embedder
    from toolsel.services.learner import relearn
    from toolsel.services.learner.usage import UsageRules

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
    tenant: Annotated[
        str | None,
        typer.Option(
            help=f"the tenant (the operator's, default {DEFAULT_TENANT!r}; a tenant's identity rates for its own)"
        ),
    ] = None,
    author: str | None = None,
) -> None:
    """Rate a tool; published durably for the learner (toolsel.events.feedback) once the registry knows it (a
    tenant's identity may not look it up: its feedback is sent unchecked)."""
    plugin, name = _tool(tool)
    fields = {"plugin_id": plugin, "name": name, "rating": rating, "comment": comment, "author": author}
    event = validated(FeedbackEvent, fields | ({} if tenant is None else {"tenant_id": tenant}), "feedback")

    async def main() -> None:
        async with client() as connected:
            if not connected.scope.operator:
                warn(
                    f"{tool} not checked (looking a tool up is an admin call): sent; the learner dead-letters"
                    " feedback for a tool the tenant does not see, or that does not exist"
                )
                return await connected.report([event])
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
    """Recompute posteriors and quality from the stored event history, then what was learnt from queries' vectors
    from the stored texts, under the current settings (``toolsel learner --rebuild``)."""
    from toolsel.embedding_space import ModelMismatch, check
    from toolsel.runtime import load_model
    from toolsel.services.learner import relearn
    from toolsel.services.learner.outcomes import OutcomeRules
    from toolsel.services.learner.rebuild import Rebuilt, rebuild

    current = settings()

    async def job(pool: asyncpg.Pool) -> tuple[Rebuilt, relearn.Relearnt]:
        await check(pool, current)  # the learnt vectors are written in the store's model's space
        done = await rebuild(pool, OutcomeRules.from_settings(current))
        planned, rules = await plan_relearning(pool, current, await load_model(current, cache=False))
        async with pool.acquire() as conn, conn.transaction():
            return done, await relearn.write(conn, planned, rules, current.review_merge_similarity)

    try:
        done, learnt = with_database(job)
    except ModelMismatch as other:
        fail(str(other), USAGE)
    console.print(
        f"rebuilt {done.posteriors} posteriors and {done.qualities} tool qualities (per tool and tenant)"
        f" from {done.outcomes} outcomes and {done.feedback} feedback ratings; learnt again from"
        f" {learnt.examples} usage examples and {learnt.verdicts} review verdicts: {learnt.tools} usage vectors,"
        f" {learnt.entries} review-index entries"
        + (f"; {learnt.lost} whose selection is no longer stored were dropped" if learnt.lost else "")
    )


async def plan_relearning(
    pool: asyncpg.Pool, current: Settings, embedder: "Embedder"
) -> tuple["relearn.Plan", "UsageRules"]:
    """Every learnt query's stored text embedded with ``embedder`` (progress printed), for ``relearn.write``
    under the current usage rules: what a model switch and a rebuild both write."""
    from toolsel.services.learner import relearn
    from toolsel.services.learner.usage import UsageRules

    rules = UsageRules.from_settings(current)

    async def embed(texts: Sequence[str]) -> "npt.NDArray[np.float32]":
        return await asyncio.to_thread(embedder.embed, texts)

    def progress(done: int, total: int) -> None:
        console.print(f"learnt queries embedded with {current.embedding_model}: {done}/{total}")

    return await relearn.plan(pool, rules, embed, relearn.CHUNK, progress), rules
