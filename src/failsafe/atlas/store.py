"""An atlas's directory: one JSON per cell, rewritten after each of its runs, and atlas.json over them all.

    OUT/cells/CELL_ID.json    the cell (below); what a resumed atlas reads to know which runs a cell still lacks
    OUT/runs/CELL_ID/...      the runs' directories (runs/SCENARIO/UTC-TIME, as 'failsafe run --runs' makes them)
    OUT/invocations.json      each 'failsafe atlas' that worked on the directory: when, its command, its cells
    OUT/atlas.json            every stored cell and the invocations: what docs/benchmarks/atlas.json keeps
    OUT/atlas.html            the heat maps (render.py)

A cell's JSON: ``format``, ``id``, ``key`` (fault, profile, client, mode), ``scenario``, ``overrides`` (its --set
changes), ``kafka_version``, ``cluster_mode``, ``runs_wanted``, ``runs`` (one record per judged run, run directories
relative to OUT), ``errors`` (runs and clusters that could not be carried out: a resumed atlas runs those again),
``summary`` (verdicts, and n, p50, p95, min, max of each measure over the runs that have it) and ``updated_at``.
Every number is read from the runs' results.json, never from their histories, so a cell can be summed up again.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from failsafe.atlas.grid import MODE_BY_NAME, Cell
from failsafe.campaigns.record import lost_acknowledged
from failsafe.checkers.common import Verdict
from failsafe.errors import UserError
from failsafe.scenarios.store.repeat import anomalies, spread

FORMAT = 1
ERROR = "ERROR"
# The heat maps' measures, in their order: (field of a run record, what it is).
MEASURES: tuple[tuple[str, str], ...] = (
    (
        "unavailable_ms",
        "client-visible unavailability: the longest time a partition the faulted node led took no write",
    ),
    ("followed_stall_ms", "write stall on the partitions the faulted broker followed: the longest"),
    ("new_leader_ms", "time to a new leader of the partitions it led (median over them)"),
    ("lost_acknowledged", "acknowledged writes lost by producers that promised durability (acks=all)"),
)
# Measured too, shown in each cell's details.
OTHER_MEASURES: tuple[tuple[str, str], ...] = (
    ("new_controller_ms", "time to a new active controller"),
    ("rebalance_pause_ms", "rebalance pause: the longest time a consumer group's partitions had no live owner"),
    ("lost_allowed", "acknowledged writes lost by producers declared may_lose (acks 0 or 1)"),
    ("wall_s", "wall time of the run"),
)
BREAKDOWN = "failover_breakdown"


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _utc() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


# The breakdown's components (checkers/measure/breakdown.py), pooled over a cell's partitions: every partition of every
# run counts once.
BREAKDOWN_COMPONENTS = ("detection_s", "election_s", "propagation_s", "client_backoff_s", "client_visible_s")


def breakdown_of(results: dict) -> dict[str, list[float]] | None:
    """The run's failover breakdown (measurements.failover_breakdown) as each component's values, one per partition a
    fault took the leader of; None when the run has none (a breakdown that could not be measured has an ``error``
    instead)."""
    found = (results.get("measurements") or {}).get(BREAKDOWN)
    if not isinstance(found, dict) or not isinstance(found.get("partitions"), list):
        return None
    rows = [r for r in found["partitions"] if isinstance(r, dict)]
    return {c: [v for r in rows if (v := _number(r.get(c))) is not None] for c in BREAKDOWN_COMPONENTS}


def run_record(run_dir: str, results: dict, wall_s: float) -> dict[str, Any]:
    """One judged run of a cell, from its results.json."""
    checkers = results.get("checkers") or {}
    availability = checkers.get("availability") or {}
    follower = (availability.get("stall_by_group") or {}).get("follower") or {}
    counts = (checkers.get("delivery") or {}).get("counts") or {}
    record: dict[str, Any] = {
        "run_dir": run_dir,
        "verdict": str(Verdict.of_run(results)),
        "unavailable_ms": _number(availability.get("max_unavailable_ms")),
        "followed_stall_ms": _number(follower.get("max_stall_ms")),
        # Followed partitions no write was acknowledged on after the fault began: a stall with no end, not in the number
        # above.
        "followed_stall_open": int(follower.get("open") or 0),
        "new_leader_ms": _number(availability.get("median_new_leader_ms")),
        # Partitions the fault took the leader of that took no write again before the run ended: not in unavailable_ms.
        "never_available_again": int((availability.get("counts") or {}).get("never-available-again") or 0),
        "new_controller_ms": _number((results.get("measurements") or {}).get("new_controller_ms")),
        "rebalance_pause_ms": _number((checkers.get("rebalance") or {}).get("max_pause_ms")),
        "lost_acknowledged": lost_acknowledged(results),
        "lost_allowed": int(counts.get("lost-allowed") or 0) + int(counts.get("lost-after-read-allowed") or 0),
        "anomalies": anomalies(results),
        "wall_s": round(wall_s, 3),
        "finished_at": _utc(),
    }
    breakdown = breakdown_of(results)
    if breakdown is not None:
        record[BREAKDOWN] = breakdown
    return record


def percentiles(values: list[float]) -> dict[str, float | int] | None:
    """n, p50, p95 (nearest rank, as 'failsafe run --repeat'), min and max; None without values."""
    s = spread(values)
    if s is None:
        return None
    return {"n": s["n"], "p50": s["median"], "p95": s["p95"], "min": s["min"], "max": s["max"]}


def summarise(runs: list[dict[str, Any]]) -> dict[str, Any]:
    verdicts: dict[str, int] = {}
    for r in runs:
        verdicts[r["verdict"]] = verdicts.get(r["verdict"], 0) + 1
    out: dict[str, Any] = {
        "runs": len(runs),
        "verdicts": dict(sorted(verdicts.items())),
        "verdict": str(Verdict.worst(Verdict(v) for v in verdicts)) if runs else None,
    }
    for name, _ in (*MEASURES, *OTHER_MEASURES):
        out[name] = percentiles([v for r in runs if (v := _number(r.get(name))) is not None])
    out["lost_acknowledged_total"] = sum(int(r.get("lost_acknowledged") or 0) for r in runs)
    out["runs_with_loss"] = sum(1 for r in runs if r.get("lost_acknowledged"))
    out["followed_stall_open_runs"] = sum(1 for r in runs if r.get("followed_stall_open"))
    out["never_available_again_runs"] = sum(1 for r in runs if r.get("never_available_again"))
    found: dict[str, int] = {}
    for r in runs:
        for name in r.get("anomalies") or {}:
            found[name] = found.get(name, 0) + 1
    out["anomalies"] = dict(sorted(found.items()))
    pooled = [r[BREAKDOWN] for r in runs if isinstance(r.get(BREAKDOWN), dict)]
    if pooled:
        out[BREAKDOWN] = {c: percentiles([v for b in pooled for v in b.get(c) or []]) for c in BREAKDOWN_COMPONENTS}
    return out


def new_cell(cell: Cell, runs_wanted: int) -> dict[str, Any]:
    mode = MODE_BY_NAME[cell.mode]
    return {
        "format": FORMAT,
        "id": cell.id,
        "key": cell.key(),
        "scenario": cell.scenario,
        "overrides": list(cell.overrides()),
        "kafka_version": mode.kafka_version,
        "cluster_mode": mode.cluster_mode,
        "runs_wanted": runs_wanted,
        "runs": [],
        "errors": [],
        "summary": summarise([]),
        "updated_at": _utc(),
    }


class Store:
    """The cells of an atlas directory."""

    def __init__(self, out: Path) -> None:
        self.out = Path(out)
        self.cells_dir = self.out / "cells"

    def path(self, cell: Cell) -> Path:
        return self.cells_dir / f"{cell.id}.json"

    def runs_root(self, cell: Cell) -> Path:
        return self.out / "runs" / cell.id

    def load(self, cell: Cell) -> dict[str, Any] | None:
        return _read(self.path(cell))

    def runs(self, cell: Cell) -> list[dict[str, Any]]:
        data = self.load(cell)
        return list(data["runs"]) if data else []

    def errors(self, cell: Cell) -> list[dict[str, Any]]:
        data = self.load(cell)
        return list(data["errors"]) if data else []

    def check(self, cells: list[Cell]) -> None:
        """Refuse to add runs to a stored cell that was run with another scenario or other --set changes."""
        for cell in cells:
            data = self.load(cell)
            if data is None:
                continue
            if data.get("scenario") != cell.scenario or list(data.get("overrides") or []) != list(cell.overrides()):
                raise UserError(
                    f"{self.path(cell)} was run as {data.get('scenario')} with "
                    f"{' '.join(data.get('overrides') or []) or 'no --set'}, and this failsafe runs the cell as "
                    f"{cell.scenario} with {' '.join(cell.overrides()) or 'no --set'}: its runs would not be of one "
                    "cell; pass another --out"
                )

    def add_run(self, cell: Cell, runs_wanted: int, run_dir: Path, results: dict, wall_s: float) -> dict[str, Any]:
        data = self.load(cell) or new_cell(cell, runs_wanted)
        data["runs"].append(run_record(self.relative(run_dir), results, wall_s))
        return self._save(cell, data, runs_wanted)

    def add_error(self, cell: Cell, runs_wanted: int, error: str, run_dir: Path | None = None) -> dict[str, Any]:
        data = self.load(cell) or new_cell(cell, runs_wanted)
        data["errors"].append(
            {"error": error, "run_dir": self.relative(run_dir) if run_dir is not None else None, "at": _utc()}
        )
        return self._save(cell, data, runs_wanted)

    def relative(self, path: Path) -> str:
        try:
            return Path(os.path.relpath(Path(path).resolve(), self.out.resolve())).as_posix()
        except ValueError:
            return str(path)

    def _save(self, cell: Cell, data: dict[str, Any], runs_wanted: int) -> dict[str, Any]:
        data["runs_wanted"] = max(int(data.get("runs_wanted") or 0), runs_wanted)
        data["summary"] = summarise(data["runs"])
        data["updated_at"] = _utc()
        _write(self.path(cell), data)
        return data

    def all_cells(self) -> list[dict[str, Any]]:
        """Every stored cell, in the grid's order (a file this failsafe's grid has no cell for comes last)."""
        from failsafe.atlas.grid import FULL_GRID

        order = {c.id: i for i, c in enumerate(FULL_GRID)}
        found = [d for p in sorted(self.cells_dir.glob("*.json")) if (d := _read(p)) is not None]
        return sorted(found, key=lambda d: (order.get(d.get("id"), len(order)), str(d.get("id"))))

    def add_invocation(self, entry: dict[str, Any]) -> None:
        path = self.out / "invocations.json"
        entries = _read_list(path)
        entries.append({"started_at": _utc(), **entry})
        _write(path, entries)

    def write_bundle(self) -> Path:
        """atlas.json: every stored cell and every invocation."""
        path = self.out / "atlas.json"
        _write(
            path,
            {
                "format": FORMAT,
                "what": "failsafe atlas: N runs per cell of faults x profiles x clients x modes (docs/atlas.md)",
                "invocations": _read_list(self.out / "invocations.json"),
                "cells": self.all_cells(),
            },
        )
        return path


def _read(path: Path) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise UserError(f"{path} is unreadable ({e}): delete it to run that cell again, or pass another --out") from e
    if not isinstance(data, dict) or not isinstance(data.get("runs"), list) or not isinstance(data.get("errors"), list):
        raise UserError(
            f"{path} is not an atlas cell (no runs and errors lists): delete it to run that cell again, or "
            f"pass another --out"
        )
    return data


def _read_list(path: Path) -> list[Any]:
    if not path.is_file():
        return []
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return []
    return data if isinstance(data, list) else []


def _write(path: Path, data: Any) -> None:
    """Replace ``path`` whole (a temporary file renamed over it): an atlas killed mid-write keeps the cell as it was."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(json.dumps(data, indent=2, default=str) + "\n")
    os.replace(temporary, path)
