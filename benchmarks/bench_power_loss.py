"""What a power cut loses, per scenario and flush setting: each power-loss scenario run again and again on one cluster.

    .venv/bin/python benchmarks/bench_power_loss.py --dir /tmp/power --runs 10 --out docs/benchmarks/power-loss.json \
        power-loss-all-brokers:default,flush1 power-loss-rack:default last-replica-standing:default
        last-replica-standing:elr0

Each job is SCENARIO:VARIANT,...: ``default`` runs the scenario as written (Kafka's default flush); ``flush1`` with
flush.messages=1 on its first topic (and its first expectation turned to "=="); ``elr0`` on a cluster formatted without
eligible leader replicas (eligible.leader.replicas.version=0); ``zookeeper`` in ZooKeeper mode (--mode zookeeper, Kafka
3.9.2). With --fresh every run gets a new cluster (one a run leaves broken: ZooKeeper that cannot start again). The
cluster a job's variants need is started once at DIR/SCENARIO-N (failsafe up --volatile-disks and what the scenario
asks, on free ports) and cleaned away after its runs; variants alternate run by run so a noisy neighbour hits both
alike. Each run gets a consumer group of its own: a power cut also rolls back __consumer_offsets, and with it the
setup's deletion of the previous run's group. Each row: the exit code and verdict, the delivery checker's counts, what
each node's disk layer lost (files, bytes, directory changes; the fault's details), the load, and the run directory
(kept under --keep-runs). """

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

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.common import write_summary  # noqa: E402
from failsafe.scenarios.engine.placement import needs_of  # noqa: E402
from failsafe.scenarios.registry import load_scenario  # noqa: E402
from tests.helpers import free_port_block  # noqa: E402

VARIANTS = {
    "default": (),
    "flush1": ("--set", 'topics[0].configs."flush.messages"="1"', "--set", 'expect[0].op="=="'),
    "elr0": ("--set", 'cluster.features."eligible.leader.replicas.version"="0"'),
    "zookeeper": (),
}
# Variants that run the scenario in another mode (failsafe run --mode), on a cluster of that mode.
MODES = {"zookeeper": "zookeeper"}
COUNTS = (
    "acknowledged",
    "lost",
    "lost-after-read",
    "lost-in-log-not-consumed",
    "duplicate",
    "inconsistent-offsets",
    "unknown",
)
RUN_TIMEOUT_S = 900
# What the brokers' own logs say during a run (counted in DIR/logs/server-*.log, before and after it).
BROKER_LINES = {
    "log-dirs-failed-shutdown": "Shutdown broker because all log dirs",
    "no-space": "No space left on device",
    "io-error": "Input/output error",
    "unclean-recovery": "Recovering unflushed segment",
}


def broker_lines(root: Path) -> dict[str, int]:
    counts = dict.fromkeys(BROKER_LINES, 0)
    for log in (root / "logs").glob("server-*.log"):
        text = log.read_text(errors="replace")
        for name, needle in BROKER_LINES.items():
            counts[name] += text.count(needle)
    return counts


def cli(*args: str, timeout_s: float = RUN_TIMEOUT_S) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "failsafe.cli.main", *args], capture_output=True, text=True, timeout=timeout_s
    )


def needs(scenario: str, variant: str):
    mode = MODES.get(variant)
    return needs_of([load_scenario(scenario, VARIANTS[variant][1::2], mode=mode)], mode)


def up(root: Path, scenario: str, variant: str) -> None:
    needs_ = needs(scenario, variant)
    args = [
        "up",
        "--dir",
        str(root),
        "--volatile-disks",
        "--brokers",
        str(needs_.brokers),
        "--base-port",
        str(free_port_block(needs_.brokers)),
    ]
    if variant in MODES:
        args += ["--mode", MODES[variant], "--zookeeper-port", str(free_port_block(1))]
    else:
        args += [
            "--controller-base-port",
            str(free_port_block(needs_.controllers)),
            "--controllers",
            str(needs_.controllers),
        ]
    if needs_.racks:
        args += ["--racks", str(needs_.racks)]
    for key, value in needs_.overrides.items():
        args += ["--override", f"{key}={value}"]
    for key, value in needs_.features.items():
        args += ["--feature", f"{key}={value}"]
    done = cli(*args)
    if done.returncode != 0:
        raise SystemExit(f"failsafe up for {scenario} failed: {done.stderr.strip()}")


