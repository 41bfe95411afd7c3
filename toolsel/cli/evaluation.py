"""``toolsel eval``: retrieval quality (or, online, learning) on a labelled set, measured through a real stack."""

from pathlib import Path
from typing import Annotated

import typer

from toolsel.cli.running import USAGE, fail, run
from toolsel.evaluation.plan import Scenario
from toolsel.render import console

app = typer.Typer()


@app.command("eval")
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
    scenario: Annotated[
        Scenario,
        typer.Option(
            help="online: stream (plain), drift (a tool fails, then recovers), new-tool (a copy of a tool added "
            "mid-stream), tenants (two tenants share the catalog, one streams), tune (stream, then toolsel tune beside "
            "the stack and switch when it wins)"
        ),
    ] = "stream",
    drift_at: Annotated[int | None, typer.Option(help="drift: event its calls start failing (default n/3)")] = None,
    recover_at: Annotated[
        int | None, typer.Option(help="drift: event it works again (default: after 60 of its events failed, else 2n/3)")
    ] = None,
    add_at: Annotated[int | None, typer.Option(help="new-tool: event the tool is synced (default n/3)")] = None,
    answer_sizes: Annotated[
        bool, typer.Option(help="also whole answers at k=5, k=10 and k=auto: tools, tokens, Complete@returned")
    ] = False,
) -> None:
    """Measure retrieval quality (or, with --online, learning) on a labelled set, through a real stack."""
    for name in ("tools.jsonl", "queries.jsonl"):
        if not (path / name).is_file():
            fail(f"{path / name}: no such file (an evaluation set is a folder of tools.jsonl and queries.jsonl)", USAGE)
    from toolsel.evaluation import report
    from toolsel.evaluation.online import Point
    from toolsel.evaluation.run import Options, run_offline, run_online

    options = Options(
        path,
        train_fraction,
        seed,
        max_queries,
        online,
        events,
        every,
        holdout,
        out=out,
        scenario=scenario,
        drift_at=drift_at,
        recover_at=recover_at,
        add_at=add_at,
        answer_sizes=answer_sizes,
    )
    result = run(lambda: run_online(options) if online else run_offline(options))
    if online:
        console.print(report.curve_table([Point(**p) for p in result["curve"]]))
        console.print(report.model_line(result))
        for line in [*report.scenario_lines(result["scenario"]), *report.discovery_lines(result["discovery"])]:
            console.print(line)
        written = report.write_online(out, result)
        console.print(f"curve written to {written} and .png")
    else:
        for table in report.offline_tables(result):
            console.print(table)
    if json_file is not None:
        report.write_json(json_file, result)
