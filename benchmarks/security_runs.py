"""The scenarios of a secured cluster's own faults, run N times each: verdicts, and what each fault cost the clients.

    .venv/bin/python benchmarks/security_runs.py --dir /tmp/bench-security-runs --runs 3 \
        --out docs/benchmarks/security-runs.json

All on one cluster at --dir (`failsafe up --security sasl-ssl --controllers 3 --override
connections.max.reauth.ms=5000`, made first and stopped after, as tests/e2e/test_secured_cluster.py's): a broker's
certificate rotated under load and the broker restarted with it (certificate-rotation); every broker's client listener
serving an expired certificate while a consumer restarts (expired-certificate); failsafe's client user's SCRAM password
changed under load (scram-password-change); the client principal's WRITE ACL removed during a controller failover
(acl-removed-during-controller-failover). For each run: the exit code and verdict, what was acknowledged, lost and
failed; for the run's fault of family security, what it recorded (how long until a certificate was in force on every
listener, what a new client was told, how long until the broker's own was back), the first refused send after it and
the last, the first acknowledged send after its undo, the longest gap between two acknowledged sends while it was in
force, and when a consumer restarted meanwhile got its first assignment, counted from the undo.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.common import command_line, failsafe_cli, failsafe_run, write_summary  # noqa: E402

SCENARIOS = (
    "certificate-rotation",
    "expired-certificate",
    "scram-password-change",
    "acl-removed-during-controller-failover",
)
CLUSTER_FLAGS = ("--security", "sasl-ssl", "--controllers", "3", "--override", "connections.max.reauth.ms=5000")
RUN_TIMEOUT_S = 600


def _ms(ns: int | None, since_ns: int | None) -> float | None:
    return None if ns is None or since_ns is None else round((ns - since_ns) / 1e6, 1)


def fault_costs(history: list[dict]) -> dict:
    """What the run's security fault recorded, and what the clients saw while it was in force and after its undo."""
    start = next((op for op in history if op.get("f") == "fault-start" and op.get("family") == "security"), None)
    if start is None:
        return {}
    stop = next(
        (
            op
            for op in history
            if op.get("f") == "fault-stop" and op.get("fault_id") == start["fault_id"] and op.get("ok")
        ),
        None,
    )
    began = start.get("in_force_ns") or start["time_ns"]
    ended = stop["time_ns"] if stop else None
    acks = sorted(op["time_ns"] for op in history if op.get("f") == "send" and op["type"] == "ok")
    refused = sorted(
        op["time_ns"] for op in history if op.get("f") == "send" and op["type"] == "fail" and op["time_ns"] >= began
    )
    # A consumer started again has a process name with its incarnation (member-1.1).
    restarted = sorted(
        op["time_ns"] for op in history if op.get("f") == "assign" and "." in op["process"] and op["time_ns"] >= began
    )
    return {
        "fault": start["fault"],
        "details": start.get("details", {}),
        "stop_details": (stop or {}).get("details", {}),
        "in_force_s": round((ended - began) / 1e9, 2) if ended else None,
        "refused_sends": len(refused),
        "first_refused_ms": _ms(refused[0], began) if refused else None,
        "last_refused_ms": _ms(refused[-1], began) if refused else None,
        "first_ack_after_undo_ms": _ms(next((t for t in acks if ended and t >= ended), None), ended),
        "longest_partition_stall_ms": longest_stall_ms(history, began, ended),
        "restarted_member_assigned_after_undo_ms": _ms(restarted[0], ended) if restarted else None,
    }


def longest_stall_ms(history: list[dict], began: int, ended: int | None) -> float | None:
    """The longest time a partition went without an acknowledged write from the fault on, until its first
    acknowledged write after the undo (or the end of the history)."""
    by_partition: dict[tuple, list[int]] = {}
    for op in history:
        if op.get("f") == "send" and op["type"] == "ok" and op["time_ns"] >= began:
            by_partition.setdefault((op["topic"], op["partition"]), []).append(op["time_ns"])
    stalls = []
    for times in by_partition.values():
        times.sort()
        after = next((i for i, t in enumerate(times) if ended is not None and t >= ended), len(times) - 1)
        points = [began, *times[: after + 1]]
        stalls.append(max(b - a for a, b in zip(points, points[1:], strict=False)))
    return round(max(stalls) / 1e6, 1) if stalls else None


def one_run(root: Path, scenario: str) -> dict:
    code, results, history, error = failsafe_run(root, (scenario,), RUN_TIMEOUT_S)
    if results is None:
        return {"exit": code, "error": error}
    counts = results["checkers"]["delivery"]["counts"]
    return {
        "exit": code,
        "verdict": results.get("verdict"),
        "acknowledged": counts.get("acknowledged"),
        "lost": counts.get("lost"),
        "failed": counts.get("failed"),
        **fault_costs(history),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=Path("/tmp/bench-security-runs"))
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    problem = failsafe_cli(args.dir, "up", "--dir", str(args.dir), *CLUSTER_FLAGS)
    if problem:
        raise SystemExit(problem)
    cells: dict[str, list[dict]] = {s: [] for s in SCENARIOS}
    try:
        for n in range(args.runs):
            for scenario in SCENARIOS:
                cells[scenario].append(one_run(args.dir, scenario))
                print(f"{scenario} run {n}: {json.dumps(cells[scenario][-1])[:400]}", file=sys.stderr, flush=True)
    finally:
        failsafe_cli(args.dir, "down", "--dir", str(args.dir))
    write_summary(
        {
            "what": "the secured cluster's fault scenarios, N rounds of each on one sasl-ssl cluster (3 brokers, "
            "3 controllers, connections.max.reauth.ms=5000); Kafka 4.3.1, 2 cores",
            "command": command_line("security_runs.py", dir=args.dir, runs=args.runs, out=args.out),
            "scenarios": cells,
        },
        args.out,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
