"""The rebalance protocols side by side: per protocol, client and fault, what a group's partitions went through.

    .venv/bin/python benchmarks/bench_rebalance.py --dir /tmp/failsafe-bench-cluster --runs 5 \
        --out docs/benchmarks/rebalance-3.json
    .venv/bin/python benchmarks/bench_rebalance.py --dir /tmp/failsafe-bench-cluster --runs 5 --members 30 \
        --partitions 60 \
        --keys 240 --faults closed,killed --clients librdkafka --out docs/benchmarks/rebalance-30.json
    .venv/bin/python benchmarks/bench_rebalance.py --dir /tmp/failsafe-bench-cluster --runs 5 --members 10 \
        --partitions 900 \
        --keys 3600 --rate 1800 --faults joining --out docs/benchmarks/rebalance-900.json

Runs the catalog scenarios rebalance-member-{killed,closed,paused,joining}, rebalance-coordinator-killed and
rebalance-rolling-restart (kill -9, a polite close, a 16 s freeze past the 10 s session, a member joining, the group
coordinator's broker killed for 10 s, every member restarted in turn), --runs times per cell, with the group's protocol
set by --set: classic eager range, classic cooperative-sticky, KIP-848 with the uniform and the range remote assignor;
librdkafka, and Kafka's Java consumer (VerifiableConsumer: pause-consumer stops its JVM). From each run's results: the
rebalance checker's event of the fault (pause_ms: until every partition it took was owned again; each moved and kept
partition's processing gap, its longest stretch unread from before the fault until the group settled; the survivors'
partitions revoked; for a join, the partitions given to the joiner are the moved ones; EVENTS), the semantics checker's
records read again by another member across the rebalance, and the verdict. One cluster for every run (the scenarios'
[cluster] overrides). """

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.common import write_summary  # noqa: E402

FAULTS = {
    "killed": "rebalance-member-killed",
    "closed": "rebalance-member-closed",
    "paused": "rebalance-member-paused",
    "coordinator": "rebalance-coordinator-killed",
    "joining": "rebalance-member-joining",
    "rolling": "rebalance-rolling-restart",
}
# Which of a run's measured events a fault's row is of: the first leave (a fault's own), the join of the restarted
# member, or every leave and join of the rolling restart (its longest pause; moved, kept and revoked partitions summed;
# gaps pooled).
EVENTS = {"joining": "join", "rolling": "all"}
PROTOCOLS = {
    "classic-range": ['consumers[0].assignment_strategy="range"'],
    "classic-cooperative-sticky": ['consumers[0].assignment_strategy="cooperative-sticky"'],
    "consumer-uniform": ['consumers[0].group_protocol="consumer"', 'consumers[0].remote_assignor="uniform"'],
    "consumer-range": ['consumers[0].group_protocol="consumer"', 'consumers[0].remote_assignor="range"'],
}
CLIENTS = {"librdkafka": [], "kafka-java": ['consumers[0].driver="kafka-verifiable"']}
RUN_TIMEOUT_S = 600


def one_run(
    root: Path,
    runs: Path,
    fault: str,
    protocol: str,
    client: str,
    members: int,
    partitions: int,
    keys: int | None = None,
    rate: int | None = None,
) -> dict:
    sets = [
        *PROTOCOLS[protocol],
        *CLIENTS[client],
        f"consumers[0].count={members}",
        f"topics[0].partitions={partitions}",
    ]
    if keys is not None:
        sets.append(f"producers[0].keys={keys}")
    if rate is not None:
        sets.append(f"producers[0].rate_per_s={rate}")
    cmd = [
        sys.executable,
        "-m",
        "failsafe.cli.main",
        "run",
        FAULTS[fault],
        "--dir",
        str(root),
        "--runs",
        str(runs),
        *[a for s in sets for a in ("--set", s)],
    ]
    started = time.monotonic()
    where = runs / FAULTS[fault]
    before = set(where.iterdir()) if where.is_dir() else set()
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    new = sorted(set(where.iterdir()) - before) if where.is_dir() else []
    if done.returncode not in (0, 1, 3, 4) or len(new) != 1 or not (new[0] / "results.json").is_file():
        raise SystemExit(
            f"{FAULTS[fault]} {protocol} {client}: exit {done.returncode}: "
            f"{(done.stderr or done.stdout).strip()[-600:]}"
        )
    row = row_of(new[0], fault, protocol, client, members, partitions, round(time.monotonic() - started, 1))
    # The machine's load when the run ended: on 2 cores, ten JVMs or anything else running shows in the pauses.
    return {**row, "load_1m": round(os.getloadavg()[0], 1)}


