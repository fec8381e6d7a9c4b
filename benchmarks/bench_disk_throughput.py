"""What disk layers and flush.messages=1 cost a producer: Kafka's producer-perf-test on plain disks and on disk layers.

    .venv/bin/python benchmarks/bench_disk_throughput.py --dir /tmp/disk-bench --rounds 3 --records 100000 \
        --out docs/benchmarks/disk-throughput.json

Each round starts a 3-broker cluster on plain directories, then one on disk layers (failsafe up --volatile-disks), at
DIR/plain and DIR/layers in turn (never two at once), and on each runs producer-perf-test (acks=all, records of
--size bytes, as fast as it goes) against two fresh topics of 3 partitions, replication factor 3, min.insync.replicas 2:
one with Kafka's default flush, one with flush.messages=1, in alternating order round by round. Ratios, per round:
layers / plain (default flush): what the layer costs the lab's workloads; flush.messages=1 / default on the same
cluster: what fsyncing every append costs. The machine's load is recorded with each measurement.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.common import producer_perf_test, write_summary  # noqa: E402
from tests.helpers import free_port_block  # noqa: E402

FLUSH = {"default": [], "flush1": ["--config", "flush.messages=1"]}


def cli(root: Path, *args: str, timeout_s: float = 900) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "failsafe.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=timeout_s,
        env={**os.environ, "FAILSAFE_DIR": str(root)},
    )
    if done.returncode != 0:
        raise SystemExit(f"failsafe {' '.join(args[:2])} at {root} failed: {done.stderr.strip()[-600:]}")
    return done.stdout


def perf(root: Path, topic: str, flush: str, records: int, size: int) -> dict:
    cli(
        root,
        "kafka",
        "topics",
        "--create",
        "--topic",
        topic,
        "--partitions",
        "3",
        "--replication-factor",
        "3",
        "--config",
        "min.insync.replicas=2",
        *FLUSH[flush],
    )
    out = cli(root, *producer_perf_test(topic, records, size))
    last = [line for line in out.splitlines() if "records sent" in line][-1]
    return {
        "flush": flush,
        "records_per_s": float(re.search(r"([\d.]+) records/sec", last).group(1)),
        "mb_per_s": float(re.search(r"\(([\d.]+) MB/sec\)", last).group(1)),
        "avg_latency_ms": float(re.search(r"([\d.]+) ms avg latency", last).group(1)),
        "load_1m": round(os.getloadavg()[0], 2),
    }


def clean(root: Path) -> None:
    """Stop the cluster at ``root`` and delete it (its layers unmounted), if there is one."""
    if root.exists():
        subprocess.run([sys.executable, "-m", "failsafe.cli.main", "clean", "--dir", str(root)], capture_output=True)


def one_cluster(root: Path, layers: bool, round_no: int, records: int, size: int) -> list[dict]:
    clean(root)
    cli(
        root,
        "up",
        "--dir",
        str(root),
        "--base-port",
        str(free_port_block(3)),
        "--controller-base-port",
        str(free_port_block(1)),
        *(["--volatile-disks"] if layers else []),
    )
    try:
        order = ("default", "flush1") if round_no % 2 == 0 else ("flush1", "default")
        return [
            {
                **perf(root, f"disk-bench-{flush}-{round_no}", flush, records, size),
                "disks": "layers" if layers else "plain",
            }
            for flush in order
        ]
    finally:
        clean(root)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--size", type=int, default=512)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    rounds = []
    for n in range(args.rounds):
        rows = []
        for layers in (False, True) if n % 2 == 0 else (True, False):
            rows += one_cluster(args.dir / ("layers" if layers else "plain"), layers, n, args.records, args.size)
        rate = {(r["disks"], r["flush"]): r["records_per_s"] for r in rows}
        rounds.append(
            {
                "round": n,
                "runs": rows,
                "layers_over_plain": round(rate["layers", "default"] / rate["plain", "default"], 3),
                "layers_over_plain_flush1": round(rate["layers", "flush1"] / rate["plain", "flush1"], 3),
                "flush1_over_default_plain": round(rate["plain", "flush1"] / rate["plain", "default"], 3),
                "flush1_over_default_layers": round(rate["layers", "flush1"] / rate["layers", "default"], 3),
            }
        )
        print(rounds[-1], file=sys.stderr, flush=True)
    shutil.rmtree(args.dir, ignore_errors=True)
    keys = ("layers_over_plain", "layers_over_plain_flush1", "flush1_over_default_plain", "flush1_over_default_layers")
    summary = {
        "what": "producer-perf-test (acks=all) on a 3-broker cluster: plain disks against disk layers, Kafka's "
        "default flush against flush.messages=1",
        "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
        "records": args.records,
        "record_size": args.size,
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "medians": {k: statistics.median(r[k] for r in rounds) for k in keys},
        "rounds": rounds,
    }
    write_summary(summary, args.out)


if __name__ == "__main__":
    main()
