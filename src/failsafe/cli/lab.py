"""run, check, report and scenarios: the failover lab."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import click
from rich.table import Table

from failsafe.checkers.common import Verdict
from failsafe.cli.options import dir_option, resolve_dir, stderr, stdout
from failsafe.cluster.spec import MODES as CLUSTER_MODES
from failsafe.errors import UserError
from failsafe.scenarios.registry import SEED_LAB, catalog_names, load_scenario
from failsafe.scenarios.rundir import RunDir
from failsafe.scenarios.schema import ScenarioError

# Checkers, reports and the engine load polars and matplotlib: imported by the commands that use
# them, so 'failsafe up' and friends start fast.

VERDICT_STYLE = {Verdict.VALID: "[bold green]VALID[/]", Verdict.KNOWN: "[bold magenta]KNOWN[/]", Verdict.INVALID: "[bold red]INVALID[/]",
                 Verdict.UNKNOWN: "[bold yellow]UNKNOWN[/]"}


@dataclass(frozen=True)
class Outcome:
    """One finished run: where it is, what it found, how long each phase took."""

    name: str
    run_dir: RunDir
    results: dict
    wall_s: float
    phase_seconds: dict[str, float]

    @property
    def verdict(self) -> Verdict:
        return Verdict.of_run(self.results)


@click.command("run")
@click.argument("names", nargs=-1, required=True, metavar="SCENARIO...")
@dir_option
@click.option("--base-port", type=click.IntRange(1, 65535), default=None,
              help="Broker ports when the run starts its own cluster [default: 9092].")
@click.option("--runs", "runs_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Where run directories go [default: DIR/runs].")
@click.option("--heap", default=None, help="JVM heap of each node when the run starts its own cluster [default: 1G].")
@click.option("--mode", type=click.Choice(CLUSTER_MODES), default=None,
              help="Run on a KRaft or a ZooKeeper-mode cluster (Kafka 3.9) [default: the scenario's, else kraft].")
@click.option("--zookeeper-port", type=click.IntRange(1, 65535), default=None,
              help="ZooKeeper's client port when the run starts a ZooKeeper-mode cluster [default: 2181].")
@click.option("--repeat", type=click.IntRange(1, 1000), default=1, show_default=True,
              help="Run each scenario N times and print how many runs showed each anomaly, with medians and p95 of the times.")
@click.option("--set", "overrides", multiple=True, metavar="PATH=VALUE",
              help="Change a scenario field before it runs, e.g. --set 'producers[*].properties.\"max.in.flight\"=1' "
                   "or --set phases.chaos_s=20 (repeatable; see docs/lab.md).")
@click.option("--master", default=None, metavar="URL",
              help="Pipeline scenarios: the Spark master (local[N], spark://HOST:PORT from 'failsafe spark up', or 'standalone' "
                   "for a cluster of the run's own) [default: the scenario's].")
def run_command(names: tuple[str, ...], cluster_dir: Path | None, base_port: int | None, runs_dir: Path | None, heap: str | None,
                mode: str | None, zookeeper_port: int | None, repeat: int, overrides: tuple[str, ...], master: str | None) -> int:
    """Run scenarios (a catalog name, a .toml file, or seed-lab for all of the seeds' experiments).

    Uses the cluster running at --dir when it fits, otherwise starts one there and stops it after.
    Exits 0 when every run is VALID or KNOWN (only anomalies its scenario declares known), 1 when
    one is INVALID, 3 when one could not be decided.
    """
    from failsafe.errors import ClusterNotWhole
    from failsafe.scenarios.cluster_use import cluster_facts
    from failsafe.scenarios.engine import Engine, require_whole, run_scenario
    from failsafe.scenarios.kinds import KINDS
    from failsafe.scenarios.pair_use import pair_facts

    expanded = [n for name in names for n in (SEED_LAB if name == "seed-lab" else (name,))]
    scenarios = [_load(n, overrides) for n in expanded]
    if master is not None:
        not_pipeline = [s.name for s in scenarios if s.kind != "pipeline"]
        if not_pipeline:
            raise UserError(f"--master is for pipeline scenarios (kind = \"pipeline\"): {', '.join(not_pipeline)} run no Spark")
        overrides = (*overrides, f"pipeline.master={json.dumps(master)}")
        scenarios = [_load(n, overrides) for n in expanded]
    root = resolve_dir(cluster_dir)
    runs_root = runs_dir if runs_dir is not None else root / "runs"
    started = time.monotonic()

    def event(message: str) -> None:
        stderr.print(f"[dim]{time.monotonic() - started:7.1f}s[/] {message}")

    outcomes: list[Outcome] = []
    dr = _dr_kind(scenarios, mode)
    with stderr.status("preparing") as status, _clusters_for(dr, root, scenarios, base_port, heap, event, mode, zookeeper_port) as (cluster, clusters):
        # A scenario's [zookeeper] table applies on a ZooKeeper-mode cluster.
        scenarios = [_load(n, overrides, cluster.spec.mode) for n in expanded]
        facts = {**cluster_facts(cluster), **(pair_facts(root) if dr else {}), "overrides": list(overrides)}
        event(f"cluster ready ({time.monotonic() - started:.1f}s)")
        for scenario in scenarios:
            kind = KINDS[scenario.kind]
            mine: list[Outcome] = []
            for attempt in range(1, repeat + 1):
                counter = f" (run {attempt}/{repeat})" if repeat > 1 else ""
                event(f"[bold]{scenario.name}[/]{counter}: {' '.join(scenario.description.split()).split('. ')[0]}")
                run_started = time.monotonic()
                engine = Engine(scenario, kind.workload(scenario), RunDir.create(runs_root, scenario), cluster,
                                kafka_version=cluster.spec.kafka_version, cluster_facts=facts, status=status.update, event=event,
                                operator_journal=getattr(getattr(cluster, "dir", None), "journal", None), clusters=clusters)
                try:
                    run_dir = run_scenario(engine)
                finally:
                    write_timings(engine.run_dir, engine.phase_seconds)
                status.update(f"{scenario.name} · checking")
                results, history = kind.check(run_dir)
                kind.show(stdout, run_dir, results, history)
                mine.append(Outcome(scenario.name, run_dir, results, time.monotonic() - run_started, dict(engine.phase_seconds)))
                try:
                    require_whole(cluster, after=scenario.name)
                except ClusterNotWhole:
                    if len(outcomes) + len(mine) > 1:
                        _print_lab_table(outcomes + mine, time.monotonic() - started)
                    raise
            outcomes += mine
            if repeat > 1:
                _print_repeat(scenario.name, mine, overrides, runs_root)
    if len(outcomes) > 1:
        _print_lab_table(outcomes, time.monotonic() - started)
    return Verdict.worst(o.verdict for o in outcomes).exit_code


def _dr_kind(scenarios: list, mode: str | None) -> bool:
    """True when the scenarios run on a DR pair (all of them, then); a mix is one clear line."""
    dr = [s.name for s in scenarios if s.kind == "dr"]
    if dr and len(dr) != len(scenarios):
        raise UserError(f"{', '.join(dr)} run on a DR pair and the others on one cluster: run them separately")
    if dr and mode == "zookeeper":
        raise UserError("DR scenarios run on KRaft clusters (MirrorMaker 2 of Kafka 4.x): drop --mode zookeeper")
    return bool(dr)


@contextmanager
def _clusters_for(dr: bool, root: Path, scenarios: list, base_port: int | None, heap: str | None, event, mode: str | None,
                  zookeeper_port: int | None) -> Iterator[tuple]:
    """The cluster the engine drives and every cluster's bootstrap by alias (a DR pair: primary and backup; else none)."""
    from failsafe.scenarios.cluster_use import cluster_for
    from failsafe.scenarios.pair_use import pair_for

    if dr:
        with pair_for(root, scenarios, base_port, heap, event) as (primary, clusters):
            yield primary, clusters
    else:
        with cluster_for(root, scenarios, base_port, heap, event, mode, zookeeper_port) as cluster:
            yield cluster, {}


def _load(name: str, overrides: tuple[str, ...], mode: str | None = None):
    try:
        return load_scenario(name, overrides, mode)
    except ScenarioError as e:
        if overrides and not str(e).startswith(name):
            raise ScenarioError(f"{name}: {e}") from e
        raise


def write_timings(run_dir: RunDir, phase_seconds: dict[str, float]) -> None:
    """timings.json: wall seconds per phase of the engine (and ``close``), for "where the time goes"."""
    (run_dir.path / "timings.json").write_text(json.dumps({k: round(v, 3) for k, v in phase_seconds.items()}, indent=2) + "\n")


def _print_repeat(name: str, outcomes: list[Outcome], overrides: tuple[str, ...], runs_root: Path) -> None:
    from failsafe.scenarios.repeat import aggregate, write_aggregate

    stats = aggregate(name, [(str(o.run_dir.path), o.results) for o in outcomes], overrides)
    path = write_aggregate(runs_root / name, stats)
    verdicts = ", ".join(f"{v} {n}" for v, n in sorted(stats["verdicts"].items()))
    table = Table(title=f"{name}: {stats['runs']} runs ({verdicts}){' with ' + ' '.join(overrides) if overrides else ''}")
    for col in ("anomaly or time", "runs", "total / median", "p95", "min-max"):
        table.add_column(col, no_wrap=col != "anomaly or time")
    for anomaly, entry in stats["anomalies"].items():
        table.add_row(anomaly, f"{entry['runs']}/{stats['runs']}", str(entry["total"]), "", "")
    for what, spread in stats["times"].items():
        if spread:
            unit = " ms" if what.endswith("_ms") else ""
            table.add_row(what, f"{spread['n']}/{stats['runs']}", f"{spread['median']:.0f}{unit}", f"{spread['p95']:.0f}{unit}",
                          f"{spread['min']:.0f}-{spread['max']:.0f}{unit}")
    stdout.print(table)
    stdout.print(f"statistics: {path}")


def _print_lab_table(outcomes: list[Outcome], elapsed_s: float) -> None:
    known = [(o, entry) for o in outcomes if o.verdict is Verdict.KNOWN for entry in o.results.get("known") or []]
    if known:
        # Known anomalies first: a green exit must never hide what the runs showed.
        table = Table(title="known anomalies (each matched a condition its scenario declares; never VALID)")
        table.add_column("scenario", no_wrap=True, min_width=max(len(o.name) for o, _ in known))
        table.add_column("anomaly", no_wrap=True, min_width=max(len(str(entry.get("anomaly"))) for _, entry in known))
        for col in ("count", "reference"):
            table.add_column(col, overflow="fold")
        for o, entry in known:
            table.add_row(o.name, str(entry.get("anomaly")), str(entry.get("count")), str(entry.get("reference")))
        stdout.print(table)
    table = Table(title=f"{len(outcomes)} runs in {elapsed_s:.0f}s")
    # The verdict and the scenario are what the table is for: never cut, even at 80 columns (CI logs, pipes).
    table.add_column("scenario", no_wrap=True, min_width=max(len(o.name) for o in outcomes))
    table.add_column("verdict", no_wrap=True, min_width=7)
    table.add_column("expect-\nations", no_wrap=True, min_width=5)
    table.add_column("wall s", no_wrap=True, min_width=5)
    table.add_column("slowest phases (s)", overflow="fold")
    # A report path cut to fit the terminal is no use: fold it onto more lines instead.
    table.add_column("report", overflow="fold")
    for o in outcomes:
        exps = o.results.get("expectations", [])
        passed = sum(1 for e in exps if e["valid"] is True)
        report = o.run_dir.report_path if o.run_dir.report_path.is_file() else o.run_dir.path
        slowest = sorted(o.phase_seconds.items(), key=lambda kv: -kv[1])[:3]
        table.add_row(o.name, VERDICT_STYLE[o.verdict], f"{passed}/{len(exps)}", f"{o.wall_s:.1f}",
                      " ".join(f"{phase} {seconds:.1f}" for phase, seconds in slowest), str(report))
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
    elif rd.kind in (RunKind.PIPELINE, RunKind.DR):
        kind.show(stdout, rd, results, history)
    else:
        from failsafe.reports.terminal import render_summary

        render_summary(stdout, results, history, run_dir=run_dir)
    return Verdict.of_run(results).exit_code


@click.command("report")
@click.argument("run_dir", type=click.Path(path_type=Path))
def report_command(run_dir: Path) -> int:
    """Re-render report.html of a stored run (checking it first when results.json is missing)."""
    from failsafe.reports.html import write_report
    from failsafe.scenarios.check import check_run, lab_run
    from failsafe.scenarios.kinds import RunKind

    if RunDir.open(run_dir).kind == RunKind.DR:
        from failsafe.reports.dr_report import write_dr_report

        results, history = check_run(RunDir.open(run_dir))
        click.echo(str(write_dr_report(Path(run_dir), results, history)))
        return 0
    rd, results, history = lab_run(run_dir, "HTML reports")
    path = write_report(rd.path, results, history, rd.scenario_data(), rd.manifest())
    click.echo(str(path))
    return 0


@click.command("scenarios")
def scenarios_command() -> None:
    """The scenarios failsafe ships: name, seed tutorial, cluster mode, what it shows."""
    table = Table()
    for col in ("scenario", "seed", "mode", "what it shows"):
        table.add_column(col)
    for name in catalog_names():
        s = load_scenario(name)
        # A pipeline scenario has no mode of its own; a lab scenario without one runs in either (--mode).
        mode = "DR pair" if s.kind == "dr" else getattr(getattr(s, "cluster", None), "mode", "") or "either"
        table.add_row(name, s.seed, mode, " ".join(s.description.split()))
    stdout.print(table)
