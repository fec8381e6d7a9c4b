"""campaign and shrink: randomized fault schedules over many runs on one cluster, and the smallest one that still
fails."""

from __future__ import annotations

import shlex
import time
from pathlib import Path

import click

from failsafe.cli.options import dir_option, resolve_dir, site_options, stderr, stdout, writable
from failsafe.cluster.site import SiteOptions
from failsafe.errors import UserError

ENVELOPES = ("safe", "anything-goes")


def _faults(value: str | None) -> tuple[str, ...]:
    return tuple(f.strip() for f in value.split(",") if f.strip()) if value else ()


def _seconds(value: str | None) -> float | None:
    """'90', '90s', '45m', '2h' as seconds."""
    if value is None:
        return None
    text = value.strip().lower()
    scale = {"s": 1, "m": 60, "h": 3600}.get(text[-1:], None)
    number = text[:-1] if scale else text
    try:
        seconds = float(number) * (scale or 1)
    except ValueError:
        raise UserError(f"--max-time {value!r}: give seconds, or minutes and hours as 45m, 2h") from None
    if seconds <= 0:
        raise UserError(f"--max-time {value!r} must be more than 0")
    return seconds


@click.command("campaign")
@click.option(
    "--faults",
    default=None,
    metavar="F1,F2,...",
    help="Fault types to draw from [default: every type campaigns draw; see docs/campaigns.md].",
)
@click.option("--runs", type=click.IntRange(1, 100000), default=10, show_default=True, help="How many runs.")
@click.option(
    "--first-run",
    type=click.IntRange(0, 100000),
    default=0,
    show_default=True,
    help="The index of the first run: go on with a seed's schedules where an earlier campaign of it stopped.",
)
@click.option(
    "--seed",
    type=click.IntRange(0, 2**63 - 1),
    default=None,
    help="The seed every schedule is drawn from; the same seed draws the same schedules [default: from the clock, "
    "printed].",
)
@click.option(
    "--duration-s",
    type=click.FloatRange(3, 3600),
    default=20.0,
    show_default=True,
    help="Each run's chaos phase, in seconds.",
)
@click.option(
    "--workload",
    default="acks-all",
    show_default=True,
    help="A campaign workload (acks-all, client-matrix, transactions) or a lab or txn scenario file without "
    "[[faults]].",
)
@click.option(
    "--envelope",
    type=click.Choice(ENVELOPES),
    default="safe",
    show_default=True,
    help="safe: never more brokers away than replication.factor - min.insync.replicas, nor a controller majority; "
    "anything-goes: no bound (safety checks only).",
)
@click.option("--stop-on-invalid", is_flag=True, help="Stop after the first INVALID run.")
@click.option(
    "--max-time", default=None, metavar="SECONDS|45m|2h", help="Start no run that would end past this budget."
)
@dir_option
@site_options("the campaign")
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where the campaign's directory goes [default: DIR/campaigns].",
)
def campaign_command(
    faults: str | None,
    runs: int,
    first_run: int,
    seed: int | None,
    duration_s: float,
    workload: str,
    envelope: str,
    stop_on_invalid: bool,
    max_time: str | None,
    cluster_dir: Path | None,
    site: SiteOptions,
    out_dir: Path | None,
) -> int:
    """Run randomized fault schedules on one cluster and judge every run.

    Each run draws its faults (type, aim by role, start, duration) from --seed, within the envelope,
    writes them as schedule.toml in its run directory ('failsafe run FILE' replays it), and is judged
    by its kind's checkers. campaign.json and index.html sum the runs up as they finish. Exits as
    'failsafe run' does: 1 if a run was INVALID, else 5 if one could not be carried out, else 3, 4 or 0.
    """
    from failsafe.campaigns.nemesis import Envelope
    from failsafe.campaigns.plan import Plan
    from failsafe.campaigns.runner import Campaign, Ready, exit_code
    from failsafe.scenarios.engine.sites import open_site

    budget = _seconds(max_time)
    plan = Plan.make(workload, _faults(faults), Envelope(envelope), duration_s)
    seed = seed if seed is not None else time.time_ns() % 1_000_000
    root = writable(resolve_dir(cluster_dir), "--dir")
    directory = (
        writable(out_dir or root / "campaigns", "--out")
        / f"{plan.workload}-s{seed}-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}"
    )
    command = shlex.join(
        [
            "failsafe",
            "campaign",
            "--workload",
            workload,
            "--faults",
            ",".join(plan.nemesis.faults),
            "--runs",
            str(runs),
            *(("--first-run", str(first_run)) if first_run else ()),
            "--seed",
            str(seed),
            "--duration-s",
            f"{duration_s:g}",
            "--envelope",
            envelope,
        ]
    )
    settings = {
        "seed": seed,
        "workload": plan.workload,
        "faults": list(plan.nemesis.faults),
        "envelope": envelope,
        "limits": {"brokers": plan.nemesis.limits.brokers, "controllers": plan.nemesis.limits.controllers},
        "duration_s": duration_s,
        "runs": runs,
        "first_run": first_run,
        "stop_on_invalid": stop_on_invalid,
        "max_time_s": budget,
        "command": command,
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    started = time.monotonic()

    def event(message: str) -> None:
        stderr.print(f"[dim]{time.monotonic() - started:7.1f}s[/] {message}")

    stdout.print(f"campaign: {directory}\nseed {seed}: {command}")
    campaign = Campaign(plan, directory, seed, runs, settings, stop_on_invalid, budget, first_run)
    with (
        stderr.status("preparing") as status,
        open_site([plan.scenario], root, event, site) as (cluster, clusters, facts),
    ):
        settings["cluster"] = facts

        def progress(record: dict, eta: str) -> None:
            anomalies = ", ".join(f"{k} {v}" for k, v in record["anomalies"].items()) or "no anomaly"
            stdout.print(
                f"run {record['run']:>3} [bold]{record['verdict']:<7}[/] {record['wall_s']:5.1f}s "
                f"(overhead {record['overhead_s']:.1f}s) {len(record['schedule']['faults'])} faults · {anomalies}"
            )
            status.update(f"campaign · {eta}")

        def update(message: str) -> None:
            status.update(f"{message} · {campaign.eta(time.monotonic() - started)}")

        ready = Ready(cluster, {**facts}, clusters, update, event)
        records = campaign.run_all(ready, progress)
    stdout.print(f"{len(records)} runs ({campaign.stopped}); campaign.json and index.html in {directory}")
    return exit_code(records)


@click.command("shrink")
@click.argument("run_dir", type=click.Path(path_type=Path))
@click.option(
    "--anomaly",
    default=None,
    metavar="CHECKER.ANOMALY",
    help="The anomaly kind to keep [default: a loss if the run had one, else its first].",
)
@click.option(
    "--tries",
    type=click.IntRange(1, 100),
    default=3,
    show_default=True,
    help="Runs of each candidate before it counts as not reproducing.",
)
@click.option(
    "--max-runs",
    type=click.IntRange(0, 10000),
    default=60,
    show_default=True,
    help="At most this many runs of candidates.",
)
@click.option(
    "--confirm",
    type=click.IntRange(0, 100),
    default=None,
    help="Runs of the smallest schedule at the end [default: --tries].",
)
@dir_option
@site_options("shrink")
def shrink_command(
    run_dir: Path,
    anomaly: str | None,
    tries: int,
    max_runs: int,
    confirm: int | None,
    cluster_dir: Path | None,
    site: SiteOptions,
) -> int:
    """Find a smaller schedule that still shows a campaign run's anomaly (docs/campaigns.md, "Shrinking").

    Drops faults, shortens them, moves them earlier and cuts the chaos phase, running each candidate up
    to --tries times on the cluster; writes RUN_DIR/shrink/shrunk.toml (replay it with 'failsafe run')
    and shrink.json. Exits with the run's verdict (1 INVALID, 4 KNOWN) when the smallest schedule reproduced
    the anomaly in a confirmation run, 3 when it did not.
    """
    from failsafe.campaigns.plan import parse
    from failsafe.campaigns.reproduce import Failed
    from failsafe.campaigns.runner import Ready
    from failsafe.campaigns.shrink import shrink
    from failsafe.scenarios.engine.sites import open_site

    failed = Failed.open(run_dir, anomaly)
    root = resolve_dir(cluster_dir)
    scenario = parse(failed.base, failed.schedule, f"{failed.name}-shrink", failed.name)
    started = time.monotonic()

    def event(message: str) -> None:
        stderr.print(f"[dim]{time.monotonic() - started:7.1f}s[/] {message}")

    stdout.print(
        f"shrinking {run_dir} ({failed.anomaly}): {len(failed.schedule.faults)} faults, chaos "
        f"{failed.schedule.chaos_s:g}s"
    )
    with stderr.status("preparing") as status, open_site([scenario], root, event, site) as (cluster, clusters, facts):
        ready = Ready(cluster, facts, clusters, status.update, event)
        result = shrink(
            failed.schedule,
            failed.attempt(ready),
            tries=tries,
            max_runs=max_runs,
            confirm=confirm,
            progress=stdout.print,
            on_step=lambda step: stdout.print(f"[bold]accepted[/]: {step.move} {step.detail} -> {failed.keep(step)}"),
        )
    path = failed.write_result(result)
    for line in result.summary():
        stdout.print(line)
    stdout.print(f"smallest schedule: {failed.directory / 'shrunk.toml'}\nshrink.json: {path}")
    from failsafe.checkers.common import Verdict

    return Verdict(failed.verdict).exit_code if result.confirm_reproduced else Verdict.UNKNOWN.exit_code