def row_of(
    run_dir: Path, fault: str, protocol: str, client: str, members: int, partitions: int, wall_s: float | None
) -> dict:
    """What the table needs of one stored run (its results.json, as its last check wrote it)."""
    results = json.loads((run_dir / "results.json").read_text())
    rebalance = results["checkers"]["rebalance"]
    events = [e for e in rebalance.get("events", []) if e["source"] == "fault"]
    which = EVENTS.get(fault, "leave")
    if which != "all":
        events = [e for e in events if e.get("kind", "leave") == which][:1]
    moved = [m for e in events for m in e["moved_partitions"]]
    kept = [k for e in events for k in e["kept_partitions"]]
    pauses = [e["pause_ms"] for e in events]
    return {
        "fault": fault,
        "protocol": protocol,
        "client": client,
        "members": members,
        "partitions": partitions,
        "run_dir": str(run_dir),
        "verdict": results["verdict"],
        "wall_s": wall_s,
        "group_protocol": events[0]["protocol"] if events else None,
        "events": len(events),
        "pause_ms": None if not pauses or None in pauses else max(pauses),
        "moved": len(moved),
        "moved_gaps_ms": [m["gap_ms"] for m in moved if m["gap_ms"] is not None],
        "kept": len(kept),
        "kept_revoked": sum(k["revoked"] for k in kept),
        "kept_gaps_ms": [k["gap_ms"] for k in kept if k["gap_ms"] is not None],
        "reread_across_rebalance": results["checkers"]["semantics"]["counts"].get("redelivered-across-rebalance", 0),
        "lost": results["checkers"]["delivery"]["counts"]["lost"],
        "violations": {name: c["violations"] for name, c in results["checkers"].items() if c.get("violations")},
        **from_history(run_dir),
    }


def from_history(run_dir: Path) -> dict:
    """From the run's history: when each fault started, seconds into the chaos phase (a restart-consumer that waited for
    its group to settle starts later than its at_s), and how long the producer's writes took to be acknowledged (ms): a
    partition's processing gap cannot be shorter than the wait for its next record to exist."""
    chaos_ns, starts, invoked, latencies = None, [], {}, []
    with (run_dir / "history.jsonl").open("rb") as f:
        for line in f:
            if b'"phase"' in line or b'"fault-start"' in line or b'"send"' in line:
                op = json.loads(line)
                if op["f"] == "phase" and op.get("phase") == "chaos":
                    chaos_ns = op["time_ns"]
                elif op["f"] == "fault-start":
                    starts.append(op["time_ns"])
                elif op["f"] == "send" and op["type"] == "invoke":
                    invoked[(op["process"], op["id"])] = op["time_ns"]
                elif op["f"] == "send" and op["type"] == "ok" and (op["process"], op["id"]) in invoked:
                    latencies.append((op["time_ns"] - invoked.pop((op["process"], op["id"]))) / 1e6)
    return {
        "fault_starts_s": [] if chaos_ns is None else [round((t - chaos_ns) / 1e9, 2) for t in starts],
        "send_ack_ms": spread(latencies),
    }


def spread(values: list[float]) -> dict | None:
    """n, p50, p95 (nearest rank: the smallest value with at least that share of the values at or below it) and max, in
    ms."""
    if not values:
        return None
    ordered = sorted(values)

    def rank(q: float) -> float:
        return round(ordered[max(0, math.ceil(q * len(ordered)) - 1)], 1)

    return {"n": len(ordered), "p50": rank(0.50), "p95": rank(0.95), "max": round(ordered[-1], 1)}


