"""Storage faults, cell by cell: what Kafka does with each corrupted file class, and what a slow disk costs.

    .venv/bin/python benchmarks/storage_faults.py corruption --dir /tmp/bench-storage --runs 1 \
        --out docs/benchmarks/corruption.json
    .venv/bin/python benchmarks/storage_faults.py slow --dir /tmp/bench-storage --runs 3 \
        --out docs/benchmarks/slow-disk.json

Every cell runs on one cluster started here first (3 brokers, 3 controllers, every node on a disk layer:
failsafe up --volatile-disks) and stopped and deleted at the end; the scenarios fit it and reuse it.

corruption: a file class corrupted at rest on one node (corrupt-leader-segment with --set: the class, the aim, the
way), 8 bits flipped unless the cell says another way. For each run: the exit code and verdict, what was changed, what
Kafka said of it (the storage node-events of the fault's node, its first line), whether it refused to start (and was
repaired), its restart until the cluster was ready, and the acknowledged writes lost.

slow: a slow disk on the leader of slow-0 or on an in-sync follower (disk-slow-leader with --set), against the same
scenario with a 1 µs delay (the layer in the path, nothing slow), run alternately: the acknowledgement latency during
the fault and before it, the operations slowed, whether the leadership moved (a new leader of a partition the node
led), and the ISR shrinks.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.common import command_line, failsafe_cli, failsafe_run, write_summary  # noqa: E402

RUN_TIMEOUT_S = 600
LINES_KEPT = 4  # of the node's own lines about the file, as the fault's stop recorded them
LEADER = ("corrupt-leader-segment",)


def _corrupt(file: str, role: str, *extra: str) -> tuple[str, ...]:
    aim = ("--set", f'faults[0].role="{role}"')
    return (*LEADER, "--set", f'faults[0].file="{file}"', *aim, *extra)


# Segments rolled every 2 s, so that by the fault the oldest is below the recovery point (flushed at its roll).
OLDEST = ("--set", 'topics[0].configs."segment.ms"="2000"', "--set", 'faults[0].which="oldest"')
PARTITION_FILES = ("segment", "index", "timeindex", "leader-epoch-checkpoint", "partition.metadata")
ROOT_FILES = (
    "replication-offset-checkpoint",
    "recovery-point-offset-checkpoint",
    "log-start-offset-checkpoint",
    "meta.properties",
)
CORRUPTION = {
    **{f"{f} on a follower": _corrupt(f, "follower") for f in (*PARTITION_FILES, *ROOT_FILES)},
    **{f"{f} on the leader": _corrupt(f, "leader") for f in (*PARTITION_FILES, *ROOT_FILES)},
    **{
        f"{f} on the {role}, the oldest (rolled, flushed)": _corrupt(f, role, *OLDEST)
        for f in ("segment", "index")
        for role in ("follower", "leader")
    },
    **{
        f"segment on the leader, {way}": _corrupt("segment", "leader", "--set", f'faults[0].way="{way}"')
        for way in ("zero", "truncate", "torn", "stale")
    },
    "metadata-log on the active controller": ("corrupt-controller-metadata-log",),
    "quorum-state on the active controller": (
        "corrupt-controller-metadata-log",
        "--set",
        'faults[0].file="quorum-state"',
    ),
    "segment of every replica": ("corrupt-replicas-segment",),
}
SLOW = {
    "leader, writes +20 ms": ("disk-slow-leader",),
    "leader, control (+1 µs)": ("disk-slow-leader", "--set", "faults[0].delay_ms=0.001"),
    "follower, writes +20 ms": ("disk-slow-leader", "--set", 'faults[0].role="follower"'),
    "follower, control (+1 µs)": (
        "disk-slow-leader",
        "--set",
        'faults[0].role="follower"',
        "--set",
        "faults[0].delay_ms=0.001",
    ),
    "leader, syncs +200 ms": ("disk-slow-leader", "--set", 'faults[0].ops="sync"', "--set", "faults[0].delay_ms=200"),
    # Slower than what it must copy, for longer than replica.lag.time.max.ms (30 s): the follower falls behind.
    "follower, writes capped at 5 kB/s for 45 s": (
        "disk-slow-leader",
        "--set",
        'faults[0].role="follower"',
        "--set",
        "faults[0].delay_ms=0",
        "--set",
        "faults[0].rate_mb_s=0.005",
        "--set",
        "faults[0].duration_s=45",
        "--set",
        "phases.chaos_s=55",
    ),
}


def _fault_ops(history: list[dict], name: str) -> tuple[dict, dict]:
    start = next((op for op in history if op["f"] == "fault-start" and op.get("fault") == name), {})
    stop = next((op for op in history if op["f"] == "fault-stop" and op.get("fault") == name and op.get("ok")), {})
    return start, stop


def _out_of_isr(history: list[dict], start: dict, stop: dict) -> list[str]:
    """The partitions of which the fault's node was a replica and, in some topology sample from the fault's start until
    its stop, not in the ISR."""
    nodes = set(start.get("nodes") or [])
    until = stop.get("time_ns") or float("inf")
    out = set()
    for op in history:
        if op["f"] != "topology" or not start.get("time_ns", 0) <= op["time_ns"] <= until:
            continue
        for p in op.get("partitions") or []:
            if nodes & set(p.get("replicas") or []) - set(p.get("isr") or []):
                out.add(f"{p['topic']}-{p['partition']}")
    return sorted(out)


def _common(code: int, results: dict) -> dict:
    durability = results["checkers"].get("durability", {})
    return {
        "exit": code,
        "verdict": results.get("verdict"),
        "lost": durability.get("counts", {}).get("lost"),
        "invalid_checkers": sorted(n for n, c in results["checkers"].items() if c.get("valid") is False),
        # The base scenario's claims that did not hold here (its "kafka-detected-it" on a file Kafka did not check).
        "unmet_expectations": sorted(e["name"] for e in results.get("expectations", []) if e.get("valid") is False),
    }


def corruption_run(root: Path, args: tuple[str, ...], keep: Path | None = None) -> dict:
    code, results, history, error = failsafe_run(root, args, RUN_TIMEOUT_S, keep)
    if results is None:
        return {"exit": code, "error": error}
    start, stop = _fault_ops(history, "corrupt")
    storage = results["measurements"].get("storage", {})
    fault = next(iter(storage.get("faults", [])), {})
    details = stop.get("details") or {}
    changed = (start.get("details") or {}).get("changed") or details.get("changed") or {}
    return {
        **_common(code, results),
        "nodes": start.get("nodes"),
        "role": start.get("role"),
        "changed": {
            k: {f: v[f] for f in ("file", "size_before", "size_after", "bytes_changed")} for k, v in changed.items()
        },
        "detected": fault.get("detected"),
        "events": fault.get("events"),
        "first_line": fault.get("first_line"),
        "refused_to_start": details.get("refused_to_start"),
        "repaired": details.get("repaired"),
        "restart_s": details.get("restart_s"),
        "log_lines": {node: lines[:LINES_KEPT] for node, lines in (details.get("log_lines") or {}).items()},
    }


def slow_run(root: Path, args: tuple[str, ...], keep: Path | None = None) -> dict:
    code, results, history, error = failsafe_run(root, args, RUN_TIMEOUT_S, keep)
    if results is None:
        return {"exit": code, "error": error}
    start, stop = _fault_ops(history, "disk-slow")
    measured = results["measurements"]
    fault = next(iter(measured.get("faults", [])), {})
    availability = next(iter(results["checkers"].get("availability", {}).get("faults", [])), {})
    affected = availability.get("affected_partitions", [])
    return {
        **_common(code, results),
        "nodes": start.get("nodes"),
        "role": start.get("role"),
        "ack_latency_before_ms": measured.get("ack_latency_before_ms"),
        "ack_latency_during_ms": fault.get("ack_latency_ms"),
        "slowed": stop.get("details"),
        "new_leaders": sorted({p["new_leader"] for p in affected if p.get("new_leader") is not None}),
        "isr_shrank": _out_of_isr(history, start, stop),
        "max_unavailable_ms": availability.get("max_unavailable_ms"),
    }


def _cli(root: Path, *args: str) -> None:
    failed = failsafe_cli(root, *args)
    if failed and args[0] == "up":
        raise SystemExit(failed)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("matrix", choices=("corruption", "slow"))
    parser.add_argument("--dir", type=Path, default=Path("/tmp/bench-storage"))
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--cells", help="only the cells whose name contains this text")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--keep-runs", type=Path, help="keep every run's directory here")
    args = parser.parse_args()
    table, one = (CORRUPTION, corruption_run) if args.matrix == "corruption" else (SLOW, slow_run)
    chosen = {k: v for k, v in table.items() if not args.cells or args.cells in k}
    root = args.dir / args.matrix
    _cli(root, "up", "--brokers", "3", "--controllers", "3", "--volatile-disks")
    cells: dict = {name: {"args": list(run_args), "runs": []} for name, run_args in chosen.items()}
    try:
        for n in range(args.runs):  # alternately: every cell once, then again
            for name, run_args in chosen.items():
                cells[name]["runs"].append(one(root, run_args, args.keep_runs))
                print(f"{name} run {n}: {json.dumps(cells[name]['runs'][-1])[:300]}", file=sys.stderr, flush=True)
    finally:
        _cli(root, "down")
        _cli(root, "clean")
    cells_flag = f"'{args.cells}'" if args.cells else None
    flags = {"dir": args.dir, "runs": args.runs, "cells": cells_flag, "keep_runs": args.keep_runs, "out": args.out}
    write_summary(
        {
            "what": f"storage faults ({args.matrix}), N runs a cell, every cell alternately on one cluster of 3 "
            "brokers and 3 controllers on disk layers",
            "command": command_line("storage_faults.py", args.matrix, **flags),
            "cells": cells,
        },
        args.out,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
