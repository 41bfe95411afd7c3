"""``toolsel bench``: latency, memory and sync throughput at several catalog sizes, on its own embedded stack."""

from pathlib import Path
from typing import Annotated

import typer

from toolsel.cli.running import run
from toolsel.render import console

app = typer.Typer()


def _sizes(text: str) -> list[int]:
    try:
        sizes = [int(s) for s in text.split(",") if s.strip()]
    except ValueError as bad:
        raise typer.BadParameter("comma-separated numbers of tools, e.g. 200,2000") from bad
    if not sizes or min(sizes) < 1:
        raise typer.BadParameter("at least one size, each >= 1")
    return sizes


@app.command("bench")
def bench(
    data: Annotated[Path, typer.Option(help="folder of evaluation sets (tools.jsonl + queries.jsonl each) to pool")],
    sizes: Annotated[str, typer.Option(help="catalog sizes (tools), comma-separated")] = "200,2000,10000",
    requests: Annotated[int, typer.Option(min=20, help="selects timed per size")] = 300,
    json_file: Annotated[Path | None, typer.Option("--json", help="write every number as JSON")] = None,
) -> None:
    """Measure select latency, selector memory and sync throughput against the model's own costs."""
    from toolsel.bench import report
    from toolsel.bench.run import Options, run_bench
    from toolsel.services.selector.timings import in_process

    if not data.is_dir():
        console.print(f"[red]{data} is not a folder of evaluation sets[/]")
        raise typer.Exit(2)
    options = Options(data, _sizes(sizes), requests)
    result = run(lambda: run_bench(options, in_process))
    console.print(report.table(result))
    if json_file is not None:
        report.write_json(json_file, result)
