"""failsafe simulate sales: seed 003's sales simulator against the local cluster, with a ledger."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

import click
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from failsafe.cli.options import (
    INTERRUPTED_EXIT,
    bootstrap_option,
    dir_option,
    resolve_bootstrap,
    stderr,
    timeout_option,
)
from failsafe.tools.admin import DEFAULT_TIMEOUT_S
from failsafe.workloads.sales.generator import AUTO, CLOCKS
from failsafe.workloads.sales.run import SalesOptions, SimulatorError, run_sales
from failsafe.workloads.sales.simulator import ACKS

RATE_WINDOW_S = 2.0


@click.group("simulate")
def simulate() -> None:
    """Realistic workloads on the cluster (the tutorials' simulators)."""


class _Display:
    """Rich progress on stderr: sent, acknowledged, failed and the rate over the last seconds."""

    def __init__(self, count: int | None, duration_s: float | None) -> None:
        self.progress = Progress(
            TextColumn("[bold]sales"),
            BarColumn(),
            TextColumn(
                "{task.fields[sent]:>10,} sent  {task.fields[acked]:>10,} acknowledged  "
                "{task.fields[failed]:,} failed  {task.fields[rate]:>8,.0f}/s"
            ),
            TimeElapsedColumn(),
            console=stderr,
            disable=not stderr.is_terminal,
        )
        self.count, self.duration_s = count, duration_s
        total = count if count is not None else duration_s
        self.task = self.progress.add_task("sales", total=total, sent=0, acked=0, failed=0, rate=0.0)
        self.t0 = time.monotonic()
        self.samples: list[tuple[float, int]] = []

    def update(self, totals: dict[str, int]) -> None:
        now = time.monotonic()
        self.samples = [s for s in self.samples if now - s[0] <= RATE_WINDOW_S] + [(now, totals["acknowledged"])]
        first_t, first_n = self.samples[0]
        rate = (totals["acknowledged"] - first_n) / (now - first_t) if now > first_t else 0.0
        done = totals["acknowledged"] if self.count is not None else (now - self.t0 if self.duration_s else None)
        self.progress.update(
            self.task,
            completed=done,
            sent=totals["sent"],
            acked=totals["acknowledged"],
            failed=totals["failed"],
            rate=rate,
        )


@simulate.command("sales")
@dir_option
@bootstrap_option
@click.option(
    "--rate",
    "rate",
    type=float,
    default=0.0,
    metavar="N",
    show_default=True,
    help="Purchases per second in total; 0 = as fast as possible.",
)
@click.option("--duration", "duration_s", type=float, default=None, metavar="S", help="Run for S seconds.")
@click.option(
    "--count",
    type=int,
    default=None,
    metavar="N",
    help="Send N purchases in total (without --duration or --count: until Ctrl-C).",
)
@click.option(
    "--seed", type=int, default=None, metavar="K", help="Seed of every random choice [default: a random one, printed]."
)
@click.option(
    "--clock",
    type=click.Choice(CLOCKS),
    default=AUTO,
    show_default=True,
    help="Event time: 'wall' is the time each purchase is due to be sent; 'accelerated' is a simulated shopping day, "
    "far faster than real time; 'auto' is wall with a --rate, accelerated without.",
)
@click.option(
    "--start-time",
    default=None,
    metavar="'YYYY-MM-DD HH:MM:SS'",
    help="Start of the accelerated clock, UTC [default: now].",
)
@click.option(
    "--instances",
    type=int,
    default=1,
    metavar="M",
    show_default=True,
    help="Simulator instances, each a worker process with its own stream.",
)
@click.option(
    "--ledger",
    "ledger_dir",
    type=click.Path(path_type=Path),
    metavar="DIR",
    default=Path("sales-ledger"),
    show_default=True,
    help="Directory of the ledger of acknowledged purchases (replaces an older ledger there).",
)
@click.option(
    "--malformed-every",
    type=int,
    default=0,
    metavar="N",
    show_default=True,
    help="Every Nth record is broken JSON on purpose; 0 = never.",
)
@click.option("--acks", type=click.Choice(ACKS), default="all", show_default=True)
@timeout_option(DEFAULT_TIMEOUT_S, "How long to wait for Kafka to answer at start.")
def sales_command(
    cluster_dir,
    bootstrap_server,
    rate: float,
    duration_s: float | None,
    count: int | None,
    seed: int | None,
    clock: str,
    start_time: str | None,
    instances: int,
    ledger_dir: Path,
    malformed_every: int,
    acks: str,
    timeout_s: float,
) -> None:
    """Products to demo.products, purchases to demo.purchases, restocks to demo.inventories.

    Every purchase Kafka acknowledged is written to the ledger with its partition and offset.
    """
    options = SalesOptions(
        bootstrap_servers=bootstrap_server or "",
        ledger=ledger_dir,
        rate_per_s=rate,
        count=count,
        duration_s=duration_s,
        seed=seed,
        start_time=start_time,
        clock=clock,
        instances=instances,
        malformed_every=malformed_every,
        acks=acks,
        timeout_s=timeout_s,
    )
    # Options first, so a bad one is reported before we look for the cluster.
    options.validate()
    if not bootstrap_server:
        options = replace(options, bootstrap_servers=resolve_bootstrap(None, cluster_dir))
    display = _Display(count, duration_s)
    with display.progress:
        result = run_sales(options, display.update)
    m = result.manifest
    rate_done = m["acknowledged"] / result.send_s if result.send_s > 0 else 0.0
    click.echo(
        f"sales: {m['acknowledged']} purchases acknowledged, {m['failed']} failed, {m['malformed']} malformed, "
        f"{m['restocks']} restocks in {result.send_s:.1f} s ({rate_done:,.0f}/s) by {m['instances']} "
        f"instance{'s' if m['instances'] > 1 else ''}, seed {m['seed']}; ledger {options.ledger}"
        f"{'' if result.complete else ' (incomplete)'}"
    )
    if result.errors:
        raise SimulatorError(f"{result.errors[0]}; the ledger at {options.ledger} is marked incomplete")
    if m["failed"]:
        raise click.exceptions.Exit(1)
    if result.interrupted and (count is not None or duration_s is not None):
        raise click.exceptions.Exit(INTERRUPTED_EXIT)
