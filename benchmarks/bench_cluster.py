"""Cluster numbers: time from `failsafe up` to ready, resident memory per node, and the time
from SIGKILL of a partition leader to a new leader in the metadata (Kafka's defaults).

    .venv/bin/python benchmarks/bench_cluster.py --runs 5 --out docs/benchmarks/cluster.json
    .venv/bin/python benchmarks/bench_cluster.py --versions 4.3.1,4.4.0 --runs 5 \
        --out docs/benchmarks/cluster-versions.json

Each run uses a fresh cluster directory on free ports and stops everything it started. With --versions, each round
runs one cluster of each release, one after the other (A, B, A, B, ...), and the file holds each release's numbers.
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

import psutil
from confluent_kafka.admin import AdminClient

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from failsafe.cluster.topology.lifecycle import Cluster  # noqa: E402
from failsafe.jvm.java import find_java  # noqa: E402
from failsafe.jvm.kafka import DEFAULT_KAFKA_VERSION  # noqa: E402
from failsafe.tools.admin import client_config  # noqa: E402
from failsafe.waiting import wait_until  # noqa: E402
from tests.helpers import cluster_ports  # noqa: E402

POLL_S = 0.05


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "failsafe.cli.main", *args], capture_output=True, text=True, check=True
    )


def partition0(admin: AdminClient, topic: str) -> tuple[int, list[int]]:
    p = admin.list_topics(topic=topic, timeout=5).topics[topic].partitions[0]
    return p.leader, sorted(p.isrs)


def one_run(root: Path, version: str = DEFAULT_KAFKA_VERSION) -> dict:
    ports = cluster_ports()
    t0 = time.monotonic()
    cli("up", "--dir", str(root), "--kafka-version", version, *ports)
    create_to_ready_s = time.monotonic() - t0
    cluster = Cluster.open(root)
    rss = {}
    for node in cluster.spec.nodes():
        rss[node.name] = psutil.Process(cluster.tracked(node).pid).memory_info().rss / 2**20
    cli("down", "--dir", str(root))
    t0 = time.monotonic()
    cli("up", "--dir", str(root))
    restart_to_ready_s = time.monotonic() - t0

    topic = "failover-bench"
    cli("topics", "create", topic, "--partitions", "6", "--replication-factor", "3", "--dir", str(root))
    admin = AdminClient(client_config(cluster.bootstrap_servers))
    wait_until(lambda: len(partition0(admin, topic)[1]) == 3, 30, "ISR never full")
    victim, _ = partition0(admin, topic)
    node = cluster.node(victim, "broker")
    killed_at = time.monotonic()
    cluster.signal_node(node, "kill", 15)
    # Keep asking surviving brokers: the metadata the clients see.
    survivors = ",".join(f"127.0.0.1:{n.port}" for n in cluster.spec.brokers_nodes() if n.node_id != victim)
    admin = AdminClient(client_config(survivors))
    new_leader_s = isr_shrunk_s = None
    while new_leader_s is None or isr_shrunk_s is None:
        leader, isr = partition0(admin, topic)
        now = time.monotonic() - killed_at
        if new_leader_s is None and leader not in (victim, -1):
            new_leader_s = now
        if isr_shrunk_s is None and victim not in isr:
            isr_shrunk_s = now
        if now > 120:
            raise RuntimeError("no failover within 120 s")
        time.sleep(POLL_S)  # the sampling period of the measurement, not a synchronisation
    cli("clean", "--dir", str(root))
    return {
        "create_to_ready_s": create_to_ready_s,
        "restart_to_ready_s": restart_to_ready_s,
        "rss_mib": rss,
        "kill_to_new_leader_s": new_leader_s,
        "kill_to_isr_shrunk_s": isr_shrunk_s,
    }


def summary(values: list[float]) -> dict:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def summarise(runs: list[dict]) -> dict:
    return {
        "create_to_ready_s": summary([r["create_to_ready_s"] for r in runs]),
        "restart_to_ready_s": summary([r["restart_to_ready_s"] for r in runs]),
        "broker_rss_mib": summary([v for r in runs for k, v in r["rss_mib"].items() if k != "server-1000"]),
        "controller_rss_mib": summary([r["rss_mib"]["server-1000"] for r in runs]),
        "kill_to_new_leader_s": summary([r["kill_to_new_leader_s"] for r in runs]),
    }


def compare_versions(versions: list[str], rounds: int, out: Path | None) -> None:
    """Each round: one cluster of each release, one after the other, so both meet the same machine."""
    runs: dict[str, list[dict]] = {v: [] for v in versions}
    for i in range(rounds):
        for version in versions:
            with tempfile.TemporaryDirectory(prefix="failsafe-bench-") as tmp:
                runs[version].append(one_run(Path(tmp) / "cluster", version))
            print(f"round {i + 1}/{rounds} {version}: {json.dumps(runs[version][-1])}", file=sys.stderr, flush=True)
    result = {
        "what": "failsafe up to ready (made, then restarted), memory, kill -9 to a new leader: releases alternated",
        "command": f".venv/bin/python benchmarks/bench_cluster.py --versions {','.join(versions)} --runs {rounds}",
        "machine": {"cpus": os.cpu_count(), "java": find_java().major},
        "order": [v for _ in range(rounds) for v in versions],
        "versions": {v: {"runs": runs[v], **summarise(runs[v])} for v in versions},
    }
    text = json.dumps(result, indent=2)
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text + "\n")
    print(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument(
        "--versions", default=None, help="A,B: each round runs one cluster of each, one after the other"
    )
    args = parser.parse_args()
    if args.versions:
        return compare_versions(args.versions.split(","), args.runs, args.out)
    runs = []
    for i in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="failsafe-bench-") as tmp:
            runs.append(one_run(Path(tmp) / "cluster"))
        print(f"run {i + 1}/{args.runs}: {json.dumps(runs[-1])}", file=sys.stderr, flush=True)
    brokers_rss = [v for r in runs for k, v in r["rss_mib"].items() if k != "server-1000"]
    result = {
        "machine": {
            "cpus": os.cpu_count(),
            "memory_gib": round(psutil.virtual_memory().total / 2**30, 1),
            "python": platform.python_version(),
            "java": find_java().major,
        },
        "kafka_version": DEFAULT_KAFKA_VERSION,
        "runs": runs,
        "create_to_ready_s": summary([r["create_to_ready_s"] for r in runs]),
        "restart_to_ready_s": summary([r["restart_to_ready_s"] for r in runs]),
        "broker_rss_mib": summary(brokers_rss),
        "controller_rss_mib": summary([r["rss_mib"]["server-1000"] for r in runs]),
        "kill_to_new_leader_s": summary([r["kill_to_new_leader_s"] for r in runs]),
        "kill_to_isr_shrunk_s": summary([r["kill_to_isr_shrunk_s"] for r in runs]),
    }
    text = json.dumps(result, indent=2)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