def one_run(root: Path, runs: Path, scenario: str, variant: str, n: int) -> dict:
    group = ("--set", f'consumers[0].group="power-bench-{variant}-{n}-{int(time.time())}"')
    before = {p.name for p in (runs / scenario).glob("*")} if (runs / scenario).exists() else set()
    lines_before = broker_lines(root)
    mode = ("--mode", MODES[variant]) if variant in MODES else ()
    done = cli("run", scenario, "--dir", str(root), "--runs", str(runs), *mode, *group, *VARIANTS[variant])
    (run_dir,) = [p for p in (runs / scenario).glob("*") if p.name not in before] or [None]
    lines = {k: v - lines_before[k] for k, v in broker_lines(root).items()}
    row = {
        "scenario": scenario,
        "variant": variant,
        "run": n,
        "exit_code": done.returncode,
        "load_1m": round(os.getloadavg()[0], 2),
        "broker_log_lines": lines,
        # Exit 5 (failsafe could not carry the run out): its one line says why, e.g. a node that would not start again.
        **(
            {"failsafe_error": done.stderr.strip().splitlines()[-1][:400]}
            if done.returncode == 5 and done.stderr.strip()
            else {}
        ),
    }
    if run_dir is None or not (run_dir / "results.json").is_file():
        return {**row, "error": done.stderr.strip()[-400:]}
    results = json.loads((run_dir / "results.json").read_text())
    delivery = results["checkers"]["delivery"]
    starts = [
        json.loads(line) for line in (run_dir / "history.jsonl").read_text().splitlines() if '"fault-start"' in line
    ]
    lost_on_disk = {
        str(s["fault_id"]): s.get("details", {}).get("lost", {}) for s in starts if s.get("fault") == "power-loss"
    }
    return {
        **row,
        "valid": results["valid"],
        "run_dir": str(run_dir),
        "expectations": {e["name"]: e["valid"] for e in results["expectations"]},
        "counts": {k: delivery["counts"].get(k, 0) for k in COUNTS},
        "violations": delivery.get("violations", []),
        "missing": results["checkers"].get("semantics", {}).get("counts", {}).get("missing", 0),
        "lost_examples": [
            {k: e.get(k) for k in ("topic", "partition", "offset", "value")}
            for e in delivery["examples"].get("lost-after-read", [])
        ],
        "disk_lost": lost_on_disk,
    }


def summarize(rows: list[dict]) -> list[dict]:
    cells = []
    for key in sorted({(r["scenario"], r["variant"]) for r in rows}):
        mine = [r for r in rows if (r["scenario"], r["variant"]) == key and "counts" in r]
        lost = [r["counts"]["lost"] + r["counts"]["lost-after-read"] for r in mine]
        acked = [r["counts"]["acknowledged"] for r in mine]
        failed = sum(1 for r in rows if (r["scenario"], r["variant"]) == key and "counts" not in r)
        cells.append(
            {
                "scenario": key[0],
                "variant": key[1],
                "runs": len(mine),
                "runs_failed_to_carry_out": failed,
                "runs_losing_acknowledged": sum(1 for n in lost if n),
                "lost_min": min(lost, default=None),
                "lost_median": statistics.median(lost) if lost else None,
                "lost_max": max(lost, default=None),
                "lost_fraction_median": round(
                    statistics.median(n / a for n, a in zip(lost, acked, strict=True) if a), 4
                )
                if lost
                else None,
                "exit_codes": sorted({r["exit_code"] for r in mine}),
            }
        )
    return cells


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", type=Path, required=True, help="where each scenario's cluster is made (DIR/SCENARIO)")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("jobs", nargs="+", metavar="SCENARIO:VARIANT,...")
    parser.add_argument(
        "--fresh", action="store_true", help="a new cluster for every run (a scenario that leaves it broken)"
    )
    parser.add_argument(
        "--keep-runs",
        type=Path,
        default=None,
        help="keep run directories here (default: DIR/runs, deleted with the clusters)",
    )
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    groups: list[tuple[str, list[str]]] = []  # (scenario, variants) that share one cluster
    for job in args.jobs:
        scenario, _, names = job.partition(":")
        variants = (names or "default").split(",")
        unknown = [v for v in variants if v not in VARIANTS]
        if unknown:
            parser.error(f"{job}: unknown variant {unknown[0]}: one of {', '.join(VARIANTS)}")
        shapes = {repr(needs(scenario, v)) for v in variants}
        if len(shapes) > 1:
            parser.error(f"{job}: these variants need clusters of different shapes: give them as separate jobs")
        groups.append((scenario, variants))
    runs = args.keep_runs or args.dir / "runs"
    rows: list[dict] = []
    for i, (scenario, variants) in enumerate(groups):
        root = args.dir / f"{scenario}-{i}"
        for n in range(args.runs) if args.fresh else [None]:
            if root.exists():
                cli("clean", "--dir", str(root))
            up(root, scenario, variants[0])
            try:
                for m in [n] if args.fresh else range(args.runs):
                    for variant in variants:
                        rows.append(one_run(root, runs, scenario, variant, m))
                        print(
                            json.dumps(
                                {k: rows[-1].get(k) for k in ("scenario", "variant", "run", "exit_code", "counts")}
                            ),
                            file=sys.stderr,
                            flush=True,
                        )
            finally:
                cli("clean", "--dir", str(root))
    if not args.keep_runs:
        shutil.rmtree(runs, ignore_errors=True)
    summary = {
        "what": "power-loss scenarios run again and again on one cluster each (disk layers that forget unsynced "
        "writes), Kafka's default flush against flush.messages=1",
        "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "cells": summarize(rows),
        "rows": rows,
    }
    write_summary(summary, args.out)


if __name__ == "__main__":
    main()
