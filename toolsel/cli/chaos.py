"""``toolsel chaos``: faults and load against a stack of its own, the figures printed and written as JSON."""

from pathlib import Path
from typing import Annotated, Any, cast

import typer

from toolsel.chaos.scenarios import SCENARIOS, Scenario
from toolsel.cli.running import USAGE, fail, run
from toolsel.render import console

app = typer.Typer()


@app.command("chaos")
def chaos(
    fuzz: Annotated[int, typer.Option(help="hostile inputs per request subject and per event subject")] = 10_000,
    kills: Annotated[int, typer.Option(help="times the learner is SIGKILLed while outcomes stream")] = 10,
    outcomes: Annotated[int, typer.Option(help="outcomes streamed while the learner or a server is killed")] = 5_000,
    server_kills: Annotated[
        int, typer.Option(help="times NATS, then PostgreSQL, is SIGKILLed while outcomes stream")
    ] = 5,
    selections: Annotated[int, typer.Option(help="selections answered across a NATS restart")] = 2_000,
    rounds: Annotated[int, typer.Option(help="tenants: rounds of events per question of one tenant")] = 10,
    forgeries: Annotated[int, typer.Option(help="times each forged broadcast is published")] = 25,
    oversize: Annotated[int, typer.Option(help="select requests whose whole reply is over the message size")] = 100,
    mcp_rounds: Annotated[int, typer.Option(help="times each kind of malformed line is sent to toolsel mcp")] = 10,
    attacks: Annotated[
        int, typer.Option(help="eavesdrop, spoof, id-reuse, msg-id-claim: attempts (selections, events) of each")
    ] = 100,
    scenario: Annotated[
        list[str] | None,
        typer.Option(help=f"run only these (repeatable): {', '.join(SCENARIOS)}"),
    ] = None,
    seed: Annotated[int, typer.Option(help="seed of the hostile inputs")] = 0,
    json_file: Annotated[Path | None, typer.Option("--json", help="write the figures here after each scenario")] = None,
) -> None:
    """Fuzz every subject, select replies over the message size, send malformed lines to MCP over stdio, SIGKILL
    the learner, NATS and PostgreSQL mid-stream (the stack's supervision brings them back), restart NATS under
    selection, stream one tenant's events beside another, forge broadcasts, and attack one tenant from another
    (eavesdrop, spoof, reuse its selection ids, claim its msg-ids): on a stack of its own, each measured."""
    from toolsel.chaos.report import scenario_lines
    from toolsel.chaos.run import Options, run_chaos
    from toolsel.evaluation.report import write_json

    chosen = tuple(scenario or SCENARIOS)
    unknown = sorted(set(chosen) - set(SCENARIOS))
    if unknown:
        fail(f"unknown scenario {', '.join(unknown)}: choose from {', '.join(SCENARIOS)}", USAGE)
    if min(fuzz, kills, outcomes, server_kills, selections, rounds, forgeries, oversize, mcp_rounds, attacks) < 1:
        fail("every count must be at least 1", USAGE)
    options = Options(
        fuzz=fuzz,
        kills=kills,
        outcomes=outcomes,
        server_kills=server_kills,
        selections=selections,
        rounds=rounds,
        forgeries=forgeries,
        oversize=oversize,
        mcp_rounds=mcp_rounds,
        attacks=attacks,
        seed=seed,
        scenarios=cast("tuple[Scenario, ...]", chosen),
    )

    def done(name: str, result: dict[str, Any]) -> None:
        for line in scenario_lines(name, result["scenarios"][name]):
            console.print(line)
        if json_file is not None:
            write_json(json_file, result)

    run(lambda: run_chaos(options, done))
