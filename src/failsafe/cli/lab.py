"""run, check, report and scenarios: the failover lab."""

from __future__ import annotations

import json
import time
from pathlib import Path

import click
from rich.table import Table

from failsafe.checkers.common import Verdict
from failsafe.checkers.run import combine_validity
from failsafe.cli.options import dir_option, resolve_dir, stderr, stdout
from failsafe.errors import UserError
from failsafe.scenarios.registry import SEED_LAB, catalog_names, load_scenario
from failsafe.scenarios.rundir import RunDir

# Checkers, reports and the engine load polars and matplotlib: imported by the commands that use
# them, so 'failsafe up' and friends start fast.

VERDICT_STYLE = {Verdict.VALID: "[bold green]VALID[/]", Verdict.INVALID: "[bold red]INVALID[/]", Verdict.UNKNOWN: "[bold yellow]UNKNOWN[/]"}


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
    from failsafe.errors import ClusterNotWhole
    from failsafe.scenarios.cluster_use import cluster_facts, cluster_for
    from failsafe.scenarios.engine import Engine, require_whole, run_scenario
    from failsafe.scenarios.kinds import KINDS

    expanded = [n for name in names for n in (SEED_LAB if name == "seed-lab" else (name,))]
    scenarios = [load_scenario(n) for n in expanded]
    root = resolve_dir(cluster_dir)
    runs_root = runs_dir if runs_dir is not None else root / "runs"
    started = time.monotonic()

    def event(message: str) -> None:
        stderr.print(f"[dim]{time.monotonic() - started:7.1f}s[/] {message}")

    outcomes: list[tuple[str, RunDir, dict]] = []
    with stderr.status("preparing") as status, cluster_for(root, scenarios, base_port, heap, event) as cluster:
        facts = cluster_facts(cluster)
        for scenario in scenarios:
            event(f"[bold]{scenario.name}[/]: {' '.join(scenario.description.split()).split('. ')[0]}")
            kind = KINDS[scenario.kind]
            engine = Engine(scenario, kind.workload(scenario), RunDir.create(runs_root, scenario), cluster,
                            kafka_version=cluster.spec.kafka_version, cluster_facts=facts, status=status.update, event=event)
            run_dir = run_scenario(engine)
            status.update(f"{scenario.name} · checking")
            results, history = kind.check(run_dir)
            kind.show(stdout, run_dir, results, history)
            outcomes.append((scenario.name, run_dir, results))
            try:
                require_whole(cluster, after=scenario.name)
            except ClusterNotWhole:
                if len(outcomes) > 1:
                    _print_lab_table(outcomes, time.monotonic() - started)
                raise
    if len(outcomes) > 1:
        _print_lab_table(outcomes, time.monotonic() - started)
    return Verdict.of(combine_validity([r["valid"] for _, _, r in outcomes])).exit_code


def _print_lab_table(outcomes: list[tuple[str, RunDir, dict]], elapsed_s: float) -> None:
    table = Table(title=f"seed lab: {len(outcomes)} scenarios in {elapsed_s:.0f}s")
    for col in ("scenario", "verdict", "expectations"):
        table.add_column(col, no_wrap=True)
    # A report path cut to fit the terminal is no use: fold it onto more lines instead.
    table.add_column("report", overflow="fold")
    for name, run_dir, results in outcomes:
        exps = results.get("expectations", [])
        passed = sum(1 for e in exps if e["valid"] is True)
        report = run_dir.report_path if run_dir.report_path.is_file() else run_dir.path
        table.add_row(name, VERDICT_STYLE[Verdict.of(results["valid"])], f"{passed}/{len(exps)}", str(report))
    stdout.print(table)


@click.command("check")
@click.argument("run_dir", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print results.json instead of the summary.")
def check_command(run_dir: Path, as_json: bool) -> int:
    """Re-run the checkers on a stored run and rewrite its results.json."""
    from failsafe.scenarios.kinds import KINDS, RunKind

    rd = RunDir.open(run_dir)
    kind = KINDS.get(rd.kind)
    if kind is None:
        raise UserError(f"{run_dir} is a run of kind {rd.kind!r}, which this failsafe does not know: check it with the failsafe that made it")
    results, history = kind.check(rd)
    if as_json:
        click.echo(json.dumps(results, indent=2, default=str))
    elif rd.kind == RunKind.PIPELINE:
        kind.show(stdout, rd, results, history)
    else:
        from failsafe.reports.terminal import render_summary

        render_summary(stdout, results, history)
    return Verdict.of(results["valid"]).exit_code


@click.command("report")
@click.argument("run_dir", type=click.Path(path_type=Path))
def report_command(run_dir: Path) -> int:
    """Re-render report.html of a stored run (checking it first when results.json is missing)."""
    from failsafe.reports.html import write_report
    from failsafe.scenarios.check import check_run, load_run_history, stored_results

    rd = RunDir.open(run_dir)
    if rd.kind != "lab":
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
