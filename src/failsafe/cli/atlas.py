"""atlas: faults × profiles × clients × modes, N runs a cell, one cluster per mode and profile, resumable
(docs/atlas.md)."""

from __future__ import annotations

import shlex
import time
from pathlib import Path

import click
from rich.table import Table

from failsafe.cli.hosts import inventory_options, load_inventory
from failsafe.cli.options import stderr, stdout

DEFAULT_OUT = Path("failsafe-atlas")


def atlas_run_options(written: str):
    """The options of a command that runs atlas cells ('failsafe atlas', 'failsafe compare'): where its clusters go,
    their heap and ports, --plan, --render-only (rewrites ``written``), and the inventory's."""

    def decorate(f):
        for option in reversed(
            (
                click.option(
                    "--dir",
                    "cluster_dir",
                    type=click.Path(file_okay=False, path_type=Path),
                    default=None,
                    help="Where its clusters are made (and deleted), one at a time [default: OUT/cluster].",
                ),
                click.option("--heap", default=None, help="JVM heap of each node [default: 1G]."),
                click.option(
                    "--base-port",
                    type=click.IntRange(1, 65535),
                    default=None,
                    help="Broker ports of the clusters [default: 9092].",
                ),
                click.option(
                    "--plan",
                    "plan_only",
                    is_flag=True,
                    help="Print the cells, the groups, what is stored and the estimate; run nothing.",
                ),
                click.option(
                    "--render-only", is_flag=True, help=f"Rewrite {written} from the stored cells; run nothing."
                ),
                inventory_options,
            )
        ):
            f = option(f)
        return f

    return decorate


@click.command("atlas")
@click.option(
    "--cells",
    "selections",
    multiple=True,
    metavar="AXIS=V,V;...",
    help="The cells to run: fault=..., profile=..., client=..., mode=..., joined by ';' (values by ',', * for all; "
    "an axis left "
    "out: all of it), e.g. --cells 'fault=kill,pause;profile=*;client=librdkafka;mode=kraft-4.3.1'; repeatable "
    "[default: the default grid, docs/atlas.md].",
)
@click.option(
    "--full",
    is_flag=True,
    help="Every cell of the grid (7 faults × 3 profiles × 2 clients × 4 modes: 840 runs at 5 a cell, an estimated "
    "10h48m).",
)
@click.option("--repeat", "runs", type=click.IntRange(1, 1000), default=None, help="Runs per cell [default: 5].")
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=DEFAULT_OUT,
    show_default=True,
    help="The atlas's directory: cell JSONs, runs, atlas.json, atlas.html. The same --out again resumes it.",
)
@atlas_run_options("atlas.json and atlas.html")
def atlas_command(
    selections: tuple[str, ...],
    full: bool,
    runs: int | None,
    out_dir: Path,
    cluster_dir: Path | None,
    heap: str | None,
    base_port: int | None,
    plan_only: bool,
    render_only: bool,
    inventory_file: Path | None,
    hosts_list: str | None,
    user: str | None,
    key: Path | None,
) -> int:
    """Run the failover atlas: every selected cell (a fault, a profile, a client library, a cluster mode) N times, and
    its p50/p95 of client-visible unavailability, write stall on followed partitions, time to a new leader and loss.

    Cells are grouped by mode and profile; each group runs on a cluster of its own, started for it and deleted after,
    never two at once. A stopped atlas (Ctrl-C, a crash) goes on with the same command: complete cells are skipped, a
    partial one runs only its missing runs. Exits as 'failsafe run' does over every selected cell's runs: 0 all VALID,
    1 one INVALID, 2 usage, 3 UNKNOWN, 4 KNOWN, 5 a cell still lacks runs failsafe could not carry out.
    """
    from failsafe.atlas.grid import DEFAULT_RUNS, select
    from failsafe.atlas.render import write_html
    from failsafe.atlas.runner import Plan, atlas_exit_code
    from failsafe.atlas.store import Store

    cells = select(selections, full)
    n = runs if runs is not None else DEFAULT_RUNS
    store = Store(out_dir)
    plan = Plan(cells, n, store)
    if render_only:
        store.write_bundle()
        stdout.print(f"atlas.html: {write_html(out_dir, store.all_cells())}")
        return atlas_exit_code(plan)
    for line in plan.describe():
        stdout.print(line, soft_wrap=True)
    if n < 5:
        stdout.print(
            f"note: with {n} runs a cell, p95 is the largest run's value (5 or more make it a percentile worth "
            f"the name)"
        )
    if plan_only:
        return 0
    if not plan.runs_to_do():
        store.write_bundle()
        stdout.print(f"every selected cell has its {n} runs; atlas.html: {write_html(out_dir, store.all_cells())}")
        return atlas_exit_code(plan)
    inventory = (
        load_inventory(inventory_file, hosts_list, user, key) if inventory_file or hosts_list or user or key else None
    )
    return _run(plan, selections, full, n, out_dir, cluster_dir, heap, base_port, inventory)


