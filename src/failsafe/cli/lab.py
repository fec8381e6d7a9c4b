"""run, check, report and scenarios: the failover lab."""

from __future__ import annotations

import json
import time
from pathlib import Path

import click
from rich.table import Table

from failsafe.cli.options import dir_option, resolve_dir, stderr, stdout
from failsafe.errors import UserError
from failsafe.scenarios.pipeline_schema import PipelineScenario
from failsafe.scenarios.registry import SEED_LAB, catalog_names, load_scenario
from failsafe.scenarios.rundir import RunDir

# Checkers, reports and the runner load polars and matplotlib: imported by the commands that use
# them, so 'failsafe up' and friends start fast.

VERDICT_STYLE = {True: "[bold green]VALID[/]", False: "[bold red]INVALID[/]", "unknown": "[bold yellow]UNKNOWN[/]"}


def _verdict_exit(valid: object) -> int:
    return 0 if valid is True else 1 if valid is False else 3


@click.command("run")
@click.argument("names", nargs=-1, required=True, metavar="SCENARIO...")
@dir_option
@click.option("--base-port", type=click.IntRange(1, 65535), default=None,
              help="Broker ports when the run starts its own cluster [default: 9092].")
@click.option("--runs", "runs_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Where run directories go [default: DIR/runs].")
@click.option("--heap", default=None, help="JVM heap of each node when the run starts its own cluster [default: 1G].")
def run_command(names: tuple[str, ...], cluster_dir: Path | None, base_port: int | None, runs_dir: Path | None, heap: str | None) -> int:
    """Run scenarios (a catalog name, a .toml file, or seed-lab for all of the seeds' experiments).

    Uses the cluster running at --dir when it fits, otherwise starts one there and stops it after.
    Exits 0 when every scenario is valid, 1 when one is invalid, 3 when one could not be decided.
    """
    from failsafe.reports.html import write_report
    from failsafe.reports.terminal import render_summary
    from failsafe.scenarios.check import check_run
    from failsafe.scenarios.cluster_use import cluster_for
    from failsafe.scenarios.runner import run_scenario

    expanded = [n for name in names for n in (SEED_LAB if name == "seed-lab" else (name,))]
    scenarios = [load_scenario(n) for n in expanded]
    root = resolve_dir(cluster_dir)
    runs_root = runs_dir if runs_dir is not None else root / "runs"
    started = time.monotonic()

    def event(message: str) -> None:
        stderr.print(f"[dim]{time.monotonic() - started:7.1f}s[/] {message}")

    outcomes: list[tuple[str, RunDir, dict]] = []
    with stderr.status("preparing") as status, cluster_for(root, scenarios, base_port, heap, event) as cluster:
        for scenario in scenarios:
            event(f"[bold]{scenario.name}[/]: {' '.join(scenario.description.split()).split('. ')[0]}")
            if isinstance(scenario, PipelineScenario):
                outcomes.append((scenario.name, *_run_pipeline_scenario(scenario, cluster, runs_root, status, event)))
                continue
            run_dir = run_scenario(scenario, cluster, runs_root, status.update, event)
            status.update(f"{scenario.name} · checking")
            results, history = check_run(run_dir)
            write_report(run_dir.path, results, history, run_dir.scenario_data(), run_dir.manifest())
            render_summary(stdout, results, history)
            stdout.print(f"report: {run_dir.report_path}")
            outcomes.append((scenario.name, run_dir, results))
    if len(outcomes) > 1:
        _print_lab_table(outcomes, time.monotonic() - started)
    worst = [r["valid"] for _, _, r in outcomes]
    return 1 if False in worst else (3 if any(v is not True for v in worst) else 0)


def _run_pipeline_scenario(scenario: PipelineScenario, cluster, runs_root: Path, status, event) -> tuple[RunDir, dict]:
    from failsafe.scenarios.pipeline_check import check_pipeline_run, render_pipeline_results
    from failsafe.scenarios.pipeline_runner import run_pipeline_scenario

    run_dir, _ = run_pipeline_scenario(scenario, cluster, runs_root, status.update, event)
    status.update(f"{scenario.name} · verifying the sink against the ledger")
    results = check_pipeline_run(run_dir)
    render_pipeline_results(stdout, results)
    stdout.print(f"run directory: {run_dir.path}")
    return run_dir, results


def _print_lab_table(outcomes: list[tuple[str, RunDir, dict]], elapsed_s: float) -> None:
    table = Table(title=f"seed lab: {len(outcomes)} scenarios in {elapsed_s:.0f}s")
    for col in ("scenario", "verdict", "expectations"):
        table.add_column(col, no_wrap=True)
    # A report path cut to fit the terminal is no use: fold it onto more lines instead.
    table.add_column("report", overflow="fold")
    for name, run_dir, results in outcomes:
        exps = results.get("expectations", [])
        passed = sum(1 for e in exps if e["valid"] is True)
        table.add_row(name, VERDICT_STYLE.get(results["valid"], str(results["valid"])), f"{passed}/{len(exps)}", str(run_dir.report_path))
    stdout.print(table)


@click.command("check")
@click.argument("run_dir", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print results.json instead of the summary.")
def check_command(run_dir: Path, as_json: bool) -> int:
    """Re-run the checkers on a stored run and rewrite its results.json."""
    from failsafe.reports.terminal import render_summary
    from failsafe.scenarios.check import check_run
    from failsafe.scenarios.pipeline_check import check_pipeline_run, is_pipeline_run, render_pipeline_results

    rd = RunDir.open(run_dir)
    if is_pipeline_run(rd):
        results = check_pipeline_run(rd)
        if as_json:
            click.echo(json.dumps(results, indent=2, default=str))
        else:
            render_pipeline_results(stdout, results)
        return _verdict_exit(results["valid"])
    results, history = check_run(rd)
    if as_json:
        click.echo(json.dumps(results, indent=2, default=str))
    else:
        render_summary(stdout, results, history)
    return _verdict_exit(results["valid"])


@click.command("report")
@click.argument("run_dir", type=click.Path(path_type=Path))
def report_command(run_dir: Path) -> int:
    """Re-render report.html of a stored run (checking it first when results.json is missing)."""
    from failsafe.reports.html import write_report
    from failsafe.scenarios.check import check_run, load_run_history, stored_results
    from failsafe.scenarios.pipeline_check import is_pipeline_run

    rd = RunDir.open(run_dir)
    if is_pipeline_run(rd):
        raise UserError(f"{run_dir} is a pipeline scenario's run: 'failsafe check {run_dir}' shows its results (HTML reports cover lab scenarios)")
    results = stored_results(rd)
    if results is None:
        results, history = check_run(rd)
    else:
        history = load_run_history(rd)
    path = write_report(rd.path, results, history, rd.scenario_data(), rd.manifest())
    click.echo(str(path))
    return 0


@click.command("scenarios")
def scenarios_command() -> None:
    """The scenarios failsafe ships: name, seed tutorial, what it shows."""
    table = Table()
    for col in ("scenario", "seed", "what it shows"):
        table.add_column(col)
    for name in catalog_names():
        s = load_scenario(name)
        table.add_row(name, s.seed, " ".join(s.description.split()))
    stdout.print(table)
