"""run, check, report and scenarios: the failover lab."""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.table import Table

from failsafe.checkers.common import Verdict
from failsafe.cli.hosts import inventory_options, load_inventory
from failsafe.cli.options import dir_option, resolve_dir, site_options, stderr, stdout, writable
from failsafe.cluster.site import SiteOptions
from failsafe.errors import UserError
from failsafe.scenarios.base import ScenarioError
from failsafe.scenarios.registry import SEED_LAB, catalog_names, load_scenario, read_scenario
from failsafe.scenarios.store.rundir import RunDir

if TYPE_CHECKING:
    from failsafe.scenarios.engine.runs import Outcome

# Checkers, reports and the engine load polars and matplotlib: imported by the commands that use
# them, so 'failsafe up' and friends start fast.

VERDICT_STYLE = {
    Verdict.VALID: "[bold green]VALID[/]",
    Verdict.KNOWN: "[bold magenta]KNOWN[/]",
    Verdict.INVALID: "[bold red]INVALID[/]",
    Verdict.UNKNOWN: "[bold yellow]UNKNOWN[/]",
}


@click.command("run")
@click.argument("names", nargs=-1, required=True, metavar="SCENARIO...")
@dir_option
@site_options("the run", modes=True)
@click.option(
    "--runs",
    "runs_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where run directories go [default: DIR/runs].",
)
@click.option(
    "--repeat",
    type=click.IntRange(1, 1000),
    default=1,
    show_default=True,
    help="Run each scenario N times and print how many runs showed each anomaly, with medians and p95 of the times.",
)
@click.option(
    "--set",
    "overrides",
    multiple=True,
    metavar="PATH=VALUE",
    help="Change a scenario field before it runs, e.g. --set 'producers[*].properties.\"max.in.flight\"=1' "
    "or --set phases.chaos_s=20 (repeatable; see docs/lab.md).",
)
@click.option(
    "--master",
    default=None,
    metavar="URL",
    help="Pipeline scenarios: the Spark master (local[N], spark://HOST:PORT from 'failsafe spark up', or 'standalone' "
    "for a cluster of the run's own) [default: the scenario's].",
)
@click.option(
    "--attach",
    default=None,
    metavar="HOST:PORT[,...]",
    help="Run on a cluster failsafe did not start: only the scenario's topics change; node faults only through "
    "the inventory's [host.commands] (docs/hosts.md).",
)
@click.option(
    "--client-config",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="With --attach: the client properties every client of the run reaches the cluster with (security.protocol, "
    "SASL mechanism and credentials, CA file, client certificate; Java's or librdkafka's names, PEM files), checked "
    "against the cluster before anything runs (docs/security.md).",
)
@inventory_options
def run_command(
    names: tuple[str, ...],
    cluster_dir: Path | None,
    site: SiteOptions,
    runs_dir: Path | None,
    repeat: int,
    overrides: tuple[str, ...],
    master: str | None,
    attach: str | None,
    client_config: Path | None,
    inventory_file: Path | None,
    hosts_list: str | None,
    user: str | None,
    key: Path | None,
) -> int:
    """Run scenarios (a catalog name, a .toml file, or seed-lab for all of the seeds' experiments).

    Uses the cluster running at --dir when it fits, otherwise starts one there and stops it after.
    Exits 0 when every run is VALID, 1 when one is INVALID, 3 when one could not be decided, 4 when the
    worst is KNOWN (only anomalies its scenario declares known), 5 when failsafe could not carry a run out
    (and no run before it was INVALID; see 'failsafe --help').
    """
    from failsafe.cli.boundary import report
    from failsafe.errors import ClusterNotWhole
    from failsafe.scenarios.engine.core import require_whole
    from failsafe.scenarios.engine.runs import run_and_judge
    from failsafe.scenarios.engine.sites import open_site
    from failsafe.scenarios.kinds import kind_of

    expanded = [n for name in names for n in (SEED_LAB if name == "seed-lab" else (name,))]
    files = [read_scenario(n) for n in expanded]
    overrides = (*overrides, *_run_options(files, {"master": master}))
    # Each scenario is parsed once; again only if its file has a table for the cluster's mode ([zookeeper]).
    scenarios = [_parse(f, overrides) for f in files]
    root = writable(resolve_dir(cluster_dir), "--dir")
    runs_root = writable(runs_dir if runs_dir is not None else root / "runs", "--runs")
    started = time.monotonic()

    def event(message: str) -> None:
        stderr.print(f"[dim]{time.monotonic() - started:7.1f}s[/] {message}")

    outcomes: list[Outcome] = []
    try:
        if client_config is not None and not attach:
            raise UserError(
                "--client-config goes with --attach; a cluster of failsafe's (failsafe up --security) gives its "
                "clients their settings itself"
            )
        if (inventory_file or hosts_list or user or key) and not attach:
            raise UserError(
                "--inventory and --hosts go with --attach; a cluster on hosts is made with 'failsafe up --inventory' "
                "and a run uses it through --dir"
            )
        inventory = (
            load_inventory(inventory_file, hosts_list, user, key)
            if inventory_file or hosts_list or user or key
            else None
        )
        for sitting, (attempts, first) in enumerate(_sittings(scenarios, repeat, root, attach)):
            if sitting:
                event("the run left its cluster changed for good: a fresh one for the next run")
            where = open_site(
                scenarios, root, event, site, attach=attach, inventory=inventory, client_config=client_config
            )
            with stderr.status("preparing") as status, where as (cluster, clusters, facts):
                # A scenario's [zookeeper] table applies on a ZooKeeper-mode cluster.
                mode_of_cluster = cluster.spec.mode
                scenarios = [
                    _parse(f, overrides, mode_of_cluster) if f.applies(mode_of_cluster) else s
                    for f, s in zip(files, scenarios, strict=True)
                ]
                facts = {**facts, "overrides": list(overrides)}
                event(f"cluster ready ({time.monotonic() - started:.1f}s)")
                for scenario in scenarios:
                    kind = kind_of(scenario)
                    mine: list[Outcome] = []
                    for attempt in range(first, first + attempts):
                        counter = f" (run {attempt}/{repeat})" if repeat > 1 else ""
                        summary = " ".join(scenario.description.split()).split(". ")[0]
                        event(f"[bold]{scenario.name}[/]{counter}: {summary}")
                        outcome = run_and_judge(
                            scenario,
                            cluster,
                            RunDir.create(runs_root, scenario),
                            kafka_version=cluster.spec.kafka_version,
                            facts=facts,
                            clusters=clusters,
                            status=status.update,
                            event=event,
                        )
                        kind.show(stdout, outcome.run_dir, outcome.results, outcome.history)
                        stdout.print(f"report: {outcome.run_dir.report_path}")
                        # The history is shown; the table after needs only the results (a --repeat of many runs holds no
                        # history).
                        mine.append(dataclasses.replace(outcome, history=None))
                        try:
                            require_whole(cluster, after=scenario.name)
                        except ClusterNotWhole:
                            outcomes += mine
                            raise
                    outcomes += mine
                    if repeat > 1 and first + attempts > repeat:  # its last run: the table over all of them
                        theirs = [o for o in outcomes if o.name == scenario.name]
                        _print_repeat(scenario.name, theirs, overrides, runs_root)
    except Exception as e:  # noqa: BLE001 - reported by the boundary's own rules, after the runs already judged
        if isinstance(e, UserError) and not outcomes:
            raise
        if len(outcomes) > 1:
            _print_lab_table(outcomes, time.monotonic() - started)
        code = report(e)
        # A run already judged INVALID is the finding a CI job must not miss: it outranks the runs that could not be
        # carried out.
        return Verdict.INVALID.exit_code if any(o.verdict is Verdict.INVALID for o in outcomes) else code
    if len(outcomes) > 1:
        _print_lab_table(outcomes, time.monotonic() - started)
    return Verdict.worst(o.verdict for o in outcomes).exit_code


