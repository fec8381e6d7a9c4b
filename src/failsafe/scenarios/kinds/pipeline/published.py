"""The totals a pipeline scenario published to Kafka: the read_uncommitted view beside the history's read, and the
inputs of ``checkers.pipeline.published``.

The workload reads ``demo.sales-by-product`` back into the history at read_committed (``log-read`` ops),
as every topic a run judges. What a read_uncommitted reader sees is written beside the output
(``published-uncommitted.json``): the records of aborted (and still open) transactions among them, and
the (key, batch) pairs written more than once. It is reported beside the verdict, never judged: a
read_uncommitted reader was promised nothing.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import polars as pl
from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from failsafe.checkers.pipeline import published
from failsafe.history.model import History
from failsafe.history.ops import Op
from failsafe.pipeline.job import RESULTS_TOPIC
from failsafe.pipeline.sink import read_progress, rows_dropped_by_watermark
from failsafe.tools.admin import client_config
from failsafe.tools.errors import describe_error

UNCOMMITTED_FILE = "published-uncommitted.json"


def write_uncommitted_view(
    output: Path, bootstrap_servers: str, partitions: list[tuple[str, int]], timeout_s: float
) -> dict:
    """Read ``partitions`` from their start to their high watermark at read_uncommitted; write and return the counts."""
    view: dict[str, Any] = {"by_partition": {}, "complete": True}
    consumer = Consumer(
        client_config(
            bootstrap_servers,
            **{
                "group.id": "failsafe-uncommitted-reader",
                "enable.auto.commit": False,
                "enable.partition.eof": True,
                "isolation.level": "read_uncommitted",
            },
        )
    )
    seen: dict[tuple[str, str], int] = {}
    try:
        assigned, pending = [], set()
        for topic, partition in partitions:
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)
            view["by_partition"][str(partition)] = {"high_watermark": high, "records": 0}
            if high > low:
                assigned.append(TopicPartition(topic, partition, low))
                pending.add(partition)
        if assigned:
            consumer.assign(assigned)
        deadline = time.monotonic() + timeout_s
        while pending and time.monotonic() < deadline:
            for m in consumer.consume(1000, 0.5):
                if m.error() is not None:
                    if m.error().code() == KafkaError._PARTITION_EOF:
                        pending.discard(m.partition())
                    continue
                view["by_partition"][str(m.partition())]["records"] += 1
                batch = _batch(m.value())
                key = (m.key() or b"").decode(errors="replace")
                seen[(key, batch)] = seen.get((key, batch), 0) + 1
        view["complete"] = not pending
    except KafkaException as e:
        view |= {"complete": False, "error": describe_error(e)}
    finally:
        consumer.close()
    view["records"] = sum(p["records"] for p in view["by_partition"].values())
    view["duplicate"] = sum(n - 1 for n in seen.values())
    (output / UNCOMMITTED_FILE).write_text(json.dumps(view, indent=1) + "\n")
    return view


def _batch(value: bytes | None) -> str:
    try:
        return str(json.loads(value or b"{}").get("batch_id"))
    except (ValueError, AttributeError):
        return "?"


def publish_modes(history: History) -> set[str]:
    """How the pipeline said it published, at each of its starts (none in runs made before the published checker)."""
    return set(history.events.filter(pl.col("f") == Op.PIPELINE_START)["publish"].drop_nulls().to_list())


def check_published(output: Path, ledger_purchases: pl.DataFrame, history: History, scenario_publish: str) -> dict:
    """checkers.pipeline.published over this run: the mode the pipeline ran with is its ``pipeline-start`` ops' (the
    scenario's when they do not say), the stricter when they differ."""
    modes = publish_modes(history) or {scenario_publish}
    publish = published.EXACTLY_ONCE if published.EXACTLY_ONCE in modes else min(modes)
    log = history.log.filter(pl.col("topic") == RESULTS_TOPIC)
    failures = history.log_failures.filter(pl.col("topic") == RESULTS_TOPIC)
    read_back = history.log_reads.filter(pl.col("topic") == RESULTS_TOPIC).height > 0
    try:
        uncommitted = json.loads((output / UNCOMMITTED_FILE).read_text())
    except (OSError, ValueError):
        uncommitted = None
    try:
        dropped = rows_dropped_by_watermark(read_progress(output))
    except (OSError, ValueError):
        dropped = None
    return dict(
        published.check(
            ledger_purchases,
            log,
            failures,
            publish=publish,
            read_back=read_back,
            rows_dropped_by_watermark=dropped,
            uncommitted=uncommitted,
        )
    )
