"""What the atlas's runs took against what `failsafe atlas --plan` estimates (atlas/grid.py): the overheads fitted to a
stored atlas.

    .venv/bin/python benchmarks/fit_atlas.py docs/benchmarks/atlas.json --out docs/benchmarks/atlas-fit.json

Per run, the overhead is its wall time less its scenario's warm-up, chaos and recover phases. Fitted: a librdkafka run's
overhead (the mean over every librdkafka run: the estimate is a sum), what Kafka's Java clients add (the mean of the
Java runs' overhead less that), and a group's cluster start and stop (an invocation's time less its runs' wall times,
per group, from the invocations whose every run is still stored; the median over them)."""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from failsafe.atlas import grid  # noqa: E402

# What atlas/grid.py held before the first atlas was stored: the guesses the fit replaced.
GUESSED = {"run_overhead_s": 35.0, "java_client_extra_s": 15.0, "cluster_start_stop_s": 25.0}


def _when(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ")


def _median(values: list[float]) -> float | None:
    return round(statistics.median(values), 1) if values else None


def fit(atlas: dict) -> dict:
    rows = []
    for cell_data in atlas["cells"]:
        cell = grid.Cell.from_key(cell_data["key"])
        phases = grid.phase_seconds(cell.scenario, cell.fault_sets(), cell.zookeeper)
        for run in cell_data["runs"]:
            rows.append(
                {
                    "cell": cell.id,
                    "client": cell.client,
                    "mode": cell.mode,
                    "profile": cell.profile,
                    "phases_s": phases,
                    "wall_s": run["wall_s"],
                    "overhead_s": round(run["wall_s"] - phases, 3),
                    "finished_at": run["finished_at"],
                }
            )
    rdkafka = [r["overhead_s"] for r in rows if r["client"] == "librdkafka"]
    java = [r["overhead_s"] for r in rows if r["client"] == "kafka-java"]
    # Means, not medians: the estimate is a sum over runs, and a sum of means is the sum's expectation.
    run_overhead = statistics.mean(rdkafka) if rdkafka else None
    java_extra = statistics.mean(java) - run_overhead if java and run_overhead is not None else None
    groups = {(r["mode"], r["profile"]) for r in rows}
    started = min(_when(i["started_at"]) for i in atlas["invocations"])
    ended = max(_when(r["finished_at"]) for r in rows)
    total_s = (ended - started).total_seconds()
    runs_s = sum(r["wall_s"] for r in rows)
    ordered = sorted(atlas["invocations"], key=lambda i: _when(i["started_at"]))
    invocations = []
    for i, inv in enumerate(ordered):
        start = _when(inv["started_at"])
        until = _when(ordered[i + 1]["started_at"]) if i + 1 < len(ordered) else None
        mine = [
            r for r in rows if _when(r["finished_at"]) >= start and (until is None or _when(r["finished_at"]) < until)
        ]
        if not mine:
            continue
        end = max(_when(r["finished_at"]) for r in mine)
        groups_of = {(r["mode"], r["profile"]) for r in mine}
        planned = len(inv["cells"]) * inv["runs"]
        entry = {
            "started_at": inv["started_at"],
            "command": inv["command"],
            "planned_runs": planned,
            "runs": len(mine),
            "cells": len({r["cell"] for r in mine}),
            "groups": len(groups_of),
            "total_s": round((end - start).total_seconds(), 1),
            "runs_wall_s": round(sum(r["wall_s"] for r in mine), 1),
        }
        # Only an invocation whose every run is still stored says what its clusters cost (a discarded run's time is
        # unknown).
        if len(mine) == planned:
            entry["cluster_start_stop_s"] = round((entry["total_s"] - entry["runs_wall_s"]) / len(groups_of), 1)
        invocations.append(entry)
    return {
        "invocations": invocations,
        "runs": len(rows),
        "groups": len(groups),
        "total_s": round(total_s, 1),
        "runs_wall_s": round(runs_s, 1),
        "budget_s": grid.BUDGET_S,
        "fitted": {
            "run_overhead_s": round(run_overhead, 1) if run_overhead is not None else None,
            "java_client_extra_s": round(java_extra, 1) if java_extra is not None else None,
            "cluster_start_stop_s": _median(
                [i["cluster_start_stop_s"] for i in invocations if "cluster_start_stop_s" in i]
            ),
        },
        "guessed": GUESSED,
        "in_grid_py": {
            "run_overhead_s": grid.RUN_OVERHEAD_S,
            "java_client_extra_s": grid.JAVA_CLIENT_EXTRA_S,
            "cluster_start_stop_s": grid.CLUSTER_START_STOP_S,
        },
        "overhead_s": {
            client: {
                "n": len(v),
                "mean": round(statistics.mean(v), 1),
                "median": round(statistics.median(v), 1),
                "min": round(min(v), 1),
                "max": round(max(v), 1),
            }
            for client, v in (("librdkafka", rdkafka), ("kafka-java", java))
            if v
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("atlas", type=Path)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    text = json.dumps(fit(json.loads(args.atlas.read_text())), indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
