"""``failsafe run NAME --repeat N``: one scenario's runs as statistics.

How many runs showed each anomaly (a checker's violation, or any example it reported), the
verdicts, and the median and p95 of the measured times. Built from the runs' results.json only,
so it can be rebuilt from stored runs.
"""

from __future__ import annotations

import json
import math
import statistics
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from failsafe.checkers.common import Verdict

# The measured times worth a distribution: CHECKER.FIELD of results.json (null in a run: not counted).
TIMES = (
    "availability.max_unavailable_ms",
    "availability.median_unavailable_ms",
    "availability.median_new_leader_ms",
    "rebalance.max_pause_ms",
)


# Measured times of results.json's "measurements" (checkers/measure/faults.py).
MEASURED_TIMES = ("new_controller_ms",)


def spread(values: Sequence[float]) -> dict[str, float | int] | None:
    """n, median, p95 (nearest rank), min and max; None without values."""
    if not values:
        return None
    ordered = sorted(values)
    p95 = ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]
    return {"n": len(ordered), "median": statistics.median(ordered), "p95": p95, "min": ordered[0], "max": ordered[-1]}


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def anomalies(results: dict) -> dict[str, int]:
    """CHECKER.ANOMALY -> how many of it the run had, for every violation and every anomaly with examples."""
    found: dict[str, int] = {}
    for checker, entry in (results.get("checkers") or {}).items():
        if not isinstance(entry, dict):
            continue
        counts = entry.get("counts") or {}
        for name in [*(entry.get("violations") or []), *(entry.get("examples") or {})]:
            found[f"{checker}.{name}"] = int(
                counts.get(name) or len((entry.get("examples") or {}).get(name) or []) or 1
            )
    return found


def _times(results: dict) -> dict[str, float]:
    checkers = results.get("checkers") or {}
    times: dict[str, float] = {}
    for path in TIMES:
        checker, field = path.split(".", 1)
        value = _number((checkers.get(checker) or {}).get(field))
        if value is not None:
            times[path] = value
    measured = results.get("measurements") or {}
    for field in MEASURED_TIMES:
        value = _number(measured.get(field))
        if value is not None:
            times[f"measurements.{field}"] = value
    migration = measured.get("migration") or {}
    if _number(migration.get("wall_ms")) is not None:
        times["measurements.migration.wall_ms"] = float(migration["wall_ms"])
    dr = checkers.get("dr") or {}
    for field in ("rpo_seconds", "rto_first_read_s", "rto_caught_up_s"):
        value = _number(dr.get(field))
        if value is not None:
            times[f"dr.{field.removesuffix('_seconds').removesuffix('_s')}_ms"] = value * 1000
    for name in ("rpo-records", "consumed-twice"):
        value = _number((dr.get("counts") or {}).get(name))
        if value is not None:
            times[f"dr.{name} (records)"] = value
    stalls = (checkers.get("availability") or {}).get("stall_by_group")
    if isinstance(stalls, dict):
        for group, value in stalls.items():
            number = _number(value.get("max_stall_ms") if isinstance(value, dict) else value)
            if number is not None:
                times[f"availability.stall_by_group.{group}"] = number
    return times


def aggregate(scenario: str, runs: Sequence[tuple[str, dict]], overrides: Sequence[str] = ()) -> dict[str, Any]:
    """The statistics of ``runs`` (run directory, results) of one scenario."""
    verdicts = Counter(Verdict.of_run(results).value for _, results in runs)
    per_run = [(path, anomalies(results), _times(results)) for path, results in runs]
    by_anomaly: dict[str, dict[str, Any]] = {}
    for path, found, _ in per_run:
        for name, count in found.items():
            entry = by_anomaly.setdefault(name, {"runs": 0, "total": 0, "run_dirs": []})
            entry["runs"] += 1
            entry["total"] += count
            entry["run_dirs"].append(path)
    names = sorted({name for _, _, times in per_run for name in times})
    times = {name: spread([times[name] for _, _, times in per_run if name in times]) for name in names}
    return {
        "format": 1,
        "scenario": scenario,
        "overrides": list(overrides),
        "runs": len(runs),
        "run_dirs": [path for path, _ in runs],
        "verdicts": dict(verdicts),
        "verdict": Verdict.worst(Verdict(v) for v in verdicts).value,
        "anomalies": dict(sorted(by_anomaly.items())),
        "times": times,
    }


def write_aggregate(directory: Path, stats: dict[str, Any]) -> Path:
    """``repeat-<UTC time>.json`` beside the scenario's run directories; returns its path."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"repeat-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}.json"
    path.write_text(json.dumps(stats, indent=2, default=str) + "\n")
    return path
