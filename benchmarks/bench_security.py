"""What security costs (docs/security.md): `failsafe up` time and Kafka's producer-perf-test throughput in each security
mode, and broker failover on a sasl-ssl cluster against a plaintext one, the two taking turns on the same machine.

    .venv/bin/python benchmarks/bench_security.py --dir /tmp/failsafe-bench-security --rounds 4 \
        --records 300000 --out docs/benchmarks/security.json

Modes, one after another, each on a cluster made for it in DIR/up-MODE (deleted after): the wall time of `failsafe up
--security MODE` (certificates, SCRAM users at format time, ACLs), then Kafka's producer-perf-test (acks=all, records
of 1 KiB, as fast as it can) on a topic of 6 partitions (replication factor 3, min.insync.replicas 2), as failsafe's
admin user with the mode's settings (`failsafe kafka` gives the tool the cluster's client properties).

Failover: `failsafe run broker-failover` on a plaintext cluster (DIR/fo-plaintext) and on a sasl-ssl one
(DIR/fo-sasl-ssl), alternately, the order swapped every round; each run starts its stopped cluster and stops it after.
Per partition the killed broker led: how long no write was acknowledged, and its parts (detection, election, and
propagation: from the new leader to the client's first acknowledged write, the client's reconnect with its TLS handshake
and SCRAM exchange). Runs that are not VALID are kept and counted, never dropped.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.common import command_line, failsafe_cli, failsafe_run, producer_perf_test, write_summary  # noqa: E402
from failsafe.cluster.security.modes import MODES  # noqa: E402

TOPIC = "perf"
RECORD_BYTES = 1024
FAILOVER_MODES = ("plaintext", "sasl-ssl")
PERF_LINE = re.compile(r"(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency")


def _cli(root: Path, *args: str, timeout_s: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "failsafe.cli.main", *args],
        env={**os.environ, "FAILSAFE_DIR": str(root)},
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )


def _need(problem: str | None) -> None:
    if problem:
        raise SystemExit(problem)


def one_mode(root: Path, mode: str, records: int) -> dict:
    """`failsafe up` and producer-perf-test in ``mode``, on a cluster of its own, deleted after."""
    began = time.monotonic()
    up = _cli(root, "up", "--dir", str(root), "--security", mode)
    up_s = time.monotonic() - began
    try:
        if up.returncode != 0:
            return {"mode": mode, "up_error": up.stderr.strip()[-300:]}
        _need(
            failsafe_cli(
                root,
                "kafka",
                "topics",
                "--create",
                "--topic",
                TOPIC,
                "--partitions",
                "6",
                "--replication-factor",
                "3",
                "--config",
                "min.insync.replicas=2",
            )
        )
        perf = _cli(root, *producer_perf_test(TOPIC, records, RECORD_BYTES))
        found = PERF_LINE.findall(perf.stdout)
        if perf.returncode != 0 or not found:
            return {"mode": mode, "up_s": round(up_s, 1), "perf_error": (perf.stderr or perf.stdout).strip()[-300:]}
        sent, per_s, mb_s, avg_ms = found[-1]
        return {
            "mode": mode,
            "up_s": round(up_s, 1),
            "records": int(sent),
            "records_per_s": float(per_s),
            "mb_per_s": float(mb_s),
            "avg_latency_ms": float(avg_ms),
        }
    finally:
        _cli(root, "down", "--dir", str(root))
        _cli(root, "clean", "--dir", str(root))


def one_failover(root: Path, scenario: str) -> dict:
    code, results, history, tail = failsafe_run(root, (scenario,))
    if results is None:
        return {"exit_code": code, "error": tail}
    availability = results["checkers"]["availability"]
    parts = results["measurements"].get("failover_breakdown", {}).get("partitions", [])
    return {
        "exit_code": code,
        "verdict": results["verdict"],
        "lost": results["checkers"]["delivery"]["counts"].get("lost"),
        "lost_allowed": results["checkers"]["delivery"]["counts"].get("lost-allowed"),
        "max_unavailable_ms": availability.get("max_unavailable_ms"),
        "unavailable_ms": [
            round(p["unavailable_ms"], 1)
            for f in availability.get("faults", [])
            for p in f.get("affected_partitions", [])
            if p.get("unavailable_ms") is not None
        ],
        "detection_s": [p["detection_s"] for p in parts if p.get("detection_s") is not None],
        "election_s": [p["election_s"] for p in parts if p.get("election_s") is not None],
        "propagation_s": [p["propagation_s"] for p in parts if p.get("propagation_s") is not None],
    }


def _p(values: list[float], q: float) -> float | None:
    values = sorted(values)
    return round(values[int(q * (len(values) - 1))], 3) if values else None


def failover_summary(runs: list[dict]) -> dict:
    pooled = {k: [v for r in runs for v in r.get(k, [])] for k in ("unavailable_ms", "propagation_s", "detection_s")}
    return {
        "runs": len(runs),
        "valid": sum(1 for r in runs if r.get("verdict") == "VALID"),
        "lost": sum(r.get("lost") or 0 for r in runs),
        "partitions": len(pooled["unavailable_ms"]),
        "unavailable_p50_ms": _p(pooled["unavailable_ms"], 0.5),
        "unavailable_p95_ms": _p(pooled["unavailable_ms"], 0.95),
        "propagation_p50_s": _p(pooled["propagation_s"], 0.5),
        "propagation_p95_s": _p(pooled["propagation_s"], 0.95),
        "detection_p50_s": _p(pooled["detection_s"], 0.5),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument(
        "--modes", default=",".join(MODES), help="the modes whose up and perf test to measure ('': none)"
    )
    parser.add_argument("--scenario", default="broker-failover", help="the failover scenario run secured and plaintext")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    modes = [m for m in args.modes.split(",") if m]
    per_mode = []
    for mode in modes:
        per_mode.append(one_mode(args.dir / f"up-{mode}", mode, args.records))
        print(per_mode[-1], flush=True)
    failovers: dict[str, list[dict]] = {m: [] for m in FAILOVER_MODES}
    if args.rounds:
        for mode in FAILOVER_MODES:
            root = args.dir / f"fo-{mode}"
            if not (root / "cluster.json").exists():
                _need(failsafe_cli(root, "up", "--dir", str(root), "--security", mode))
                _need(failsafe_cli(root, "down", "--dir", str(root)))
    for r in range(args.rounds):
        for mode in FAILOVER_MODES if r % 2 == 0 else tuple(reversed(FAILOVER_MODES)):
            failovers[mode].append({"round": r, **one_failover(args.dir / f"fo-{mode}", args.scenario)})
            print(mode, failovers[mode][-1].get("verdict"), failovers[mode][-1].get("max_unavailable_ms"), flush=True)
    plain = next((m for m in per_mode if m["mode"] == "plaintext" and "records_per_s" in m), None)
    for m in per_mode:
        if plain and "records_per_s" in m:
            m["throughput_vs_plaintext"] = round(m["records_per_s"] / plain["records_per_s"], 3)
    summary = {
        "what": f"failsafe up and Kafka's producer-perf-test in each security mode; {args.scenario} on plaintext and "
        "sasl-ssl clusters alternately; Kafka 4.3.1, 3 brokers, 1 controller, 2 cores",
        "scenario": args.scenario,
        "command": command_line(
            "bench_security.py",
            dir=args.dir,
            rounds=args.rounds,
            records=args.records,
            modes=repr(args.modes) if not args.modes else args.modes,
            scenario=args.scenario,
            out=args.out,
        ),
        "modes": per_mode,
        "failover": {m: {"summary": failover_summary(runs), "runs": runs} for m, runs in failovers.items()},
        "median_up_s": statistics.median([m["up_s"] for m in per_mode if "up_s" in m]) if per_mode else None,
        "measured_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    write_summary(summary, args.out)


if __name__ == "__main__":
    main()