def _run(
    plan,
    selections: tuple[str, ...],
    full: bool,
    n: int,
    out_dir: Path,
    cluster_dir: Path | None,
    heap: str | None,
    base_port: int | None,
    inventory=None,
    command: str | None = None,
) -> int:
    """Run the plan's missing runs (``command``: how the invocation is recorded, default the 'failsafe atlas' one)."""
    from failsafe.atlas.launch import KafkaLauncher
    from failsafe.atlas.runner import run_atlas

    started = time.monotonic()

    def event(message: str) -> None:
        stderr.print(f"[dim]{time.monotonic() - started:7.1f}s[/] {message}", soft_wrap=True)

    command = command or shlex.join(
        [
            "failsafe",
            "atlas",
            *(("--full",) if full else ()),
            *(a for s in selections for a in ("--cells", s)),
            "--repeat",
            str(n),
            "--out",
            str(out_dir),
        ]
    )
    root = cluster_dir if cluster_dir is not None else out_dir / "cluster"
    with stderr.status("preparing") as status:
        # The status line: what the engine does now, then the atlas's cell, run and ETA (the runner's last word).
        context = [""]

        def atlas_status(text: str) -> None:
            context[0] = text
            status.update(text)

        def engine_status(text: str) -> None:
            status.update(f"{text} · {context[0]}" if context[0] else text)

        launcher = KafkaLauncher(root, out_dir, heap, base_port, event, engine_status, inventory)
        launcher.prepare(plan.pending_groups())
        plan.store.add_invocation(
            {"command": command, "runs": n, "cells": [c.id for c in plan.cells], "cluster_dir": str(root)}
        )
        before = sum(plan.stored(c) for c in plan.cells)
        try:
            code = run_atlas(plan, launcher, lambda line: stdout.print(line, soft_wrap=True), atlas_status)
        except KeyboardInterrupt:
            done = sum(plan.stored(c) for c in plan.cells) - before
            stderr.print(
                f"atlas interrupted after {done} runs, each stored in {out_dir}: run the same command again to go on "
                "(complete cells are skipped, a partial cell runs only its missing runs)",
                soft_wrap=True,
            )
            raise
    _print_summary(plan, time.monotonic() - started)
    stdout.print(f"atlas.json and atlas.html in {out_dir}")
    return code


def _print_summary(plan, elapsed_s: float) -> None:
    from failsafe.atlas.render import show

    table = Table(title=f"{len(plan.cells)} cells ({elapsed_s / 60:.0f} min): p50 / p95 over each cell's runs")
    table.add_column("cell", no_wrap=True)
    for col in ("runs", "verdicts", "unavailable", "followed stall", "new leader", "lost"):
        table.add_column(col)

    def both(summary: dict, name: str) -> str:
        s = summary.get(name)
        return "—" if not s else f"{show(name, s['p50'])} / {show(name, s['p95'])}"

    for cell in plan.cells:
        summary = (plan.store.load(cell) or {}).get("summary") or {}
        table.add_row(
            cell.label,
            f"{summary.get('runs', 0)}/{plan.runs}",
            ", ".join(f"{k} {v}" for k, v in (summary.get("verdicts") or {}).items()),
            both(summary, "unavailable_ms"),
            both(summary, "followed_stall_ms"),
            both(summary, "new_leader_ms"),
            str(summary.get("lost_acknowledged_total", 0)),
        )
    stdout.print(table)
