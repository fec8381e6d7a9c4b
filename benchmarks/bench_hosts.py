"""A cluster on hosts over SSH against the same cluster on this machine (docs/hosts.md): how long `up` takes, what SSH
adds to a fault's kill, and broker-failover's measurements on both.

    .venv/bin/python benchmarks/bench_hosts.py --dir /tmp/failsafe-hosts --rounds 2 --kills 3 --runs 5 --out \
        docs/benchmarks/hosts.json

The hosts are test hosts of this machine (network namespaces with an sshd each, failsafe hosts testbed): three, each a
broker, the first also the controller. One cluster at a time; the testbed is removed at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.bench_profiles import aggregate, examine  # noqa: E402
from benchmarks.common import write_summary  # noqa: E402
from failsafe.cluster.topology.lifecycle import Cluster  # noqa: E402
from failsafe.hosts import testbed  # noqa: E402

HEAP = "1G"


def cli(*args: str) -> tuple[int, float, str]:
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "failsafe.cli.main", *args], capture_output=True, text=True)
    return proc.returncode, time.monotonic() - t0, proc.stderr[-2000:]


def spread(values: list[float]) -> dict | None:
    if not values:
        return None
    values = sorted(values)
    return {
        "n": len(values),
        "median": round(statistics.median(values), 3),
        "min": round(values[0], 3),
        "max": round(values[-1], 3),
    }


def up_args(where: str, cluster_dir: Path, bed: testbed.Testbed) -> list[str]:
    args = ["up", "--dir", str(cluster_dir), "--heap", HEAP]
    return args + (["--inventory", str(bed.inventory_file)] if where == "hosts" else [])


def time_ups(where: str, cluster_dir: Path, bed: testbed.Testbed, rounds: int) -> list[dict]:
    out = []
    for i in range(rounds):
        code, seconds, err = cli(*up_args(where, cluster_dir, bed))
        if code != 0:
            raise SystemExit(f"bench_hosts: up on {where} failed: {err}")
        out.append({"round": i + 1, "up_s": round(seconds, 2)})
        code, _, err = cli("clean", "--dir", str(cluster_dir))
        if code != 0:
            raise SystemExit(f"bench_hosts: clean on {where} failed: {err}")
    return out


def time_kills(where: str, cluster_dir: Path, bed: testbed.Testbed, kills: int) -> list[dict]:
    """kill -9 of broker 1 through the cluster's node control, timed from the call to its return (the process gone),
    then the broker restarted and the cluster ready again; also how long reading a node's state takes."""
    code, _, err = cli(*up_args(where, cluster_dir, bed))
    if code != 0:
        raise SystemExit(f"bench_hosts: up on {where} failed: {err}")
    cluster = Cluster.open(cluster_dir)
    broker = cluster.node(1, "broker")
    out = []
    try:
        for i in range(kills):
            t0 = time.perf_counter()
            cluster.node_state(broker)
            state_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            cluster.stop_nodes([broker], signal.SIGKILL, 30)
            kill_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            cluster.restart([broker])
            out.append(
                {
                    "kill": i + 1,
                    "state_s": round(state_s, 4),
                    "kill_s": round(kill_s, 4),
                    "restart_ready_s": round(time.perf_counter() - t0, 2),
                }
            )
    finally:
        cli("clean", "--dir", str(cluster_dir))
    return out


def fault_lag_s(run_dir: Path) -> float | None:
    """How long after its fault-start op the kill was in force: the controller fenced the broker (a node event, on
    failsafe's clock) less the breakdown's detection time (fence less the fault in force); None without both."""
    ops = [json.loads(line) for line in (run_dir / "history.jsonl").read_text().splitlines() if line.strip()]
    starts = [o["time_ns"] for o in ops if o.get("f") == "fault-start"]
    if not starts:
        return None
    fenced = [
        o["time_ns"]
        for o in ops
        if o.get("f") == "node-event" and o.get("event") == "fenced" and o["time_ns"] > starts[0]
    ]
    rows = (
        (json.loads((run_dir / "results.json").read_text()).get("measurements") or {}).get("failover_breakdown") or {}
    ).get("partitions")
    detection = next((r["detection_s"] for r in rows or [] if r.get("detection_s") is not None), None)
    if not fenced or detection is None:
        return None
    return round((fenced[0] - starts[0]) / 1e9 - detection, 3)


