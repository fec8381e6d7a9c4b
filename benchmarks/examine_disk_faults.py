"""What the runs of a power-loss benchmark that lose nothing saw: leadership, unavailability, the brokers' own words.

    .venv/bin/python benchmarks/examine_disk_faults.py docs/benchmarks/power-loss-kept.json --out \
        docs/benchmarks/disk-faults-seen.json

Per scenario, from each run's results.json (its run directory must still exist: bench_power_loss.py --keep-runs) and the
row's broker log counts: the first fault's new leader time and longest unavailability over its affected partitions,
the writes acknowledged during it, the send errors the producer saw, and in how many runs a broker stopped itself
because its only log directory failed ("Shutdown broker because all log dirs ... have failed").
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.common import write_summary  # noqa: E402


def _median(values: list[float]) -> float | None:
    return round(statistics.median(values), 1) if values else None


def seen(row: dict) -> dict:
    results = json.loads((Path(row["run_dir"]) / "results.json").read_text())
    fault = results["checkers"]["availability"]["faults"][0]
    partitions = fault["affected_partitions"]
    measured = results["measurements"]["faults"][0]
    return {
        "run": row["run"],
        "exit_code": row["exit_code"],
        "fault": fault["fault"],
        "nodes": fault["nodes"],
        "max_unavailable_ms": fault.get("max_unavailable_ms"),
        "new_leader_ms": [p["new_leader_ms"] for p in partitions if p.get("new_leader_ms") is not None],
        "acknowledged_during": measured.get("acknowledged_during"),
        "send_errors": results["measurements"].get("send_errors", {}),
        "lost": row["counts"]["lost"] + row["counts"]["lost-after-read"],
        "broker_log_lines": row.get("broker_log_lines", {}),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("bench", type=Path)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    rows = [r for r in json.loads(args.bench.read_text())["rows"] if r.get("run_dir")]
    runs = [{"scenario": r["scenario"], **seen(r)} for r in rows]
    cells = []
    for scenario in dict.fromkeys(r["scenario"] for r in runs):
        mine = [r for r in runs if r["scenario"] == scenario]
        errors: dict[str, int] = {}
        for r in mine:
            for name, n in r["send_errors"].items():
                errors[name] = errors.get(name, 0) + n
        cells.append(
            {
                "scenario": scenario,
                "runs": len(mine),
                "lost_total": sum(r["lost"] for r in mine),
                "new_leader_ms_median": _median([min(r["new_leader_ms"]) for r in mine if r["new_leader_ms"]]),
                "runs_with_a_new_leader": sum(1 for r in mine if r["new_leader_ms"]),
                "max_unavailable_ms_median": _median(
                    [r["max_unavailable_ms"] for r in mine if r["max_unavailable_ms"] is not None]
                ),
                "acknowledged_during_median": _median(
                    [r["acknowledged_during"] for r in mine if r["acknowledged_during"] is not None]
                ),
                "send_errors": errors,
                "runs_with_log_dir_shutdown": sum(
                    1 for r in mine if r["broker_log_lines"].get("log-dirs-failed-shutdown")
                ),
                "runs_with_no_space": sum(1 for r in mine if r["broker_log_lines"].get("no-space")),
                "runs_with_io_error": sum(1 for r in mine if r["broker_log_lines"].get("io-error")),
            }
        )
    write_summary(
        {
            "what": "what the power-loss benchmark's scenarios that lose nothing saw, per scenario",
            "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
            "source": str(args.bench),
            "cells": cells,
            "runs": runs,
        },
        args.out,
    )


if __name__ == "__main__":
    main()
