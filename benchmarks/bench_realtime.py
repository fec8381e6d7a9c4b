"""The pipeline's stateless part (valid purchases with their product, to a topic) under the micro-batch and the
real-time trigger.

    .venv/bin/python benchmarks/bench_realtime.py --dir /tmp/failsafe-bench-cluster --rate 5000 --duration 60 \
        --out docs/benchmarks/realtime.json

For each trigger, on fresh topics and the same input (the simulator at --rate for --duration, the same seed): `failsafe
pipeline enrich` runs as a process of its own (micro-batch: --trigger-s 0, a new batch as soon as the last one ends, the
lowest latency micro-batches give; real-time: --realtime 10 on local[8], a task slot per partition of demo.purchases);
the simulator starts once the query has finished its first batch; the run ends when every acknowledged purchase is in
the output topic. Latency is reported over all purchases and over those made after --warmup seconds (the first records
of a query compile its code). Latency of a purchase = the CreateTime of its first enriched record minus the CreateTime
of the purchase (both stamped by a producer on this machine), matched by transaction id. The output is at least once
(Spark's Kafka sink): duplicates are counted. """

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

import orjson
from confluent_kafka import Consumer, TopicPartition

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.common import cluster_at, percentiles, write_summary  # noqa: E402
from failsafe.pipeline.job import ENRICHED_TOPIC  # noqa: E402
from failsafe.pipeline.sink import read_progress  # noqa: E402
from failsafe.scenarios.base import TopicSpec  # noqa: E402
from failsafe.scenarios.engine import setup
from failsafe.scenarios.kinds.pipeline.workload import DEMO_TOPICS, failsafe_command  # noqa: E402
from failsafe.supervisor import spawn  # noqa: E402
from failsafe.tools.admin import client_config  # noqa: E402
from failsafe.waiting import wait_until  # noqa: E402
from failsafe.workloads.sales.run import publish_products  # noqa: E402

PURCHASES = "demo.purchases"
TRIGGERS = {
    "micro-batch": ["--trigger-s", "0", "--master", "local[2]"],
    "real-time": ["--realtime", "10", "--master", "local[8]"],
}


def read_topic(
    bootstrap: str, topic: str, partitions: int, expected: int, key_of, timeout_s: float
) -> dict[str, tuple[int, int]]:
    """key -> (CreateTime ms of its first record, copies seen), until ``expected`` distinct keys or the timeout."""
    consumer = Consumer(
        client_config(bootstrap, **{"group.id": f"bench-realtime-{topic}", "enable.auto.commit": False})
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    seen: dict[str, tuple[int, int]] = {}
    deadline = time.monotonic() + timeout_s
    try:
        while len(seen) < expected and time.monotonic() < deadline:
            for msg in consumer.consume(10000, timeout=1.0):
                if msg.error() is not None:
                    continue
                key = key_of(msg)
                if key is None:
                    continue
                first = seen.get(key)
                seen[key] = (msg.timestamp()[1], 1) if first is None else (first[0], first[1] + 1)
    finally:
        consumer.close()
    return seen


def transaction_of(msg) -> str | None:
    try:
        return orjson.loads(msg.value())["transaction_id"]
    except (orjson.JSONDecodeError, KeyError, TypeError):
        return None


def one_trigger(
    bootstrap: str, work: Path, name: str, rate: float, duration_s: float, seed: int, warmup_s: float
) -> dict:
    setup.fresh_topics(bootstrap, (*DEMO_TOPICS, TopicSpec(ENRICHED_TOPIC, 6, 3)), [])
    publish_products(bootstrap, "demo.products", 60)
    output = work / name
    for old in (output, work / f"ck-{name}", work / f"ledger-{name}"):
        shutil.rmtree(old, ignore_errors=True)  # a checkpoint of deleted topics would resume past their new ends
    query = spawn(
        failsafe_command(
            "pipeline",
            "enrich",
            "--bootstrap-server",
            bootstrap,
            "--topic",
            ENRICHED_TOPIC,
            *TRIGGERS[name],
            "--output",
            str(output),
            "--checkpoint",
            str(work / f"ck-{name}"),
        ),
        name=f"enrich ({name})",
        log_path=work / f"{name}.log",
    )
    try:
        t0 = time.monotonic()

        # Spark runs batch 0 at once, even on an empty topic: its progress line says the query is up.
        def started() -> bool:
            if not query.running():
                raise RuntimeError(f"the {name} query exited before its first batch: {query.tail(3)}")
            return bool(read_progress(output))

        wait_until(started, 180, f"the {name} query finished no batch (see {work / f'{name}.log'})", 0.5)
        first_batch_s = round(time.monotonic() - t0, 1)
        ledger = work / f"ledger-{name}"
        simulator = spawn(
            failsafe_command(
                "simulate",
                "sales",
                "--bootstrap-server",
                bootstrap,
                "--rate",
                f"{rate:g}",
                "--duration",
                f"{duration_s:g}",
                "--seed",
                str(seed),
                "--clock",
                "wall",
                "--ledger",
                str(ledger),
            ),
            name="simulator",
            log_path=work / f"simulator-{name}.log",
        )
        try:
            simulator.wait(duration_s + 120)
        finally:
            simulator.stop()
        acknowledged = json.loads((ledger / "manifest.json").read_text())["acknowledged"]
        inputs = read_topic(bootstrap, PURCHASES, 6, acknowledged, transaction_of, 120)
        outputs = read_topic(bootstrap, ENRICHED_TOPIC, 6, acknowledged, lambda m: m.key().decode(), 180)
    finally:
        query.stop(60)
    matched = [(created, outputs[t][0]) for t, (created, _) in inputs.items() if t in outputs]
    start_ms = min((created for created, _ in matched), default=0)
    return {
        "trigger": name,
        "args": TRIGGERS[name],
        "rate_per_s": rate,
        "duration_s": duration_s,
        "acknowledged": acknowledged,
        "enriched": len(outputs),
        "missing": acknowledged - len(matched),
        "duplicates": sum(n - 1 for _, n in outputs.values()),
        "first_batch_s": first_batch_s,
        "latency_all": percentiles([(out - created) / 1000 for created, out in matched]),
        "warmup_s": warmup_s,
        "latency_after_warmup": percentiles(
            [(out - created) / 1000 for created, out in matched if created >= start_ms + warmup_s * 1000]
        ),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--dir", type=Path, required=True, help="the cluster's directory (one is started there if none runs)"
    )
    parser.add_argument("--work", type=Path, default=Path("/tmp/failsafe-bench-realtime"))
    parser.add_argument("--rate", type=float, default=5000)
    parser.add_argument("--duration", type=float, default=60)
    parser.add_argument("--seed", type=int, default=29)
    parser.add_argument(
        "--warmup",
        type=float,
        default=30,
        help="latency is also reported for the purchases made after this many seconds",
    )
    parser.add_argument("--triggers", default="micro-batch,real-time")
    parser.add_argument("--realtime-s", default="10", help="the real-time trigger's checkpoint interval")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    TRIGGERS["real-time"][1] = args.realtime_s
    with cluster_at(args.dir) as cluster:
        results = [
            one_trigger(cluster.bootstrap_servers, args.work, name, args.rate, args.duration, args.seed, args.warmup)
            for name in args.triggers.split(",")
        ]
    write_summary({"runs": results, "machine_note": "3 brokers, the simulator and Spark on the same cores"}, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
