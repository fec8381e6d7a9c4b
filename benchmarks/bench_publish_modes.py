"""The pipeline's two ways of publishing its totals, side by side through the same faults: exactly-once (Kafka
transactions with a marker of each batch) and at-least-once (Spark's Kafka sink).

    .venv/bin/python benchmarks/bench_publish_modes.py --dir /tmp/failsafe-bench-cluster --runs 3 \
        --out docs/benchmarks/pipeline-publish-modes.json

For each scenario (``--scenarios NAME[:RUNS],...``), --runs runs (or its own RUNS) in each mode, the modes
alternating (exactly-once first) on the same cluster; --out is written again after every run. From
each run: the verdict, the Parquet sink's verdict, and checkers.pipeline.published's counts (records read at
read_committed, copies of a batch's total, totals lost), what a read_uncommitted reader saw, and the cost: each
micro-batch's time (Spark's triggerExecution, batches that read something) and, with exactly-once, the time the
publishing job took per batch and per output partition (OUTPUT/_published.jsonl).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.common import command_line, failsafe_run  # noqa: E402
from failsafe.pipeline.job import PUBLISHING_FILE  # noqa: E402

SCENARIOS = (
    "pipeline-restart",
    "pipeline-executor-loss",
    "pipeline-txn-coordinator-kill",
    "pipeline-output-leader-isolated",
    "pipeline-broker-failover",
)
MODES = ("exactly-once", "at-least-once")
RUN_TIMEOUT_S = 600


def one_run(root: Path, keep: Path, scenario: str, mode: str, spark_port: int) -> dict:
    args = (scenario, "--set", f'pipeline.publish="{mode}"', "--set", f"pipeline.spark_port={spark_port}")
    code, results, _, error = failsafe_run(root, args, RUN_TIMEOUT_S, keep)
    if results is None:
        return {"scenario": scenario, "publish": mode, "exit": code, "error": error}
    run_dir = max((keep / scenario).iterdir(), key=lambda p: p.stat().st_mtime)
    published = results["checkers"].get("published") or {}
    progress = [json.loads(line) for line in (run_dir / "output" / "progress.jsonl").read_text().splitlines()]
    batches = [p["duration_ms"].get("triggerExecution") for p in progress if p.get("num_input_rows")]
    publishing = run_dir / "output" / "_published.jsonl"
    jobs = [json.loads(line) for line in publishing.read_text().splitlines()] if publishing.is_file() else []
    return {
        "scenario": scenario,
        "publish": mode,
        "exit": code,
        "verdict": results.get("verdict"),
        "sales_valid": (results["checkers"].get("sales") or {}).get("valid"),
        "published_valid": published.get("valid"),
        "counts": published.get("counts", {}),
        "uncommitted": {k: (published.get("uncommitted") or {}).get(k) for k in ("records", "duplicate")},
        "starts": results["pipeline"]["starts"],
        "batches": len(batches),
        "batch_ms_median": statistics.median(batches) if batches else None,
        "publish_job_ms": [j["elapsed_ms"] for j in jobs],
        "partition_ms": sorted(p["elapsed_ms"] for j in jobs for p in j["partitions"]),
        "partitions_already_published": sum(not p["published"] for j in jobs for p in j["partitions"]),
        "partition_attempts_over_one": sum(p["attempts"] > 1 for j in jobs for p in j["partitions"]),
        # Which producer each partition's task used: kept by its Python worker, opened, or reopened after a fence.
        "partition_writers": dict(Counter(p.get("writer", "opened") for j in jobs for p in j["partitions"])),
        **_timed_kill(run_dir),
        "run": run_dir.name,
    }


def _timed_kill(run_dir: Path) -> dict:
    """For a kill-driver with when = "publishing": the batch it landed in, and whether that batch published again after
    the restart (it did unless Spark had committed it before the kill)."""
    history = [json.loads(line) for line in (run_dir / "history.jsonl").read_text().splitlines()]
    said = [(op.get("details") or {}).get("publishing") for op in history if op.get("f") == "fault-start"]
    said = [s for s in said if s]
    if not said:
        return {}
    batch = said[0]["batch"]
    starts = (run_dir / "output" / PUBLISHING_FILE).read_text().splitlines()
    return {
        "killed_in_batch": batch,
        "killed_batch_ran_again": sum(json.loads(line)["batch_id"] == batch for line in starts) > 1,
    }


def summarise(rows: list[dict]) -> list[dict]:
    out = []
    for scenario in dict.fromkeys(r["scenario"] for r in rows):
        for mode in MODES:
            mine = [r for r in rows if r["scenario"] == scenario and r["publish"] == mode]
            if not mine:
                continue
            copies = [r.get("counts", {}).get("duplicate", 0) for r in mine]
            jobs = [ms for r in mine for ms in r.get("publish_job_ms", [])]
            out.append(
                {
                    "scenario": scenario,
                    "publish": mode,
                    "runs": len(mine),
                    "verdicts": {
                        v: sum(str(r.get("verdict")) == v for r in mine)
                        for v in sorted({str(r.get("verdict")) for r in mine})
                    },
                    "copies_per_run": copies,
                    "runs_with_copies": sum(c > 0 for c in copies),
                    "lost_purchases": sum(r.get("counts", {}).get("lost_purchases", 0) for r in mine),
                    "batch_ms_median": statistics.median(
                        [r["batch_ms_median"] for r in mine if r.get("batch_ms_median")] or [0]
                    ),
                    "publish_job_ms_median": statistics.median(jobs) if jobs else None,
                }
            )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", type=Path, required=True, help="a cluster directory (the first run starts one there)")
    parser.add_argument("--runs", type=int, default=3, help="runs per scenario and mode")
    parser.add_argument("--scenarios", default=",".join(SCENARIOS))
    parser.add_argument("--keep-runs", type=Path, default=Path("/tmp/failsafe-publish-modes"))
    parser.add_argument("--spark-port", type=int, default=17077, help="pipeline-executor-loss's Spark master port")
    parser.add_argument("--out", type=Path)
    parser.add_argument(
        "--examine",
        action="store_true",
        help="run nothing: add what a timed kill-driver hit to --out's rows, from their runs kept in --keep-runs",
    )
    args = parser.parse_args()
    if args.examine:
        data = json.loads(args.out.read_text())
        for row in data["rows"]:
            if row.get("run"):
                row.update(_timed_kill(args.keep_runs / row["scenario"] / row["run"]))
        args.out.write_text(json.dumps(data, indent=2) + "\n")
        return
    args.keep_runs.mkdir(parents=True, exist_ok=True)
    rows: list[dict] = []
    for item in args.scenarios.split(","):
        scenario, _, runs = item.partition(":")
        for _ in range(int(runs or args.runs)):
            for mode in MODES:
                rows.append(one_run(args.dir, args.keep_runs, scenario, mode, args.spark_port))
                print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
                write(args, rows)


def write(args: argparse.Namespace, rows: list[dict]) -> None:
    """The summary of the runs so far (the file is complete after the last)."""
    text = json.dumps(
        {
            "what": "the pipeline's totals published exactly once (transactions) and at least once (Spark's Kafka "
            "sink), alternately, through the same faults",
            "command": command_line(
                "bench_publish_modes.py",
                dir=args.dir,
                runs=args.runs,
                scenarios=None if args.scenarios == ",".join(SCENARIOS) else args.scenarios,
                out=args.out,
            ),
            "rows": rows,
            "summary": summarise(rows),
            "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
            "measured_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        },
        indent=2,
    )
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