def _sittings(scenarios: list, repeat: int, root: Path, attach: str | None) -> list[tuple[int, int]]:
    """How the runs sit on clusters: (attempts, first attempt's number) per cluster opened. One cluster for every run,
    unless a scenario leaves its cluster changed for good (cluster.delete_after: upgraded and finalized): then a fresh
    cluster for each of its runs, and it runs alone."""
    if not any(s.cluster.delete_after for s in scenarios):
        return [(repeat, 1)]
    if len(scenarios) > 1:
        changing = next(s.name for s in scenarios if s.cluster.delete_after)
        raise UserError(f"{changing} leaves its cluster on another Kafka release: run it on its own")
    if repeat > 1 and (attach or _running_cluster(root)):
        raise UserError(
            f"{scenarios[0].name} leaves the cluster it runs on changed for good, so each of its --repeat runs starts "
            f"a cluster of its own: pass a --dir without a running cluster (or run it once on {attach or root})"
        )
    return [(1, attempt) for attempt in range(1, repeat + 1)]


def _running_cluster(root: Path) -> bool:
    from failsafe.cluster.topology.directory import find_topology

    existing = find_topology(root)
    return existing is not None and existing.running()


def _run_options(files: list, given: dict[str, str | None]) -> list[str]:
    """The --set assignments run options stand for (--master URL: pipeline.master); an option a scenario's kind does not
    take is refused."""
    from failsafe.scenarios.kinds import KINDS

    out: list[str] = []
    for option, value in given.items():
        if value is None:
            continue
        refusing = [
            f"{f.data.get('name', f.origin)} ({f.kind.name})" for f in files if option not in f.kind.run_options
        ]
        if refusing:
            taking = [k.name for k in KINDS.values() if option in k.run_options]
            raise UserError(
                f"--{option} is for {' and '.join(taking) or 'no'} scenarios: {', '.join(refusing)} do not take it"
            )
        out += [f"{path}={json.dumps(value)}" for path in sorted({f.kind.run_options[option] for f in files})]
    return out


