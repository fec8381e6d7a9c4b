"""How long each step of an exactly-once publish takes on an idle cluster: a new transactional producer and a consumer
of the marker group, ``init_transactions``, the marker's read, the records, ``send_offsets_to_transaction`` and the
commit (the protocol of pipeline/publish.py, timed step by step outside Spark).

    .venv/bin/python benchmarks/time_publish_steps.py --dir /tmp/failsafe-bench-cluster \\
        --out docs/benchmarks/publish-steps.json

--batches rounds over --partitions partitions of a fresh topic, each a new producer with the sink's settings (as
every task did before the producers were kept) writing --records records of 100 bytes in one transaction with its
marker.
"""

from __future__ import annotations

import argparse
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.common import cluster_at, write_summary  # noqa: E402
from failsafe.pipeline.publish import PRODUCER_CONFIG  # noqa: E402
from failsafe.scenarios.base import TopicSpec  # noqa: E402
from failsafe.scenarios.engine import setup  # noqa: E402

STEPS = ("create", "init_transactions", "marker_read", "produce", "send_offsets", "commit", "close")


def one(bootstrap: str, topic: str, prefix: str, batch: int, partition: int, records: int) -> dict[str, float]:
    from confluent_kafka import Consumer, Producer, TopicPartition

    marks = [time.monotonic()]
    producer = Producer(
        {"bootstrap.servers": bootstrap, **PRODUCER_CONFIG, "transactional.id": f"{prefix}-{partition}"}
    )
    marker = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"{prefix}.published",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
        }
    )
    marks.append(time.monotonic())
    producer.init_transactions(30)
    marks.append(time.monotonic())
    marker.committed([TopicPartition(topic, partition)], timeout=10)
    marks.append(time.monotonic())
    producer.begin_transaction()
    for i in range(records):
        producer.produce(topic, value=b"x" * 100, key=str(i), partition=partition)
    producer.poll(0)
    marks.append(time.monotonic())
    offsets = [TopicPartition(topic, partition, batch + 1)]
    producer.send_offsets_to_transaction(offsets, marker.consumer_group_metadata(), 30)
    marks.append(time.monotonic())
    producer.commit_transaction(30)
    marks.append(time.monotonic())
    marker.close()
    marks.append(time.monotonic())
    return {step: round((b - a) * 1000, 1) for step, a, b in zip(STEPS, marks[:-1], marks[1:], strict=True)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, required=True)
    parser.add_argument("--batches", type=int, default=4)
    parser.add_argument("--partitions", type=int, default=3)
    parser.add_argument("--records", type=int, default=2500)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    topic = "failsafe-publish-steps"
    prefix = f"failsafe-publish-steps-{uuid.uuid4().hex[:8]}"
    with cluster_at(args.dir) as cluster:
        setup.fresh_topics(cluster.bootstrap_servers, (TopicSpec(topic, args.partitions, 3),), [])
        rows = [
            {"batch": b, "partition": p, **one(cluster.bootstrap_servers, topic, prefix, b, p, args.records)}
            for b in range(args.batches)
            for p in range(args.partitions)
        ]
    summary = {step: {"min_ms": min(r[step] for r in rows), "max_ms": max(r[step] for r in rows)} for step in STEPS}
    write_summary({"records_per_transaction": args.records, "rows": rows, "summary": summary}, args.out)


if __name__ == "__main__":
    main()
