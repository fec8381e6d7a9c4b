"""Consume-transform-produce: records read at read_committed, one derived record written for each, and the input offsets
committed inside the same transaction, so that each input is processed into exactly one committed output.

After an abort the consumer is sent back to the batch's first offsets: a consumer does not rewind by itself
(KAFKA-17582), and without the seek the aborted batch would be skipped. A worker whose transactional.id another
took over is fenced: its error is recorded and it stops, as a zombie must.
"""

from __future__ import annotations

import random
import threading

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Message, TopicPartition

from failsafe.history.ops import Op, OpType
from failsafe.history.recorder import OpWriter
from failsafe.tools.connections import secured
from failsafe.workloads.consumer import decode, membership_callbacks
from failsafe.workloads.outcomes import error_name
from failsafe.workloads.producer import value_for
from failsafe.workloads.txn.session import Fenced, TxnSession, kafka_error
from failsafe.workloads.txn.specs import CtpSpec

_POLL_S = 0.2


def _next_offsets(messages: list[Message]) -> list[TopicPartition]:
    """The next offset to read of each partition the batch read from (the offsets a transaction commits)."""
    upto: dict[tuple[str, int], int] = {}
    for m in messages:
        upto[(m.topic(), m.partition())] = max(upto.get((m.topic(), m.partition()), -1), m.offset())
    return [TopicPartition(t, p, o + 1) for (t, p), o in sorted(upto.items())]


def _first_offsets(messages: list[Message]) -> list[TopicPartition]:
    first: dict[tuple[str, int], int] = {}
    for m in messages:
        first.setdefault((m.topic(), m.partition()), m.offset())
    return [TopicPartition(t, p, o) for (t, p), o in sorted(first.items())]


def run_ctp(spec: CtpSpec, out: OpWriter, stop: threading.Event, logger: object | None = None) -> int:
    """Process input until ``stop`` is set or the worker is fenced; returns how many transactions it began."""
    producer_config, consumer_config = spec.producer_config(), spec.consumer_config()
    if logger is not None:
        producer_config["logger"] = consumer_config["logger"] = logger
    rng = random.Random(f"{spec.seed}:{spec.process}")
    session = TxnSession(producer_config, out, stop, spec.commit_timeout_s)
    consumer = Consumer(secured(consumer_config))
    group = spec.group

    on_assign, on_revoke, on_lost = membership_callbacks(out, group)

    seq = begun = 0
    fenced: str | None = None
    try:
        session.open()
        consumer.subscribe([spec.input_topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_lost)
        while not stop.is_set():
            batch = []
            for m in consumer.consume(spec.batch, _POLL_S):
                error = m.error()
                if error is None:
                    batch.append(m)
                elif error.code() != KafkaError._PARTITION_EOF:
                    out.op(OpType.FAIL, Op.POLL, group=group, error=error_name(error))
            if not batch:
                continue
            try:
                txn = session.begin()
            except KafkaException:
                _rewind(consumer, batch)
                continue
            begun += 1
            out.op(
                OpType.OK,
                Op.POLL,
                group=group,
                txn=txn,
                records=[
                    {
                        "topic": m.topic(),
                        "partition": m.partition(),
                        "offset": m.offset(),
                        "key": decode(m.key()),
                        "value": decode(m.value()),
                    }
                    for m in batch
                ],
            )
            try:
                for m in batch:
                    seq += 1  # before the write: a value refused once is never written again by a later one
                    session.produce(spec.output_topic, decode(m.key()), value_for(spec.process, seq - 1, 0))
            except KafkaException as e:
                session.abort(kafka_error(e))
                _rewind(consumer, batch)
                continue
            if rng.random() < spec.abort_probability:
                session.abort()
                outcome = OpType.FAIL
            else:
                outcome = session.commit(_next_offsets(batch), consumer.consumer_group_metadata())
            if outcome == OpType.FAIL:
                _rewind(consumer, batch)
            elif outcome == OpType.INFO:
                # Not known whether it committed (the new producer's init_transactions has finished it either way): go
                # on from the offsets the group holds, as a restarted worker would.
                _resume_from_committed(consumer, batch, stop)
    except Fenced as e:
        fenced = str(e)
    finally:
        session.close()
        consumer.close()
        out.op(OpType.INFO, Op.CLOSE, group=group, error=fenced)
        out.flush()
    return begun


COMMITTED_TIMEOUT_S = 10.0
RETRY_BACKOFF_S = 0.5


def _resume_from_committed(consumer: Consumer, batch: list[Message], stop: threading.Event) -> None:
    """Seek the batch's partitions to the group's committed offsets (read_committed: a pending one is waited for)."""
    partitions = [TopicPartition(tp.topic, tp.partition) for tp in _first_offsets(batch)]
    while not stop.is_set():
        try:
            committed = consumer.committed(partitions, timeout=COMMITTED_TIMEOUT_S)
            break
        except KafkaException:
            stop.wait(RETRY_BACKOFF_S)  # the group coordinator moving: ask again, not in a tight loop
    else:
        return
    for tp in committed:
        try:
            consumer.seek(TopicPartition(tp.topic, tp.partition, tp.offset if tp.offset >= 0 else OFFSET_BEGINNING))
        except KafkaException:
            pass


def _rewind(consumer: Consumer, batch: list[Message]) -> None:
    for tp in _first_offsets(batch):
        try:
            consumer.seek(tp)
        except KafkaException:
            pass  # no longer assigned: whoever owns it now reads from the group's committed offset
