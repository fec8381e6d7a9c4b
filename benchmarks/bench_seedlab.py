"""The seed lab's wall time as `make demo` runs it, and what each scenario measured.

    .venv/bin/python benchmarks/bench_seedlab.py --dir /tmp/failsafe-bench-lab --runs 1 --out \
        docs/benchmarks/seed-lab.json

Each run is `bash scripts/demo.sh DIR` (= `make demo` without its set-up: clean DIR, then
`failsafe run seed-lab --dir DIR`, which starts a cluster with the default 1 GiB heaps, runs the
ten scenarios and stops it), timed from start to exit. Per scenario the run's own files are kept
in short form: the verdict, the seconds of each engine phase (timings.json), every checker's
counts, the delivery checker's counts per producer, the availability summary and the scalar
measurements (results.json). Runs that are not VALID are kept and reported, never dropped.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
AVAILABILITY_KEYS = (
    "max_unavailable_ms",
    "median_unavailable_ms",
    "median_new_leader_ms",
    "stall_by_group",
    "leaderless_at_end",
)


def short(results: dict, timings: dict) -> dict:
    checkers = results.get("checkers", {})
    availability = checkers.get("availability", {})
    measurements = results.get("measurements", {})
    return {
        "verdict": results.get("verdict"),
        "timings_s": timings,
        "counts": {name: c.get("counts", {}) for name, c in checkers.items() if isinstance(c, dict)},
        "by_process": checkers.get("delivery", {}).get("by_process", {}),
        "availability": {k: availability[k] for k in AVAILABILITY_KEYS if k in availability},
        "measurements": {
            k: v
            for k, v in measurements.items()
            if isinstance(v, (int, float, str, bool))
            or v is None
            or (isinstance(v, dict) and all(not isinstance(x, (list, dict)) or k == "create_topic" for x in v.values()))
        },
        "faults": [
            {
                k: f.get(k)
                for k in ("fault", "acknowledged_during", "failed_during", "unknown_during", "new_controller_ms")
            }
            for f in measurements.get("faults", [])
        ],
    }


def one_run(root: Path) -> dict:
    shutil.rmtree(root / "runs", ignore_errors=True)
    started = time.monotonic()
    done = subprocess.run(["bash", "scripts/demo.sh", str(root)], cwd=ROOT, capture_output=True, text=True)
    wall_s = time.monotonic() - started
    scenarios = {}
    for scenario_dir in sorted(p for p in (root / "runs").iterdir() if p.is_dir()):
        run_dir = max(p for p in scenario_dir.iterdir() if (p / "results.json").is_file())
        results = json.loads((run_dir / "results.json").read_text())
        timings = json.loads((run_dir / "timings.json").read_text()) if (run_dir / "timings.json").is_file() else {}
        scenarios[scenario_dir.name] = {"run_dir": str(run_dir), **short(results, timings)}
    return {
        "wall_s": round(wall_s, 1),
        "exit_code": done.returncode,
        "stderr_tail": done.stderr.strip().splitlines()[-3:],
        "scenarios": scenarios,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, required=True, help="the lab's cluster directory (cleaned before each run)")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    runs = []
    for i in range(args.runs):
        runs.append(one_run(args.dir.resolve()))
        print(
            f"run {i + 1}/{args.runs}: {runs[-1]['wall_s']} s, exit {runs[-1]['exit_code']}",
            file=sys.stderr,
            flush=True,
        )
    summary = {
        "what": "bash scripts/demo.sh DIR (make demo without set-up): failsafe run seed-lab on a fresh cluster, "
        "default heaps",
        "runs": runs,
        "median_wall_s": statistics.median(r["wall_s"] for r in runs),
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "load_average_at_end": list(os.getloadavg()),
        },
        "measured_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    text = json.dumps(summary, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
