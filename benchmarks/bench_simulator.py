"""The sales simulator's throughput against Kafka's producer-perf-test, on the same cluster.

    .venv/bin/python benchmarks/bench_simulator.py --dir /tmp/fs-dev --records 300000 --rounds 5 \
        --out docs/benchmarks/simulator.json

Each round runs `failsafe kafka producer-perf-test` (acks=all, records of the simulator's mean
purchase size, to a 6-partition RF 3 topic), then the simulator for the same number of purchases
(acks=all, --rate 0: as fast as possible) with the same worker processes, ledger and restocks as
`failsafe simulate sales`, alternating so a noisy neighbour hits both alike. perf-test runs twice
per round: with the Java producer's defaults (the target's yardstick), and with the simulator's
batching (linger.ms=20, batch.size=1000000) for a like-for-like ratio. Both rates are the
tools' own: perf-test's final records/sec, the simulator's acknowledged purchases over its send
window (first purchase sent to producer flushed, every instance). The simulator writes to
demo.bench.* topics, so a user's demo.* topics are left alone; every topic the benchmark creates
is deleted at the end. Uses the cluster at --dir, or starts one there and stops it afterwards.
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
from failsafe.tools.topics import Topics  # noqa: E402
from failsafe.waiting import wait_until  # noqa: E402
from failsafe.workloads.sales.generator import parse_time, purchase_values  # noqa: E402
from failsafe.workloads.sales.ledger import read_ledger  # noqa: E402
from failsafe.workloads.sales.run import SalesOptions, run_sales  # noqa: E402

PERF_TOPIC = "demo.bench.perf"
SIM_TOPICS = {
    "products": "demo.bench.products",
    "purchases": "demo.bench.purchases",
    "inventories": "demo.bench.inventories",
}
START = "2024-08-25 08:00:00"
# The simulator's producer batching (simulator.py), given to perf-test for a second, like-for-like comparison.
SIMULATOR_BATCHING = ("linger.ms=20", "batch.size=1000000")


def mean_record_size(seed: int) -> int:
    values = purchase_values(seed, 0, parse_time(START), 20_000)
    return round(sum(len(v.encode()) for v in values) / len(values))


def perf_test(root: Path, records: int, size: int, props: tuple[str, ...]) -> tuple[float, float]:
    t0 = time.monotonic()
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "failsafe.cli.main",
            *producer_perf_test(PERF_TOPIC, records, size, *props),
        ],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "FAILSAFE_DIR": str(root)},
    ).stdout
    wall_s = time.monotonic() - t0
    last = [line for line in out.splitlines() if "records sent" in line][-1]
    return float(re.search(r"([\d.]+) records/sec", last).group(1)), wall_s


def simulator(bootstrap: str, records: int, instances: int, seed: int) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.monotonic()
        result = run_sales(
            SalesOptions(
                bootstrap_servers=bootstrap,
                ledger=Path(tmp) / "ledger",
                count=records,
                seed=seed,
                start_time=START,
                instances=instances,
                topics=SIM_TOPICS,
            )
        )
        wall_s = time.monotonic() - t0
        acked = read_ledger(Path(tmp) / "ledger").purchases.height
    if not result.complete or acked != records:
        raise SystemExit(f"the simulator acknowledged {acked} of {records} purchases ({result.errors})")
    return records / result.send_s, wall_s


def delete_topics(topics: Topics, names: list[str]) -> None:
    present = [n for n in names if n in topics.list()]
    for name in present:
        topics.delete(name)
    wait_until(lambda: not set(present) & set(topics.list()), 60, f"topics {present} were not deleted")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", type=Path, required=True)
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--instances", type=int, default=1)
    parser.add_argument("--seed", type=int, default=4)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    size = mean_record_size(args.seed)
    with cluster_at(args.dir) as cluster:
        topics = Topics(cluster.bootstrap_servers)
        names = [PERF_TOPIC, *SIM_TOPICS.values()]
        delete_topics(topics, names)
        topics.create(PERF_TOPIC, 6, min(3, len(topics.broker_ids())), {})
        rounds = []
        try:
            for i in range(args.rounds):
                kafka, kafka_wall_s = perf_test(args.dir, args.records, size, ())
                tuned, _ = perf_test(args.dir, args.records, size, SIMULATOR_BATCHING)
                ours, ours_wall_s = simulator(cluster.bootstrap_servers, args.records, args.instances, args.seed + i)
                rounds.append(
                    {
                        "perf_test_records_per_s": kafka,
                        "perf_test_same_batching_records_per_s": tuned,
                        "simulator_records_per_s": round(ours, 1),
                        "ratio": round(ours / kafka, 3),
                        "ratio_same_batching": round(ours / tuned, 3),
                        "perf_test_wall_s": round(kafka_wall_s, 1),
                        "simulator_wall_s": round(ours_wall_s, 1),
                    }
                )
                print(json.dumps(rounds[-1]), flush=True)
        finally:
            delete_topics(topics, names)
    summary = {
        "what": "failsafe simulate sales (worker processes, ledger, restocks) vs kafka producer-perf-test, acks=all, "
        "6 partitions, RF 3, same cluster, alternating rounds",
        "records": args.records,
        "record_size": size,
        "instances": args.instances,
        "rounds": rounds,
        "median_ratio": statistics.median(r["ratio"] for r in rounds),
        "median_ratio_same_batching": statistics.median(r["ratio_same_batching"] for r in rounds),
        "median_perf_test_records_per_s": statistics.median(r["perf_test_records_per_s"] for r in rounds),
        "median_simulator_records_per_s": statistics.median(r["simulator_records_per_s"] for r in rounds),
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "load_average_at_end": os.getloadavg(),
        },
        "measured_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    write_summary(summary, args.out)


if __name__ == "__main__":
    main()