def _parse(file, overrides: tuple[str, ...], mode: str | None = None):
    try:
        return file.parse(overrides, mode)
    except ScenarioError as e:
        name = file.data.get("name", file.origin)
        if overrides and not str(e).startswith(str(name)):
            raise ScenarioError(f"{name}: {e}") from e
        raise


def _print_repeat(name: str, outcomes: list[Outcome], overrides: tuple[str, ...], runs_root: Path) -> None:
    from failsafe.scenarios.store.repeat import aggregate, write_aggregate

    stats = aggregate(name, [(str(o.run_dir.path), o.results) for o in outcomes], overrides)
    path = write_aggregate(runs_root / name, stats)
    verdicts = ", ".join(f"{v} {n}" for v, n in sorted(stats["verdicts"].items()))
    table = Table(
        title=f"{name}: {stats['runs']} runs ({verdicts}){' with ' + ' '.join(overrides) if overrides else ''}"
    )
    for col in ("anomaly or time", "runs", "total / median", "p95", "min-max"):
        table.add_column(col, no_wrap=col != "anomaly or time")
    for anomaly, entry in stats["anomalies"].items():
        table.add_row(anomaly, f"{entry['runs']}/{stats['runs']}", str(entry["total"]), "", "")
    for what, spread in stats["times"].items():
        if spread:
            unit = " ms" if what.endswith("_ms") else ""
            table.add_row(
                what,
                f"{spread['n']}/{stats['runs']}",
                f"{spread['median']:.0f}{unit}",
                f"{spread['p95']:.0f}{unit}",
                f"{spread['min']:.0f}-{spread['max']:.0f}{unit}",
            )
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
        table.add_row(
            o.name,
            VERDICT_STYLE[o.verdict],
            f"{passed}/{len(exps)}",
            f"{o.wall_s:.1f}",
            " ".join(f"{phase} {seconds:.1f}" for phase, seconds in slowest),
            str(report),
        )
    stdout.print(table)


@click.command("check")
@click.argument("run_dir", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print results.json instead of the summary.")
def check_command(run_dir: Path, as_json: bool) -> int:
    """Re-run the checkers on a stored run and rewrite its results.json; on a campaign's directory, on every run of it
    (campaign.json and index.html rewritten too).

    Exits as 'failsafe run' does: 0 VALID, 1 INVALID, 3 UNKNOWN, 4 KNOWN (see 'failsafe --help'); a campaign by its
    worst run."""
    from failsafe.campaigns.recheck import is_campaign
    from failsafe.scenarios.kinds import kind_of_run
    from failsafe.scenarios.store.stored import stored_scenario

    if is_campaign(run_dir):
        return _check_campaign(run_dir, as_json)
    rd = RunDir.open(run_dir)
    kind = kind_of_run(rd)
    results, history = kind.judge(rd, stored_scenario(rd))
    if as_json:
        click.echo(json.dumps(results, indent=2, default=str))
    else:
        kind.show(stdout, rd, results, history)
    return Verdict.of_run(results).exit_code


def _check_campaign(directory: Path, as_json: bool) -> int:
    from failsafe.campaigns.recheck import recheck_campaign
    from failsafe.campaigns.runner import exit_code

    def progress(old: dict, new: dict) -> None:
        if not as_json:
            changed = f" (was {old['verdict']})" if new["verdict"] != old["verdict"] else ""
            anomalies = ", ".join(f"{k} {v}" for k, v in new["anomalies"].items()) or "no anomaly"
            stdout.print(f"run {new['run']:>3} [bold]{new['verdict']:<7}[/]{changed} · {anomalies}")

    records = recheck_campaign(directory, progress)
    if as_json:
        from failsafe.campaigns.stats import read_campaign

        click.echo(json.dumps(read_campaign(directory), indent=2, default=str))
    return exit_code(records)


@click.command("report")
@click.argument("run_dir", type=click.Path(path_type=Path))
def report_command(run_dir: Path) -> int:
    """Re-render report.html of a stored run (checking it first when results.json is missing)."""
    from failsafe.scenarios.kinds import kind_of_run
    from failsafe.scenarios.store.stored import checked_run

    rd, results, history, _ = checked_run(run_dir)
    click.echo(str(kind_of_run(rd).report(rd, results, history)))
    return 0


@click.command("scenarios")
def scenarios_command() -> None:
    """The scenarios failsafe ships: name, seed tutorial, kind and cluster mode, what it shows."""
    from failsafe.scenarios.kinds import Placement, kind_of

    table = Table()
    for col in ("scenario", "seed", "kind", "mode", "what it shows"):
        table.add_column(col)
    for name in catalog_names():
        s = load_scenario(name)
        # A scenario without a mode runs in either (--mode); a DR pair's clusters are KRaft.
        kind = kind_of(s)
        mode = "DR pair" if kind.placement == Placement.DR_PAIR else s.cluster.mode or "either"
        table.add_row(name, s.seed, kind.name, mode, " ".join(s.description.split()))
    stdout.print(table)
