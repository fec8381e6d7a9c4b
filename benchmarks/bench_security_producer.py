"""failsafe's verifying producer against Kafka's producer-perf-test in each security mode, on the same cluster.

    .venv/bin/python benchmarks/bench_security_producer.py --dir /tmp/bench-security-producer --records 500000 \
        --record-size 100 --rounds 4 --out docs/benchmarks/security-producer.json

For each mode, a cluster made for it (`failsafe up --security MODE` on free ports, stopped and deleted after): both
producers write the same number of records of the same size with acks=all to the same topic (6 partitions, replication
factor 3), taking turns round by round, the order swapped every round (benchmarks/bench_producer.py's producers), each
with the mode's settings: the perf tool through `failsafe kafka` (the cluster's admin properties file), failsafe's
worker as failsafe-client. The ratio of the two in the same cluster is the figure; the modes run one after another, so
a difference between modes' absolute numbers is the machine's as much as theirs.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.bench_producer import TOPIC, cli, ours, perf_test  # noqa: E402
from benchmarks.common import READY_TIMEOUT_S, command_line, write_summary  # noqa: E402
from failsafe.cluster.security.modes import MODES  # noqa: E402
from failsafe.cluster.spec import ClusterSpec  # noqa: E402
from failsafe.cluster.topology import lifecycle  # noqa: E402
from tests.helpers import free_port_block  # noqa: E402


def one_mode(root: Path, mode: str, records: int, size: int, rounds: int) -> dict:
    spec = ClusterSpec(security=mode, base_port=free_port_block(3), controller_base_port=free_port_block(1))
    cluster = lifecycle.up(root, spec, set(), READY_TIMEOUT_S)  # registers the mode's client settings
    try:
        cli("topics", "create", TOPIC, "--partitions", "6", "--replication-factor", "3", "--dir", str(root))
        done = []
        for i in range(rounds):
            # The order swaps every round: the first producer of a fresh cluster meets cold brokers (a first round's
            # perf test ran at half a later round's rate here).
            if i % 2 == 0:
                kafka = perf_test(root, records, size)
                mine, _ = ours(cluster.bootstrap_servers, records, size, i)
            else:
                mine, _ = ours(cluster.bootstrap_servers, records, size, i)
                kafka = perf_test(root, records, size)
            done.append(
                {
                    "first": "producer-perf-test" if i % 2 == 0 else "failsafe",
                    "perf_test_records_per_s": kafka,
                    "failsafe_records_per_s": mine,
                    "ratio": mine / kafka,
                }
            )
            print(mode, json.dumps(done[-1]), flush=True)
    finally:
        lifecycle.down(root)
        cli("clean", "--dir", str(root))
    return {
        "mode": mode,
        "rounds": done,
        "perf_test_median": statistics.median(r["perf_test_records_per_s"] for r in done),
        "failsafe_median": statistics.median(r["failsafe_records_per_s"] for r in done),
        "median_ratio": statistics.median(r["ratio"] for r in done),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", type=Path, required=True)
    parser.add_argument("--records", type=int, default=500_000)
    parser.add_argument("--record-size", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    modes = [one_mode(args.dir / m, m, args.records, args.record_size, args.rounds) for m in args.modes.split(",")]
    write_summary(
        {
            "what": "failsafe's verifying producer against producer-perf-test, acks=all, alternating on one cluster "
            "per security mode (3 brokers, 1 controller); Kafka 4.3.1, 2 cores",
            "command": command_line(
                "bench_security_producer.py",
                dir=args.dir,
                records=args.records,
                record_size=args.record_size,
                rounds=args.rounds,
                out=args.out,
            ),
            "records": args.records,
            "record_size": args.record_size,
            "modes": modes,
            "measured_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        },
        args.out,
    )


if __name__ == "__main__":
    main()
