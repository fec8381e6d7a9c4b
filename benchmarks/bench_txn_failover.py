"""How long a kill of a writer's transaction coordinator keeps it from committing, per client and transaction.version.

    .venv/bin/python benchmarks/bench_txn_failover.py --dir /tmp/bench-cluster --runs 5 --versions 2,1 \
        --clients librdkafka --out docs/benchmarks/transactions-failover.json

Runs the catalog scenario txn-coordinator-kill (kill -9 of the leader of writer-0's __transaction_state
partition, 2 s into the chaos phase) --runs times for each transaction.version and client, and takes
from each run's results the transactions checker's per-fault times for writer-0 (checkers/txn/measure.py):
until the first commit that completed after the kill, until the first commit of a transaction begun
after it, and the longest time without a commit. Each run's verdict and anomaly counts are kept too.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.common import write_summary  # noqa: E402

SCENARIO = "txn-coordinator-kill"
WRITER = "writer-0"
TIMES = ("first_commit_ms", "first_new_commit_ms", "longest_gap_ms")
RUN_TIMEOUT_S = 600


def one_run(root: Path, runs: Path, version: int, client: str) -> dict:
    sets = [f"transactions.version={version}"]
    if client != "librdkafka":
        sets += [f"writers[*].driver={client}", f"processors[*].driver={client}"]
    cmd = [
        sys.executable,
        "-m",
        "failsafe.cli.main",
        "run",
        SCENARIO,
        "--dir",
        str(root),
        "--runs",
        str(runs),
        *[a for s in sets for a in ("--set", s)],
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, env=os.environ.copy(), timeout=RUN_TIMEOUT_S)
    made = sorted((runs / SCENARIO).iterdir(), key=lambda p: p.stat().st_mtime) if (runs / SCENARIO).is_dir() else []
    if not made or not (made[-1] / "results.json").is_file():
        raise SystemExit(
            f"{SCENARIO} (transaction.version {version}, {client}) was not carried out (exit {done.returncode}): "
            f"{(done.stderr or done.stdout).strip().splitlines()[-1:]}"
        )
    run_dir = made[-1]
    results = json.loads((run_dir / "results.json").read_text())
    checker = results["checkers"]["transactions"]
    [kill] = [f for f in checker.get("faults", []) if f["fault"] == "kill"]
    level = next(
        (
            e["level"]
            for e in map(json.loads, (run_dir / "history.jsonl").read_text().splitlines())
            if e["f"] == "feature-level"
        ),
        None,
    )
    return {
        "exit": done.returncode,
        "verdict": results.get("verdict"),
        "transaction_version": level,
        "client": client,
        "coordinator": kill["role"],
        **kill["writers"].get(WRITER, {}),
        "counts": {k: v for k, v in checker["counts"].items() if v},
        "run": run_dir.name,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", type=Path, required=True, help="a running cluster's directory")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--versions", default="2,1")
    parser.add_argument("--clients", default="librdkafka")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for version in (int(v) for v in args.versions.split(",")):
            for client in args.clients.split(","):
                for _ in range(args.runs):
                    rows.append(one_run(args.dir, Path(tmp), version, client))
                    print(json.dumps(rows[-1]), flush=True)
    groups = {}
    for row in rows:
        groups.setdefault((row["client"], row["transaction_version"]), []).append(row)
    summary = [
        {
            "client": c,
            "transaction_version": v,
            "runs": len(g),
            "verdicts": {x: sum(r["verdict"] == x for r in g) for x in {r["verdict"] for r in g}},
            **{
                f"median_{t}": statistics.median([r[t] for r in g if r.get(t) is not None] or [float("nan")])
                for t in TIMES
            },
            **{f"max_{t}": max([r[t] for r in g if r.get(t) is not None], default=None) for t in TIMES},
        }
        for (c, v), g in sorted(groups.items())
    ]
    write_summary(
        {
            "what": f"{SCENARIO}: {WRITER}'s commits around a kill -9 of its transaction coordinator",
            "rows": rows,
            "summary": summary,
            "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
            "measured_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        },
        args.out,
    )


if __name__ == "__main__":
    main()
