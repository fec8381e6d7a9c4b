"""What the protocol proxies cost: Kafka's producer-perf-test through them against the same tool around them.

    .venv/bin/python benchmarks/bench_proxy.py --dir /tmp/bench-proxy --records 300000 --rounds 4 \
        --out docs/benchmarks/proxy.json

One cluster made with --protocol-proxy: each broker advertises its proxy on its usual port and a DIRECT listener
around it (cluster/spec.py DIRECT_PORT_OFFSET), so the same brokers, topic and tool are measured both ways, alternating
round by round so a noisy neighbour hits both alike. A first round of each, not counted, warms the JVMs and the page
cache. No rule is in force: this is the cost of the proxy's reading of every frame's header and matching of every
answer. Target: through / around >= 0.8 (issue 53). Starts the cluster at --dir and stops it afterwards unless one with
proxies runs there.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.common import producer_perf_test, write_summary  # noqa: E402
from failsafe.cluster.spec import ClusterSpec  # noqa: E402
from failsafe.cluster.state import ClusterDir  # noqa: E402
from failsafe.cluster.topology import lifecycle  # noqa: E402
from failsafe.cluster.topology.lifecycle import Cluster  # noqa: E402
from tests.helpers import free_port_block  # noqa: E402

TOPIC = "proxy-bench"
PARTITIONS = 6
READY_TIMEOUT_S = 180.0


def cli(root: Path, *args: str) -> str:
    env = {**os.environ, "FAILSAFE_DIR": str(root)}
    done = subprocess.run(
        [sys.executable, "-m", "failsafe.cli.main", *args], capture_output=True, text=True, env=env, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"failsafe {' '.join(args[:2])} failed: {done.stderr.strip()[-500:]}")
    return done.stdout


def perf_test(root: Path, bootstrap: str, records: int, size: int) -> dict:
    out = cli(root, *producer_perf_test(TOPIC, records, size, f"bootstrap.servers={bootstrap}"))
    last = [line for line in out.splitlines() if "records sent" in line][-1]
    number = r"([\d.]+)"
    return {
        "records_per_s": float(re.search(rf"{number} records/sec", last).group(1)),
        "mb_per_s": float(re.search(rf"\({number} MB/sec\)", last).group(1)),
        "avg_latency_ms": float(re.search(rf"{number} ms avg latency", last).group(1)),
        "p99_ms": float(re.search(rf"{number} ms 99th", last).group(1)),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=Path("/tmp/bench-proxy"))
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    root = args.dir
    started = False
    if not (ClusterDir(root).has_state() and Cluster.open(root).running_nodes()):
        spec = ClusterSpec(base_port=free_port_block(3), controller_base_port=free_port_block(1), protocol_proxy=True)
        lifecycle.up(root, spec, set(), READY_TIMEOUT_S)
        started = True
    try:
        spec = Cluster.open(root).spec
        if not spec.protocol_proxy:
            raise SystemExit(f"the cluster at {root} has no protocol proxies: stop it, or give another --dir")
        through, around = spec.bootstrap_servers(), spec.direct_bootstrap_servers()
        existing = cli(root, "kafka", "topics", "--list")
        if TOPIC not in existing.split():
            cli(root, "kafka", "topics", "--create", "--topic", TOPIC, "--partitions", str(PARTITIONS),
                "--replication-factor", "3")  # fmt: skip
        for bootstrap in (around, through):  # warm-up, not counted
            perf_test(root, bootstrap, args.records // 2, args.size)
        rounds = []
        for i in range(args.rounds):
            pair = {"around": around, "through": through}
            order = ("around", "through") if i % 2 == 0 else ("through", "around")
            measured = {way: perf_test(root, pair[way], args.records, args.size) for way in order}
            rounds.append({"round": i, "order": list(order), **measured})
            print(f"round {i}: {measured}", file=sys.stderr)
    finally:
        if started:
            lifecycle.down(root)
    ratios = [r["through"]["records_per_s"] / r["around"]["records_per_s"] for r in rounds]
    summary = {
        "what": "Kafka's producer-perf-test (acks=all, 6 partitions, RF 3) through each broker's protocol proxy and "
        "around it (the brokers' DIRECT listener), alternating on one cluster; no rule in force",
        "command": f".venv/bin/python benchmarks/bench_proxy.py --dir {root} --records {args.records} "
        f"--rounds {args.rounds}" + (f" --out {args.out}" if args.out else ""),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "records": args.records,
        "record_size": args.size,
        "rounds": rounds,
        "through_records_per_s_median": statistics.median(r["through"]["records_per_s"] for r in rounds),
        "around_records_per_s_median": statistics.median(r["around"]["records_per_s"] for r in rounds),
        "ratio_median": statistics.median(ratios),
        "ratio_min": min(ratios),
        "target_ratio": 0.8,
    }
    write_summary(summary, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
