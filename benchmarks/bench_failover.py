"""broker-failover under Kafka's defaults, repeated: the unavailability window and the time to a new leader.

    .venv/bin/python benchmarks/bench_failover.py --dir /tmp/failsafe-bench-cluster --runs 5 --out \
        docs/benchmarks/failover.json

Each run is `failsafe run broker-failover` (kill -9 the leader of my-failsafe-topic-0, acks=all,
200 sends/s, RF 3, min.insync.replicas 2) on the cluster at --dir (started for the benchmark when
none is there, and stopped after). Per run: the longest gap in acknowledgements of a partition the
killed broker led, and the median time to a new leader in the metadata. Runs that are not valid
are kept in the output and reported, never dropped.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.common import cluster_at, write_summary  # noqa: E402


def one_run(root: Path, runs: Path) -> dict:
    t0 = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "failsafe.cli.main", "run", "broker-failover", "--dir", str(root), "--runs", str(runs)],
        capture_output=True,
        text=True,
    )
    wall_s = time.monotonic() - t0
    run_dir = sorted((runs / "broker-failover").iterdir())[-1]
    results = json.loads((run_dir / "results.json").read_text())
    availability = results["checkers"]["availability"]
    fault = availability["faults"][0] if availability.get("faults") else {}
    return {
        "valid": results["valid"],
        "exit_code": proc.returncode,
        "wall_s": round(wall_s, 1),
        "killed_broker": fault.get("nodes"),
        "partitions_affected": len(fault.get("affected_partitions", [])),
        "max_unavailable_ms": availability.get("max_unavailable_ms"),
        "median_unavailable_ms": availability.get("median_unavailable_ms"),
        "median_new_leader_ms": availability.get("median_new_leader_ms"),
        "lost": results["checkers"]["delivery"]["counts"].get("lost"),
        "run_dir": str(run_dir),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", type=Path, required=True)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    rows = []
    with cluster_at(args.dir, hold=False):
        for _ in range(args.runs):
            rows.append(one_run(args.dir, args.dir / "bench-runs"))
            print(json.dumps(rows[-1]), flush=True)

    def median(key: str) -> float | None:
        values = [r[key] for r in rows if r[key] is not None]
        return statistics.median(values) if values else None

    summary = {
        "what": "failsafe run broker-failover, Kafka 4.3.1 defaults (broker.session.timeout.ms 9000), 3 brokers, 1 "
        "controller",
        "runs": rows,
        "valid_runs": sum(1 for r in rows if r["valid"] is True),
        "median_max_unavailable_ms": median("max_unavailable_ms"),
        "median_new_leader_ms": median("median_new_leader_ms"),
        "median_wall_s": median("wall_s"),
        "measured_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    write_summary(summary, args.out)


if __name__ == "__main__":
    main()
