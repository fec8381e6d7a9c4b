"""The atlas's runs: grouped by mode and profile, one cluster per group, resumed where a stopped atlas left off.

A group is every selected cell of one mode and one profile: they run on one cluster, started for the group and
deleted after it, so two clusters never run at once. Within a group the cells run in the grid's order, each its
missing runs: a cell whose JSON holds ``runs`` judged runs is complete and skipped, a cell with fewer (an atlas
stopped in it, or started with a smaller --repeat) runs only the difference; a group whose cells are all complete
starts no cluster. Runs that could not be carried out are kept in the cell's ``errors`` and do not count, so the
next invocation tries them again. A run that leaves the cluster not whole, or a cluster that cannot start, ends
its group (recorded in each cell that still lacks runs); the next group gets a new cluster.

The launcher (launch.py for real clusters, a fake in the tests) does the work; this module decides what to run, records
it, and says so (lines in rich's markup): a line per run, and a status line with what runs now and an ETA, which is the
estimate of what is left scaled by how the runs so far compared with their estimates."""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from rich.markup import escape

from failsafe.atlas.grid import CLUSTER_START_STOP_S, MODE_BY_NAME, MODES, PROFILES, Cell, duration, run_estimate_s
from failsafe.atlas.render import write_html
from failsafe.atlas.store import ERROR, Store
from failsafe.campaigns.runner import RUN_ERRORS, exit_code
from failsafe.errors import UserError

Say = Callable[[str], None]


@dataclass(frozen=True)
class Group:
    mode: str
    profile: str
    cells: tuple[Cell, ...]

    @property
    def label(self) -> str:
        return f"{self.mode} · {self.profile}"


def group_cells(cells: list[Cell]) -> list[Group]:
    """One group per mode and profile that has cells, modes in the grid's order, then profiles; cells keep their
    order."""
    groups = []
    for mode in MODES:
        for profile in PROFILES:
            mine = tuple(c for c in cells if c.mode == mode.name and c.profile == profile)
            if mine:
                groups.append(Group(mode.name, profile, mine))
    return groups


@dataclass(frozen=True)
class RunOutcome:
    """One run as the launcher carried it out: judged (results), or not carried out (error); ``broken``: why the cluster
    cannot take another run (a node still down after the heal), or None."""

    run_dir: Path | None
    results: dict | None
    wall_s: float
    error: str | None = None
    broken: str | None = None


class Session(Protocol):
    def run(self, cell: Cell, runs_root: Path) -> RunOutcome: ...


class Launcher(Protocol):
    def cluster(self, group: Group) -> AbstractContextManager[Session]:
        """Start the group's cluster, yield what runs cells on it, stop and delete it (also on Ctrl-C)."""
        ...


@dataclass
class Plan:
    cells: list[Cell]
    runs: int
    store: Store
    groups: list[Group] = field(init=False)

    def __post_init__(self) -> None:
        self.groups = group_cells(self.cells)
        self.store.check(self.cells)

    def stored(self, cell: Cell) -> int:
        return len(self.store.runs(cell))

    def missing(self, cell: Cell) -> int:
        return max(0, self.runs - self.stored(cell))

    def runs_to_do(self) -> int:
        return sum(self.missing(c) for c in self.cells)

    def pending_groups(self) -> list[Group]:
        return [g for g in self.groups if any(self.missing(c) for c in g.cells)]

    def estimate_s(self, cells: list[Cell] | None = None) -> float:
        """What the missing runs of ``cells`` (default: all) should take, with a cluster start and stop per group that
        has any."""
        chosen = set(self.cells if cells is None else cells)
        runs = sum(self.missing(c) * run_estimate_s(c) for c in self.cells if c in chosen)
        groups = sum(1 for g in self.pending_groups() if any(c in chosen and self.missing(c) for c in g.cells))
        return runs + groups * CLUSTER_START_STOP_S

    def describe(self) -> list[str]:
        """What the atlas will do, for the terminal: the grid, what is stored already (resume), the estimate."""
        todo = self.runs_to_do()
        complete = [c for c in self.cells if not self.missing(c)]
        partial = [c for c in self.cells if self.missing(c) and self.stored(c)]
        lines = [
            f"{plural(len(self.cells), 'cell')} in {plural(len(self.groups), 'group')} (one cluster per mode and "
            f"profile), {plural(self.runs, 'run')} a cell"
        ]
        if complete or partial:
            lines.append(
                f"resuming {self.store.out}: {plural(len(complete), 'cell')} complete (skipped), {len(partial)} "
                f"partial, {len(self.cells) - len(complete) - len(partial)} not started"
            )
            lines += [
                f"  {c.label}: {self.stored(c)} of {self.runs} runs stored, {self.missing(c)} to run" for c in partial
            ]
        pending = self.pending_groups()
        lines.append(
            f"{plural(todo, 'run')} to do on {plural(len(pending), 'cluster')}: estimate {duration(self.estimate_s())} "
            "(the scenarios' phases, plus overheads per run and per cluster fitted to the stored atlas: docs/atlas.md)"
        )
        for g in pending:
            cells = [c for c in g.cells if self.missing(c)]
            lines.append(
                f"  {g.label}: {plural(len(cells), 'cell')}, {plural(sum(self.missing(c) for c in cells), 'run')}, "
                f"about {duration(self.estimate_s(cells))}"
            )
        return lines


