"""Committed transactions per second of failsafe's transactional writer, against Kafka's producer-perf-test
--transactional-id.

    .venv/bin/python benchmarks/bench_transactions.py --dir /tmp/bench-cluster --seconds 20 --rounds 2 \
        --out docs/benchmarks/transactions-throughput.json

One producer each, acks=all, one transaction after another as fast as it goes, to a topic of one
partition (RF 3, min.insync.replicas 2), for each transaction.version the cluster can finalize (1 and
2 on Kafka 4.x), alternating round by round. Kafka's tool commits every --transaction-duration-ms
(1 ms here: as often as it can); ours then writes the same number of records per transaction as the
tool's run did (its records / its transactions). Transactions are counted from the log itself: on a
partition that only one producer writes, every committed transaction leaves one marker, so
transactions = log end offset - records. Ours runs as in a scenario (a worker process, every op
recorded). Each run also reads the producer epoch Kafka's transaction coordinator holds for its
transactional.id (kafka-transactions describe) before and after: with transaction.version 2 a client
that speaks KIP-890 bumps it at every transaction.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.common import cluster_at, write_summary  # noqa: E402
from failsafe.history.recorder import Recorder  # noqa: E402
from failsafe.supervisor import Supervisor  # noqa: E402
from failsafe.tools.admin import log_end_offsets  # noqa: E402
from failsafe.tools.kafka_tools import set_feature_level  # noqa: E402
from failsafe.waiting import wait_until  # noqa: E402
from failsafe.workloads.pool import WorkerPool  # noqa: E402
from failsafe.workloads.txn.specs import TxnProducerSpec  # noqa: E402

TOPIC = "txn-bench"
RECORD_SIZE = 16


def cli(root: Path, *args: str) -> str:
    env = {**os.environ, "FAILSAFE_DIR": str(root)}
    return subprocess.run(
        [sys.executable, "-m", "failsafe.cli.main", *args],
        capture_output=True,
        text=True,
        check=True,
        env=env,
        timeout=600,
    ).stdout


def fresh_topic(root: Path) -> None:
    if TOPIC in cli(root, "topics", "list").split():
        cli(root, "topics", "delete", TOPIC)
        wait_until(lambda: TOPIC not in cli(root, "topics", "list").split(), 30, f"{TOPIC} was not deleted")
    cli(
        root,
        "kafka",
        "topics",
        "--create",
        "--topic",
        TOPIC,
        "--partitions",
        "1",
        "--replication-factor",
        "3",
        "--config",
        "min.insync.replicas=2",
    )


def epoch(root: Path, transactional_id: str) -> int | None:
    """The producer epoch the coordinator holds for the id, as kafka-transactions describe prints it (None before
    any)."""
    try:
        out = cli(root, "kafka", "transactions", "describe", "--transactional-id", transactional_id)
    except subprocess.CalledProcessError:
        return None
    return int(out.strip().splitlines()[-1].split()[3])


def perf_test(root: Path, bootstrap: str, seconds: float, transactional_id: str) -> dict:
    # About `seconds` of records at the tool's rate on this machine (measured below: ~200 records/s at 1 ms
    # transactions).
    records = max(500, int(seconds * 200))
    before = log_end_offsets(bootstrap, [(TOPIC, 0)])[(TOPIC, 0)]
    t0 = time.monotonic()
    out = cli(
        root,
        "kafka",
        "producer-perf-test",
        "--topic",
        TOPIC,
        "--num-records",
        str(records),
        "--record-size",
        str(RECORD_SIZE),
        "--throughput",
        "-1",
        "--transactional-id",
        transactional_id,
        "--transaction-duration-ms",
        "1",
        "--producer-props",
        "acks=all",
    )
    elapsed = time.monotonic() - t0
    last = [line for line in out.splitlines() if "records sent" in line][-1]
    rate = float(re.search(r"([\d.]+) records/sec", last).group(1))
    txns = log_end_offsets(bootstrap, [(TOPIC, 0)])[(TOPIC, 0)] - before - records
    seconds_sending = records / rate
    return {
        "records": records,
        "transactions": txns,
        "records_per_s": rate,
        "transactions_per_s": txns / seconds_sending,
        "records_per_transaction": records / txns,
        "wall_s": round(elapsed, 2),
    }


def ours(bootstrap: str, seconds: float, writes: int, transactional_id: str) -> dict:
    before = log_end_offsets(bootstrap, [(TOPIC, 0)])[(TOPIC, 0)]
    with tempfile.TemporaryDirectory() as tmp:
        recorder = Recorder(Path(tmp) / "history.jsonl")
        supervisor = Supervisor()
        pool = WorkerPool(recorder, supervisor, Path(tmp) / "logs")
        spec = TxnProducerSpec(
            process=transactional_id,
            topics=(TOPIC,),
            transactional_id=transactional_id,
            bootstrap_servers=bootstrap,
            rate_per_s=0,
            min_writes=writes,
            max_writes=writes,
            keys=0,
            abort_probability=0.0,
        )
        try:
            worker = pool.start(spec)
            wait_until(
                lambda: worker.txn_outcomes["ok"] > 0,
                60,
                "the benchmark's transactional writer committed nothing",
                poll_interval_s=0.05,
            )
            first, t0 = worker.txn_outcomes["ok"], time.monotonic()
            time.sleep(seconds)  # the measured window: a duration the benchmark asks for, not a synchronisation
            committed, elapsed = worker.txn_outcomes["ok"] - first, time.monotonic() - t0
            pool.stop([worker])
        finally:
            recorder.close()
            supervisor.stop_all()
        outcomes = dict(worker.txn_outcomes)
    records = sum(outcomes.values()) * writes
    markers = log_end_offsets(bootstrap, [(TOPIC, 0)])[(TOPIC, 0)] - before - records
    return {
        "transactions_per_s": committed / elapsed,
        "records_per_s": committed * writes / elapsed,
        "records_per_transaction": writes,
        "outcomes": outcomes,
        "markers": markers,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", type=Path, required=True)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--versions", default="1,2", help="transaction.version levels to finalize, one after the other")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    results = []
    with cluster_at(args.dir) as cluster:
        bootstrap, dist = cluster.bootstrap_servers, cluster.dist
        try:
            for version in (int(v) for v in args.versions.split(",")):
                level = set_feature_level(dist, bootstrap, "transaction.version", version)
                for i in range(args.rounds):
                    fresh_topic(args.dir)
                    kafka_id, ours_id = (
                        f"bench-java-tv{level}-{i}-{int(time.time())}",
                        f"bench-rdkafka-tv{level}-{i}-{int(time.time())}",
                    )
                    kafka = perf_test(args.dir, bootstrap, args.seconds, kafka_id)
                    kafka["epoch_after"] = epoch(args.dir, kafka_id)
                    writes = max(1, round(kafka["records_per_transaction"]))
                    mine = ours(bootstrap, args.seconds, writes, ours_id)
                    mine["epoch_after"] = epoch(args.dir, ours_id)
                    row = {
                        "transaction_version": level,
                        "round": i,
                        "perf_test": kafka,
                        "failsafe": mine,
                        "ratio": mine["transactions_per_s"] / kafka["transactions_per_s"],
                    }
                    print(row, flush=True)
                    results.append(row)
        finally:
            set_feature_level(dist, bootstrap, "transaction.version", 2)
            cli(args.dir, "topics", "delete", TOPIC)
    by_version = {
        v: [r["ratio"] for r in results if r["transaction_version"] == v]
        for v in sorted({r["transaction_version"] for r in results})
    }
    write_summary(
        {
            "what": "committed transactions/s of one transactional producer, acks=all, one partition (RF 3, "
            "min.insync.replicas 2): failsafe's writer (librdkafka, worker process, history recorded) vs "
            "kafka producer-perf-test --transaction-duration-ms 1 (Java), same records per transaction",
            "seconds": args.seconds,
            "record_size": RECORD_SIZE,
            "rounds": results,
            "median_ratio_by_transaction_version": {str(v): statistics.median(r) for v, r in by_version.items()},
            "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
            "measured_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        },
        args.out,
    )


if __name__ == "__main__":
    main()
