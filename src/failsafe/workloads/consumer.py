"""The verifying consumer: every poll, assignment, revocation and commit recorded."""

from __future__ import annotations

import threading
from collections.abc import Callable

from confluent_kafka import OFFSET_BEGINNING, OFFSET_INVALID, Consumer, KafkaError, TopicPartition

from failsafe.history.ops import Op, OpType
from failsafe.history.recorder import OpWriter
from failsafe.tools.connections import secured
from failsafe.workloads.outcomes import error_name
from failsafe.workloads.specs import ConsumerSpec

_BATCH = 500
_POLL_S = 0.1


def partitions(tps: list[TopicPartition]) -> list[dict]:
    return [{"topic": tp.topic, "partition": tp.partition} for tp in tps]


def decode(data: bytes | None) -> str | None:
    return None if data is None else data.decode("utf-8", errors="replace")


def membership_callbacks(out: OpWriter, group: str | None) -> tuple[Callable, Callable, Callable]:
    """on_assign, on_revoke and on_lost for subscribe(): each change of the assignment written, and down the pipe at
    once."""

    def on_assign(c: Consumer, tps: list[TopicPartition]) -> None:
        out.op(OpType.INFO, Op.ASSIGN, group=group, partitions=partitions(tps))
        out.flush()

    def on_revoke(c: Consumer, tps: list[TopicPartition]) -> None:
        out.op(OpType.INFO, Op.REVOKE, group=group, partitions=partitions(tps))
        out.flush()

    def on_lost(c: Consumer, tps: list[TopicPartition]) -> None:
        out.op(OpType.INFO, Op.REVOKE, group=group, partitions=partitions(tps), lost=True)
        out.flush()

    return on_assign, on_revoke, on_lost


def run_consumer(spec: ConsumerSpec, out: OpWriter, stop: threading.Event, logger: object | None = None) -> None:
    """Consume until ``stop`` is set, then close politely (leaving the group)."""
    config = spec.consumer_config()
    group = spec.group

    def on_commit(error: KafkaError | None, tps: list[TopicPartition]) -> None:
        offsets = [
            {"topic": tp.topic, "partition": tp.partition, "offset": tp.offset} for tp in tps if tp.error is None
        ]
        if error is None:
            out.op(OpType.OK, Op.COMMIT, group=group, offsets=offsets)
        elif error.code() != KafkaError._NO_OFFSET:
            out.op(OpType.FAIL, Op.COMMIT, group=group, offsets=offsets, error=error_name(error))

    if group is not None:
        config["on_commit"] = on_commit
    if logger is not None:
        config["logger"] = logger
    consumer = Consumer(secured(config))

    on_assign, on_revoke, on_lost = membership_callbacks(out, group)

    try:
        if group is not None:
            consumer.subscribe(list(spec.topics), on_assign=on_assign, on_revoke=on_revoke, on_lost=on_lost)
        else:
            metadata = consumer.list_topics(timeout=30)
            start = (
                OFFSET_BEGINNING if spec.from_beginning else OFFSET_INVALID
            )  # OFFSET_INVALID: the committed offset, else auto.offset.reset
            tps = [TopicPartition(t, p, start) for t in spec.topics for p in sorted(metadata.topics[t].partitions)]
            consumer.assign(tps)
            on_assign(consumer, tps)
        while not stop.is_set():
            msgs = consumer.consume(_BATCH, _POLL_S)
            if not msgs:
                continue
            records = []
            good = []
            for m in msgs:
                error = m.error()
                if error is not None:
                    if error.code() != KafkaError._PARTITION_EOF:
                        out.op(OpType.FAIL, Op.POLL, group=group, error=error_name(error))
                    continue
                records.append(
                    {
                        "topic": m.topic(),
                        "partition": m.partition(),
                        "offset": m.offset(),
                        "key": decode(m.key()),
                        "value": decode(m.value()),
                    }
                )
                good.append(m)
            if records:
                out.op(OpType.OK, Op.POLL, group=group, records=records)
                # Into the pipe before the offsets are stored: what is committed was recorded.
                out.flush()
                if group is not None:
                    for m in good:
                        consumer.store_offsets(m)
    finally:
        consumer.close()
        out.op(OpType.INFO, Op.CLOSE, group=group)
        out.flush()
