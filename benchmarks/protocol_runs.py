"""The protocol-fault scenarios, run N times each on one cluster with protocol proxies: verdicts and what they showed.

    .venv/bin/python benchmarks/protocol_runs.py --dir /tmp/bench-proxy --runs 3 \
        --out docs/benchmarks/protocol-runs.json

Cells: produce-response-lost; txn-commit-held on transaction.version 2 and on 1. For each run: the exit code and
verdict, the requests the faults took (their fault-stop details), duplicates by writer, and the transactions checker's
counts. Starts a cluster at --dir (failsafe run does, with the proxies the faults need) unless one fits there; leaves
it running (failsafe down --dir DIR).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.common import failsafe_run, write_summary  # noqa: E402

CELLS = {
    "produce-response-lost": ("produce-response-lost",),
    "txn-commit-held tv2": ("txn-commit-held",),
    "txn-commit-held tv1": ("txn-commit-held", "--set", "transactions.version=1"),
}
RUN_TIMEOUT_S = 600
TXN_COUNTS = ("txns", "committed", "aborted", "unknown", "aborted-read", "lost-write", "torn-transaction", "duplicate")


def one_run(root: Path, args: tuple[str, ...]) -> dict:
    code, results, history, error = failsafe_run(root, args, RUN_TIMEOUT_S)
    if results is None:
        return {"exit": code, "error": error}
    stops = [op for op in history if op["f"] == "fault-stop" and op["ok"] and op.get("details")]
    taken: dict[str, int] = {}
    for stop in stops:
        for counts in stop["details"]["took"].values():
            for row in counts["by_api_client"]:
                key = f"{stop['fault']} {row['api']} {row['client_id']}"
                taken[key] = taken.get(key, 0) + row["requests"]
    checkers = results["checkers"]
    delivery = checkers.get("delivery", {})
    transactions = checkers.get("transactions")
    return {
        "exit": code,
        "verdict": results.get("verdict"),
        "taken": taken,
        "duplicates": delivery.get("counts", {}).get("duplicate"),
        "duplicate_writers": sorted(
            {w for name, writers in delivery.get("processes", {}).items() if "duplicate" in name for w in writers}
        ),
        "lost": delivery.get("counts", {}).get("lost"),
        "transactions": None
        if transactions is None
        else {k: transactions["counts"].get(k) for k in TXN_COUNTS if k in transactions["counts"]},
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=Path("/tmp/bench-proxy"))
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    cells = {}
    for name, run_args in CELLS.items():
        cells[name] = {"args": list(run_args), "runs": []}
        for i in range(args.runs):
            cells[name]["runs"].append(one_run(args.dir, run_args))
            print(f"{name} run {i}: {cells[name]['runs'][-1]}", file=sys.stderr)
    write_summary(
        {
            "what": "the protocol-fault scenarios on one cluster with protocol proxies, N runs each",
            "command": f".venv/bin/python benchmarks/protocol_runs.py --dir {args.dir} --runs {args.runs}"
            + (f" --out {args.out}" if args.out else ""),
            "cells": cells,
        },
        args.out,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