@dataclass
class Progress:
    """Runs done in this invocation and how long they took against their estimates (the ETA's calibration), and the
    estimate of what is left to attempt."""

    total: int
    left_s: float
    done: int = 0
    spent_s: float = 0.0
    estimated_s: float = 0.0

    def add(self, wall_s: float, estimate_s: float) -> None:
        self.done += 1
        self.spent_s += wall_s
        self.estimated_s += estimate_s
        self.left_s = max(0.0, self.left_s - estimate_s)

    def eta(self) -> str:
        factor = self.spent_s / self.estimated_s if self.estimated_s > 0 else 1.0
        return f"ETA {duration(self.left_s * factor)}"


class _GroupEnded(Exception):
    """The group's cluster cannot take another run."""


def run_atlas(
    plan: Plan, launcher: Launcher, say: Say, status: Say, clock: Callable[[], float] = time.monotonic
) -> int:
    """Run every missing run of the plan; returns the exit code over every selected cell's stored runs."""
    progress = Progress(plan.runs_to_do(), plan.estimate_s())
    pending = plan.pending_groups()
    for i, group in enumerate(pending):
        progress.left_s = max(0.0, progress.left_s - CLUSTER_START_STOP_S)
        _run_group(plan, group, launcher, progress, say, status, clock)
        # What is left is the later groups' missing runs (a group that ended early leaves its own to the next
        # invocation).
        progress.left_s = plan.estimate_s([c for g in pending[i + 1 :] for c in g.cells])
    if plan.runs_to_do():
        say(f"{plural(plan.runs_to_do(), 'run')} could not be carried out: run the same command again to try them")
    return atlas_exit_code(plan)


def _run_group(
    plan: Plan, group: Group, launcher: Launcher, progress: Progress, say: Say, status: Say, clock: Callable[[], float]
) -> None:
    mode = MODE_BY_NAME[group.mode]
    say(
        f"[bold]{group.label}[/]: a {mode.title} cluster with profile {group.profile} for "
        f"{plural(sum(1 for c in group.cells if plan.missing(c)), 'cell')}"
    )
    status(f"{group.label} · starting the cluster · {progress.eta()}")
    try:
        with launcher.cluster(group) as session:
            for cell in group.cells:
                _run_cell(plan, cell, session, progress, say, status, clock)
    except _GroupEnded as e:
        _record_group_error(plan, group, str(e), say)
    except RUN_ERRORS as e:
        if isinstance(e, UserError):
            raise
        _record_group_error(plan, group, f"the cluster could not be started or stopped: {type(e).__name__}: {e}", say)
    finally:
        _write_views(plan.store)


def _run_cell(
    plan: Plan, cell: Cell, session: Session, progress: Progress, say: Say, status: Say, clock: Callable[[], float]
) -> None:
    missing = plan.missing(cell)
    if not missing:
        return
    stored = plan.stored(cell)
    say(
        f"{cell.label} ({cell.scenario}): "
        + (
            f"resuming, {stored} of {plural(plan.runs, 'run')} stored, {missing} to run"
            if stored
            else plural(missing, "run")
        )
    )
    for i in range(missing):
        status(
            f"{cell.label} · run {stored + i + 1}/{plan.runs} · {progress.done}/{progress.total} runs done · "
            f"{progress.eta()}"
        )
        begun = clock()
        outcome = session.run(cell, plan.store.runs_root(cell))
        wall_s = outcome.wall_s or clock() - begun
        progress.add(wall_s, run_estimate_s(cell))
        if outcome.results is not None and outcome.run_dir is not None:
            data = plan.store.add_run(cell, plan.runs, outcome.run_dir, outcome.results, wall_s)
            say(_run_line(cell, stored + i + 1, plan.runs, data["runs"][-1], progress))
        else:
            plan.store.add_error(cell, plan.runs, outcome.error or "no results", outcome.run_dir)
            say(
                f"{cell.label} run {stored + i + 1}/{plan.runs} [bold]{ERROR}[/]: {escape(str(outcome.error))} (kept "
                "in the cell's errors; the next invocation runs it again)"
            )
        _write_views(plan.store)
        if outcome.broken:
            raise _GroupEnded(outcome.broken)


def _record_group_error(plan: Plan, group: Group, error: str, say: Say) -> None:
    left = [c for c in group.cells if plan.missing(c)]
    for cell in left:
        plan.store.add_error(cell, plan.runs, f"{group.label}: {error}")
    say(
        f"[bold]{group.label}[/]: {escape(error)}; {plural(len(left), 'cell')} of it still lack runs (the next "
        f"invocation runs them)"
    )


def _run_line(cell: Cell, n: int, runs: int, record: dict[str, Any], progress: Progress) -> str:
    def ms(value: object) -> str:
        return "—" if value is None else f"{float(value) / 1000:.1f} s"  # type: ignore[arg-type]

    return (
        f"{cell.label} run {n}/{runs} [bold]{record['verdict']}[/] · unavailable {ms(record['unavailable_ms'])} · "
        f"followed stall {ms(record['followed_stall_ms'])} · new leader {ms(record['new_leader_ms'])} · "
        f"lost {record['lost_acknowledged']} · {record['wall_s']:.0f}s · {progress.done}/{progress.total} · "
        f"{progress.eta()}"
    )


def plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _write_views(store: Store) -> None:
    store.write_bundle()
    write_html(store.out, store.all_cells())


def atlas_exit_code(plan: Plan) -> int:
    """Over the selected cells: INVALID (1) over a cell still lacking runs it could not carry out (5) over UNKNOWN (3)
    over KNOWN (4) over VALID (0), as 'failsafe campaign' decides."""
    records = [{"verdict": r["verdict"]} for c in plan.cells for r in plan.store.runs(c)]
    records += [{"verdict": ERROR} for c in plan.cells if plan.missing(c) and plan.store.errors(c)]
    return exit_code(records)
