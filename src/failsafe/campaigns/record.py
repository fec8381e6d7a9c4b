"""A campaign run as one record: its schedule, verdict, anomalies, faults as they happened, and where its time went.

Built from the run's results and history alone (checkers' output and frames), so a campaign's
statistics (stats.py) never re-read a run.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from failsafe.campaigns.schedule import Schedule
from failsafe.campaigns.stats import ERROR
from failsafe.checkers.common import Verdict
from failsafe.history.ops import Op, PhaseName
from failsafe.scenarios.store.repeat import anomalies

EXPLANATIONS_KEPT = 5


def lost_acknowledged(results: dict) -> int:
    """Acknowledged writes lost by writers that promised durability (the counts less what lossy writers may lose), and
    writes of committed transactions lost (the transactions checker's lost-write: a commit promises them all)."""
    checkers = results.get("checkers") or {}
    counts = (checkers.get("delivery") or {}).get("counts") or {}
    committed_lost = int(((checkers.get("transactions") or {}).get("counts") or {}).get("lost-write") or 0)
    return committed_lost + sum(
        int(counts.get(name) or 0) - int(counts.get(f"{name}-allowed") or 0) for name in ("lost", "lost-after-read")
    )


def violations(results: dict) -> list[str]:
    """CHECKER.VIOLATION that decided the verdict: the checkers' violations and the known anomalies that matched."""
    found = {
        f"{checker}.{v}"
        for checker, entry in (results.get("checkers") or {}).items()
        if isinstance(entry, dict)
        for v in entry.get("violations") or []
    }
    return sorted(found | {str(k.get("anomaly")) for k in results.get("known") or []})


def fault_windows(history: Any) -> list[dict[str, Any]]:
    """Each fault as it happened, seconds from the chaos phase's start; and each fault that could not start."""
    chaos = history.phases.filter(pl.col("phase") == str(PhaseName.CHAOS))["time_ns"]
    zero = int(chaos[0]) if chaos.len() else int(history.faults["start_ns"].min() or 0)

    def s(ns: int | None) -> float | None:
        return None if ns is None else round((ns - zero) / 1e9, 2)

    out: list[dict[str, Any]] = [
        {
            "fault": f["fault"],
            "started": f["start_error"] is None,
            "start_s": s(f["start_ns"]),
            "stop_s": s(f["stop_ns"]),
            "nodes": f["nodes"],
            "role": f["role"],
            **({"error": f["start_error"]} if f["start_error"] else {}),
        }
        for f in history.faults.select(
            "fault", "start_ns", "stop_ns", "nodes", "role", pl.col("error").alias("start_error")
        ).to_dicts()
    ]
    skipped = history.events.filter(pl.col("f") == str(Op.FAULT_NOT_STARTED))
    out += [
        {"fault": e["fault"], "started": False, "start_s": s(e["time_ns"]), "stop_s": None, "error": e["error"]}
        for e in skipped.select("fault", "time_ns", "error").to_dicts()
    ]
    return sorted(out, key=lambda f: f["start_s"] if f["start_s"] is not None else 0.0)


def unavailability(results: dict) -> list[dict[str, Any]]:
    """Per fault that started: the longest a partition it affected could not be written to, and the slowest new
    leader."""
    faults = ((results.get("checkers") or {}).get("availability") or {}).get("faults") or []
    out = []
    for f in faults:
        leaders = [
            p.get("new_leader_ms") for p in f.get("affected_partitions") or [] if p.get("new_leader_ms") is not None
        ]
        out.append(
            {
                "fault": f.get("fault"),
                "max_unavailable_ms": f.get("max_unavailable_ms"),
                "new_leader_ms": max(leaders, default=None),
            }
        )
    return out


def run_record(
    run: int,
    seed: int,
    name: str,
    schedule: Schedule,
    *,
    run_dir: str,
    results: dict | None,
    history: Any,
    wall_s: float,
    phase_seconds: dict[str, float],
    error: str | None = None,
) -> dict[str, Any]:
    """The record of one run (a run failsafe could not carry out has verdict ERROR and its error in one line)."""
    chaos_spent = float(phase_seconds.get(str(PhaseName.CHAOS), 0.0))
    record: dict[str, Any] = {
        "run": run,
        "seed": seed,
        "name": name,
        "dir": run_dir,
        "schedule": schedule.as_json(),
        "verdict": ERROR,
        "error": error,
        "anomalies": {},
        "violations": [],
        "known": [],
        "explanations": [],
        "lost_acknowledged": 0,
        "faults": [],
        "unavailability": [],
        "wall_s": round(wall_s, 3),
        "chaos_s": round(chaos_spent, 3),
        "overhead_s": round(wall_s - chaos_spent, 3),
        "phase_seconds": {k: round(v, 3) for k, v in phase_seconds.items()},
    }
    if history is not None:
        record["faults"] = fault_windows(history)
    if results is None:
        return record
    record.update(
        verdict=str(Verdict.of_run(results)),
        anomalies=anomalies(results),
        violations=violations(results),
        known=[
            {"anomaly": k.get("anomaly"), "count": k.get("count"), "reference": k.get("reference")}
            for k in results.get("known") or []
        ],
        explanations=[
            {"checker": e.get("checker"), "anomaly": e.get("anomaly"), "text": e.get("sentence")}
            for e in (results.get("explanations") or [])[:EXPLANATIONS_KEPT]
        ],
        lost_acknowledged=lost_acknowledged(results),
        unavailability=unavailability(results),
    )
    return record
