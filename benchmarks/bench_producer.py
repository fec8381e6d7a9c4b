"""The verifying producer's throughput with history recording, against Kafka's producer-perf-test.

    .venv/bin/python benchmarks/bench_producer.py --dir /tmp/bench-cluster --records 200000 --rounds 3 \
        --out docs/benchmarks/producer.json

Both write the same number of records of the same size with acks=all to the same topic on the
same cluster, alternating round by round so a noisy neighbour hits both alike. Ours runs as in a
scenario: a worker process writing every invoke and ack to a pipe, copied into history.jsonl.
Uses the cluster running at --dir, or starts one there and stops it afterwards.
"""

from __future__ import annotations

import argparse
import json
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
from benchmarks.common import cluster_at, producer_perf_test, write_summary  # noqa: E402
from failsafe.history.recorder import Recorder  # noqa: E402
from failsafe.supervisor import Supervisor  # noqa: E402
from failsafe.waiting import wait_until  # noqa: E402
from failsafe.workloads.pool import WorkerPool  # noqa: E402
from failsafe.workloads.specs import ProducerSpec  # noqa: E402

TOPIC = "producer-bench"


def cli(*args: str, root: Path | None = None) -> str:
    env = {**os.environ, **({"FAILSAFE_DIR": str(root)} if root else {})}
    return subprocess.run(
        [sys.executable, "-m", "failsafe.cli.main", *args], capture_output=True, text=True, check=True, env=env
    ).stdout


def perf_test(root: Path, records: int, size: int) -> float:
    out = cli(*producer_perf_test(TOPIC, records, size), root=root)
    last = [line for line in out.splitlines() if "records sent" in line][-1]
    return float(re.search(r"([\d.]+) records/sec", last).group(1))


def ours(bootstrap: str, records: int, size: int, round_no: int) -> tuple[float, int]:
    with tempfile.TemporaryDirectory() as tmp:
        history = Path(tmp) / "history.jsonl"
        recorder = Recorder(history)
        supervisor = Supervisor()
        pool = WorkerPool(recorder, supervisor, Path(tmp) / "logs")
        spec = ProducerSpec(
            process=f"bench-{round_no}",
            topic=TOPIC,
            bootstrap_servers=bootstrap,
            rate_per_s=0,
            count=records,
            keys=0,
            acks="all",
            record_size=size,
        )
        t0 = time.monotonic()
        worker = pool.start(spec)
        wait_until(lambda: not worker.alive(), 600, "the benchmark producer did not finish", poll_interval_s=0.05)
        worker.reader.join()
        elapsed = time.monotonic() - t0
        recorder.close()
        supervisor.stop_all()
        acked = worker.acked
        lines = sum(1 for _ in open(history, "rb"))
    if acked != records:
        raise SystemExit(f"only {acked} of {records} sends were acknowledged")
    return records / elapsed, lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", type=Path, required=True)
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--record-size", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    with cluster_at(args.dir) as cluster:
        if TOPIC in cli("topics", "list", "--dir", str(args.dir)).split():
            cli("topics", "delete", TOPIC, "--dir", str(args.dir))
            wait_until(
                lambda: TOPIC not in cli("topics", "list", "--dir", str(args.dir)).split(),
                30,
                f"{TOPIC} was not deleted",
            )
        cli("topics", "create", TOPIC, "--partitions", "6", "--replication-factor", "3", "--dir", str(args.dir))
        rounds = []
        for i in range(args.rounds):
            kafka = perf_test(args.dir, args.records, args.record_size)
            mine, lines = ours(cluster.bootstrap_servers, args.records, args.record_size, i)
            rounds.append(
                {
                    "perf_test_records_per_s": kafka,
                    "failsafe_records_per_s": mine,
                    "ratio": mine / kafka,
                    "history_lines": lines,
                }
            )
            print(json.dumps(rounds[-1]), flush=True)
        cli("topics", "delete", TOPIC, "--dir", str(args.dir))
    summary = {
        "what": "verifying producer (worker process, history recorded) vs kafka producer-perf-test, acks=all, same "
        "topic (6 partitions, RF 3)",
        "records": args.records,
        "record_size": args.record_size,
        "rounds": rounds,
        "median_ratio": statistics.median(r["ratio"] for r in rounds),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "measured_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    write_summary(summary, args.out)


if __name__ == "__main__":
    main()