def summarize(rows: list[dict]) -> list[dict]:
    cells: dict[tuple, list[dict]] = {}
    for r in rows:
        cells.setdefault((r["fault"], r["protocol"], r["client"], r["members"]), []).append(r)
    out = []
    for (fault, protocol, client, members), runs in cells.items():
        moved_gaps = [g for r in runs for g in r["moved_gaps_ms"]]
        kept_gaps = [g for r in runs for g in r["kept_gaps_ms"]]
        pauses = [r["pause_ms"] for r in runs if r["pause_ms"] is not None]
        verdicts: dict[str, int] = {}
        for r in runs:
            verdicts[r["verdict"]] = verdicts.get(r["verdict"], 0) + 1
        out.append(
            {
                "fault": fault,
                "protocol": protocol,
                "client": client,
                "members": members,
                "runs": len(runs),
                "verdicts": verdicts,
                "pause_ms": spread(pauses),
                "moved_gap_ms": spread(moved_gaps),
                "kept_gap_ms": spread(kept_gaps),
                "moved_per_run": sum(r["moved"] for r in runs) / len(runs),
                "survivor_partitions_revoked_per_run": sum(r["kept_revoked"] for r in runs) / len(runs),
                "survivor_partitions_per_run": sum(r["kept"] for r in runs) / len(runs),
                "reread_across_rebalance_per_run": sum(r["reread_across_rebalance"] for r in runs) / len(runs),
                "lost": sum(r["lost"] for r in runs),
            }
        )
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--dir", type=Path, required=True, help="cluster directory (started with the scenarios' overrides when absent)"
    )
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--members", type=int, default=3)
    ap.add_argument("--partitions", type=int, default=12)
    ap.add_argument(
        "--keys",
        type=int,
        help="the producer's distinct keys (the scenarios write 16: with more partitions than that, "
        "most get no record and have no processing gap; give several per partition)",
    )
    ap.add_argument(
        "--rate",
        type=int,
        help="the producer's records per second (the scenarios write 200: with hundreds of "
        "partitions each gets a record only every few seconds, and its gap is mostly the wait for one)",
    )
    ap.add_argument("--faults", default=",".join(FAULTS))
    ap.add_argument("--protocols", default=",".join(PROTOCOLS))
    ap.add_argument("--clients", default=",".join(CLIENTS))
    ap.add_argument("--out", type=Path)
    ap.add_argument(
        "--summarize",
        type=Path,
        metavar="JSON",
        help="summarize a stored file's rows again (into --out) and run nothing",
    )
    ap.add_argument(
        "--recheck",
        metavar="FAULTS",
        help="with --summarize: check the stored runs of these faults again first (failsafe check)",
    )
    ap.add_argument(
        "--reread",
        metavar="FAULTS",
        help="with --summarize: read the stored runs of these faults again from their "
        "run directories, as they were last checked",
    )
    ap.add_argument(
        "--replace-cells",
        type=Path,
        metavar="JSON",
        help="with --summarize: this file's cells replace the stored file's (or are added to them)",
    )
    args = ap.parse_args()
    if args.summarize:
        stored = json.loads(args.summarize.read_text())
        rows = stored["rows"]
        if args.replace_cells:
            # The cells of another file (a grid run again after a fix) replace this one's.
            newer = json.loads(args.replace_cells.read_text())
            cell = lambda r: (r["fault"], r["protocol"], r["client"], r["members"])  # noqa: E731
            again = {cell(r) for r in newer["rows"]}
            rows = [r for r in rows if cell(r) not in again] + newer["rows"]
            # Every merge is kept, oldest first: which cells came from which command.
            earlier = stored.get("replaced") or []
            stored["replaced"] = [
                *(earlier if isinstance(earlier, list) else [earlier]),
                {
                    "cells": sorted(" ".join(map(str, c)) for c in again),
                    "command": newer["command"],
                    **({"rechecked": newer["rechecked"]} if newer.get("rechecked") else {}),
                },
            ]
        if args.recheck:
            # The runs of these faults judged again by this failsafe's checkers (failsafe check rewrites each run's
            # results.json), then read again.
            again = args.recheck.split(",")
            for r in rows:
                if r["fault"] in again:
                    subprocess.run(
                        [sys.executable, "-m", "failsafe.cli.main", "check", r["run_dir"]],
                        capture_output=True,
                        timeout=RUN_TIMEOUT_S,
                    )
            stored["rechecked"] = sorted({*(stored.get("rechecked") or []), *again})  # every fault ever checked again
        if args.recheck or args.reread:
            again = (args.recheck or args.reread).split(",")
            rows = [
                {
                    **row_of(
                        Path(r["run_dir"]),
                        r["fault"],
                        r["protocol"],
                        r["client"],
                        r["members"],
                        r["partitions"],
                        r["wall_s"],
                    ),
                    **({"load_1m": r["load_1m"]} if "load_1m" in r else {}),
                }
                if r["fault"] in again
                else r
                for r in rows
            ]
        write_summary({**stored, "cells": summarize(rows), "rows": rows}, args.out)
        return 0
    rows = []
    with tempfile.TemporaryDirectory(prefix="failsafe-rebalance-") as tmp:
        runs = Path(os.environ.get("FAILSAFE_BENCH_RUNS", tmp))
        for fault in args.faults.split(","):
            for client in args.clients.split(","):
                for protocol in args.protocols.split(","):
                    for i in range(args.runs):
                        row = one_run(
                            args.dir, runs, fault, protocol, client, args.members, args.partitions, args.keys, args.rate
                        )
                        rows.append(row)
                        print(
                            f"{fault} {protocol} {client} {i + 1}/{args.runs}: {row['verdict']} pause "
                            f"{row['pause_ms']} ms, moved {row['moved']}, survivors revoked {row['kept_revoked']}, "
                            f"re-read {row['reread_across_rebalance']}",
                            flush=True,
                        )
    write_summary(
        {
            "benchmark": "rebalance",
            "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
            "command": " ".join(sys.argv),
            "members": args.members,
            "partitions": args.partitions,
            "keys": args.keys,
            "rate_per_s": args.rate,
            "cells": summarize(rows),
            "rows": rows,
        },
        args.out,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
