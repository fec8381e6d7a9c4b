"""The transaction gap, per client and transaction version: txn-commit-gap run N times in each cell, on one cluster.

    .venv/bin/python benchmarks/txn_gap.py --dir /tmp/bench-gap --runs 10 --out docs/benchmarks/txn-gap.json

Cells: librdkafka (confluent-kafka's worker) and Kafka's Java client (failsafe's driver on the cluster's release), each
on transaction.version 1 and 2. In every run the first EndTxn of writer-0 after the fault begins is held at its
broker's protocol proxy for 6 s while the client's own request timeout is 3 s (librdkafka socket.timeout.ms, Java
request.timeout.ms): the client resends it on a new connection, and the held one reaches the coordinator when the hold
ends (docs/protocol-faults.md, docs/findings.md). Recorded per run: the exit code and verdict, what the hold took, the
coordinator's answer to the late EndTxn, the writer's transactions by outcome, and the transactions checker's
anomalies. Starts a cluster with protocol proxies at
--dir (failsafe run does) unless one fits there; leaves it running (failsafe down --dir DIR).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.common import failsafe_run, write_summary  # noqa: E402
from failsafe.checkers.txn.transactions import VIOLATIONS  # noqa: E402

SCENARIO = "txn-commit-gap"
JAVA = (
    "--set",
    'writers[0].driver="kafka-java"',
    "--set",
    'writers[0].properties={ "request.timeout.ms" = "3000" }',
)
CELLS = {
    "librdkafka, transaction.version 1": ("--set", "transactions.version=1"),
    "librdkafka, transaction.version 2": ("--set", "transactions.version=2"),
    "Java client, transaction.version 1": (*JAVA, "--set", "transactions.version=1"),
    "Java client, transaction.version 2": (*JAVA, "--set", "transactions.version=2"),
}
# The transactions checker's violations, and what it could not verify.
ANOMALIES = (*VIOLATIONS, "lost-write-unverified", "visible-never-committed")
RUN_TIMEOUT_S = 600


def one_run(root: Path, args: tuple[str, ...], keep: Path | None = None) -> dict:
    code, results, history, error = failsafe_run(root, (SCENARIO, *args), RUN_TIMEOUT_S, keep)
    if results is None:
        return {"exit": code, "error": error}
    stops = [op for op in history if op["f"] == "fault-stop" and op["ok"] and op.get("details")]
    held = sum(stop["details"].get("requests", 0) for stop in stops)
    # What the coordinator answered each held EndTxn when it arrived late (the proxy read it: docs/protocol-faults.md).
    late = [a.get("error") for stop in stops for t in stop["details"]["took"].values() for a in t.get("answers", [])]
    outcomes: dict[str, int] = {}
    for op in history:
        if op["f"] == "txn" and op["type"] != "invoke":
            outcomes[op["type"]] = outcomes.get(op["type"], 0) + 1
    transactions = results["checkers"].get("transactions", {})
    counts = transactions.get("counts", {})
    return {
        "exit": code,
        "verdict": results.get("verdict"),
        "held": held,
        "late_answers": late,
        "txn_outcomes": outcomes,
        "anomalies": {k: counts[k] for k in ANOMALIES if counts.get(k)},
        "transactions_valid": transactions.get("valid"),
        "invalid_checkers": sorted(n for n, c in results["checkers"].items() if c.get("valid") is False),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=Path("/tmp/bench-gap"))
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--cells", help="comma-separated cell numbers (0-3) to run; default all")
    parser.add_argument("--keep-runs", type=Path, help="keep each run's directory under this one")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    chosen = [int(c) for c in args.cells.split(",")] if args.cells else range(len(CELLS))
    cells = {}
    for i, (name, run_args) in enumerate(CELLS.items()):
        if i not in chosen:
            continue
        cells[name] = {"args": [SCENARIO, *run_args], "runs": []}
        for n in range(args.runs):
            cells[name]["runs"].append(one_run(args.dir, run_args, args.keep_runs))
            print(f"{name} run {n}: {json.dumps(cells[name]['runs'][-1])}", file=sys.stderr, flush=True)
    write_summary(
        {
            "what": "txn-commit-gap, N runs per cell (client x transaction.version), on one cluster with protocol "
            "proxies",
            "command": f".venv/bin/python benchmarks/txn_gap.py --dir {args.dir} --runs {args.runs}"
            + (f" --cells {args.cells}" if args.cells else "")
            + (f" --out {args.out}" if args.out else ""),
            "cells": cells,
        },
        args.out,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
