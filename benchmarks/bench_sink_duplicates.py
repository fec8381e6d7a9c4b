"""What Spark's Kafka sink writes twice when the pipeline's driver dies: the catalog's pipeline-restart, --runs times.

    .venv/bin/python benchmarks/bench_sink_duplicates.py --dir /tmp/failsafe-bench-cluster --runs 10 \
        --out docs/benchmarks/pipeline-sink-duplicates.json

pipeline-restart kills the Spark driver (SIGKILL of its process group) 3 s into the chaos phase and starts it
again 5 s later from the same checkpoint. Both queries run in that one session: the sales totals through
failsafe's foreachBatch sink (exactly once: the sales checker compares them with the ledger) and the enriched
purchase stream through Spark's Kafka sink (at least once). From each run's results: the verdict, the sales
checker's verdict, and the enriched checker's counts (records in the topic, acknowledged purchases missing,
copies, copies within the batch the restarted query ran first) with that batch's source range.
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

SCENARIO = "pipeline-restart"
RUN_TIMEOUT_S = 600


def one_run(root: Path, runs: Path) -> dict:
    cmd = [sys.executable, "-m", "failsafe.cli.main", "run", SCENARIO, "--dir", str(root), "--runs", str(runs)]
    done = subprocess.run(cmd, capture_output=True, text=True, env=os.environ.copy(), timeout=RUN_TIMEOUT_S)
    made = sorted((runs / SCENARIO).iterdir(), key=lambda p: p.stat().st_mtime) if (runs / SCENARIO).is_dir() else []
    if not made or not (made[-1] / "results.json").is_file():
        raise SystemExit(
            f"{SCENARIO} was not carried out (exit {done.returncode}): "
            f"{(done.stderr or done.stdout).strip().splitlines()[-1:]}"
        )
    results = json.loads((made[-1] / "results.json").read_text())
    sink = results["checkers"].get("enriched") or {}
    replayed = sink.get("replayed") or []
    return {
        "exit": done.returncode,
        "verdict": results.get("verdict"),
        "sales_valid": (results["checkers"].get("sales") or {}).get("valid"),
        "enriched_valid": sink.get("valid"),
        "counts": sink.get("counts", {}),
        "replayed": replayed,
        "replayed_source_records": sum(
            int(end) - int(b["start"].get(p, 0)) for b in replayed for p, end in b["end"].items()
        ),
        "starts": results["pipeline"]["starts"],
        "run": made[-1].name,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", type=Path, required=True, help="a running cluster's directory (3 brokers at least)")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.runs):
            rows.append(one_run(args.dir, Path(tmp)))
            print(json.dumps(rows[-1]), flush=True)
    copies = [r["counts"].get("duplicate", 0) for r in rows]
    summary = {
        "runs": len(rows),
        "verdicts": {v: sum(r["verdict"] == v for r in rows) for v in sorted({str(r["verdict"]) for r in rows})},
        "runs_with_copies": sum(c > 0 for c in copies),
        "copies_total": sum(copies),
        "copies_median": statistics.median(copies),
        "copies_max": max(copies),
        "missing_total": sum(r["counts"].get("missing", 0) for r in rows),
        "copies_outside_replayed_batch": sum(
            r["counts"].get("duplicate", 0) - r["counts"].get("duplicate_in_replayed_batch", 0) for r in rows
        ),
    }
    write_summary(
        {
            "what": f"{SCENARIO}: the enriched stream through Spark's Kafka sink, and the sales totals, across a kill "
            f"-9 of the driver",
            "rows": rows,
            "summary": summary,
            "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
            "measured_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        },
        args.out,
    )


if __name__ == "__main__":
    main()