def with_lags(job: dict) -> dict:
    lags = [fault_lag_s(Path(r["run_dir"])) for r in job["runs"]]
    return {**job, "fault_lag_s": [lag for lag in lags if lag is not None]}


def failover_runs(where: str, cluster_dir: Path, bed: testbed.Testbed, runs: int, out_runs: Path) -> dict:
    code, _, err = cli(*up_args(where, cluster_dir, bed))
    if code != 0:
        raise SystemExit(f"bench_hosts: up on {where} failed: {err}")
    load_1m = os.getloadavg()[0]
    t0 = time.monotonic()
    try:
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "failsafe.cli.main",
                "run",
                "broker-failover",
                "--dir",
                str(cluster_dir),
                "--runs",
                str(out_runs),
                "--repeat",
                str(runs),
            ],
            capture_output=True,
            text=True,
        )
    finally:
        cli("clean", "--dir", str(cluster_dir))
    run_dirs = (
        sorted(r for d in out_runs.iterdir() if d.is_dir() for r in d.iterdir() if (r / "results.json").is_file())
        if out_runs.is_dir()
        else []
    )
    return with_lags(
        aggregate(
            {
                "job": f"broker-failover:{where}",
                "exit_code": proc.returncode,
                "wall_s": round(time.monotonic() - t0, 1),
                "load_1m_at_start": round(load_1m, 2),
                "runs": [examine(r) for r in run_dirs],
                **({"stderr_tail": proc.stderr[-2000:]} if proc.returncode not in (0, 1) else {}),
            }
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=3, help="ups of each")
    parser.add_argument("--kills", type=int, default=5, help="kills of each")
    parser.add_argument("--runs", type=int, default=5, help="broker-failover runs of each")
    parser.add_argument("--out", type=Path)
    parser.add_argument(
        "--examine", type=Path, help="Recompute the fault lags of a stored output from its run directories, in place."
    )
    args = parser.parse_args()
    if args.examine:
        stored = json.loads(args.examine.read_text())
        for where in ("local", "hosts"):
            stored[where]["failover"] = with_lags(stored[where]["failover"])
        args.examine.write_text(json.dumps(stored, indent=2) + "\n")
        return
    reason = testbed.unavailable_reason()
    if reason:
        raise SystemExit(f"bench_hosts: {reason}")
    args.dir.mkdir(parents=True, exist_ok=True)
    bed = testbed.create(args.dir / "bed", 3)
    summary: dict = {
        "what": "3 brokers and a controller: on 3 test hosts over SSH (network namespaces, each with its own sshd) "
        "and on this machine",
        "heap": HEAP,
        "hosts": [{"name": h.name, "address": h.address} for h in bed.hosts],
    }
    try:
        for where in ("local", "hosts"):
            cluster_dir = args.dir / where
            ups = time_ups(where, cluster_dir, bed, args.rounds)
            kills = time_kills(where, cluster_dir, bed, args.kills)
            failover = failover_runs(where, cluster_dir, bed, args.runs, args.dir / "runs" / where)
            summary[where] = {
                "ups": ups,
                "up_s": spread([u["up_s"] for u in ups]),
                "kills": kills,
                "kill_s": spread([k["kill_s"] for k in kills]),
                "state_s": spread([k["state_s"] for k in kills]),
                "restart_ready_s": spread([k["restart_ready_s"] for k in kills]),
                "failover": failover,
            }
    finally:
        left = testbed.destroy(bed)
        if left:
            summary["left_on_hosts"] = left
    write_summary(summary, args.out)


if __name__ == "__main__":
    main()
