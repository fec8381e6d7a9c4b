"""The clock-fault scenarios, run N times each: verdicts and what each checker counted.

    .venv/bin/python benchmarks/clock_runs.py --dir /tmp/bench-clock --runs 3 --out docs/benchmarks/clock-runs.json

Cells: a broker clock an hour ahead of a topic's 10-minute retention, and a minute ahead (the controlled comparison);
a transaction coordinator's clock an hour ahead; a consumer group coordinator's and a share-partition leader's a minute
ahead. Each cell runs on a cluster of its own at --dir/CELL (failsafe run starts it, with the clocks and settings its
scenario needs, and stops it after each run). For each run: the exit code and verdict, the fault's offsets, and each
checker's verdict with the counts that were not zero.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.common import failsafe_run, write_summary  # noqa: E402

CELLS = {
    "retention, brokers +3600 s": ("retention-clock-jump",),
    "retention, brokers +60 s": ("retention-clock-jump", "--set", "faults[0].offset_s=60"),
    "transaction coordinator +3600 s": ("txn-coordinator-clock-jump",),
    "group coordinator +60 s": ("group-coordinator-clock-jump",),
    "share-partition leader +60 s": ("share-lock-clock-jump",),
}
RUN_TIMEOUT_S = 600


def one_run(root: Path, args: tuple[str, ...]) -> dict:
    code, results, history, error = failsafe_run(root, args, RUN_TIMEOUT_S)
    if results is None:
        return {"exit": code, "error": error}
    starts = [op for op in history if op["f"] == "fault-start" and op.get("family") == "clock"]
    return {
        "exit": code,
        "verdict": results.get("verdict"),
        "offsets_s": [op.get("details", {}).get("offsets_s") for op in starts],
        "checkers": {
            name: {
                "valid": checker.get("valid"),
                "counts": {k: v for k, v in checker.get("counts", {}).items() if v and not isinstance(v, dict)},
            }
            for name, checker in results["checkers"].items()
        },
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=Path("/tmp/bench-clock"))
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    cells = {}
    for i, (name, run_args) in enumerate(CELLS.items()):
        root = args.dir / f"cell-{i}"
        cells[name] = {"args": list(run_args), "runs": []}
        for n in range(args.runs):
            cells[name]["runs"].append(one_run(root, run_args))
            print(f"{name} run {n}: {json.dumps(cells[name]['runs'][-1])[:400]}", file=sys.stderr, flush=True)
        subprocess.run(
            [sys.executable, "-m", "failsafe.cli.main", "clean"],
            env={**os.environ, "FAILSAFE_DIR": str(root)},
            capture_output=True,
            check=False,
        )
    write_summary(
        {
            "what": "the clock-fault scenarios, N runs each, each cell on a cluster of its own",
            "command": f".venv/bin/python benchmarks/clock_runs.py --dir {args.dir} --runs {args.runs}"
            + (f" --out {args.out}" if args.out else ""),
            "cells": cells,
        },
        args.out,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
