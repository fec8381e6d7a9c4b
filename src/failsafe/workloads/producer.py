"""The verifying producer: unique values, every send recorded as invoke then ok, fail or info."""

from __future__ import annotations

import threading
import time

from confluent_kafka import KafkaError, KafkaException, Message, Producer

from failsafe.history.ops import Op, OpType
from failsafe.history.recorder import OpWriter
from failsafe.tools.connections import secured
from failsafe.workloads.outcomes import error_name, send_outcome
from failsafe.workloads.specs import ProducerSpec

# librdkafka returns this offset when the broker was not asked to confirm (acks=0).
_NO_OFFSET = -1001
_POLL_S = 0.05


def value_for(process: str, seq: int, record_size: int) -> str:
    value = f"{process}:{seq}"
    return value + "." * (record_size - len(value)) if record_size > len(value) else value


def run_producer(spec: ProducerSpec, out: OpWriter, stop: threading.Event, logger: object | None = None) -> int:
    """Send until ``stop`` is set or ``count`` records were sent; returns the number of sends."""
    config = spec.producer_config()
    if logger is not None:
        config["logger"] = logger
    producer = Producer(secured(config))
    in_flight: dict[int, tuple[str | None, str]] = {}

    def report(error: KafkaError | None, msg: Message, send_id: int) -> None:
        key, value = in_flight.pop(send_id)
        if error is None:
            offset = msg.offset()
            out.op(
                OpType.OK,
                Op.SEND,
                id=send_id,
                topic=msg.topic(),
                partition=msg.partition(),
                offset=None if offset is None or offset < 0 else offset,
                key=key,
                value=value,
            )
        else:
            partition = msg.partition() if msg.partition() is not None and msg.partition() >= 0 else None
            failed(send_outcome(error), error, send_id, key, value, partition)

    def failed(
        outcome: str, error: KafkaError, send_id: int, key: str | None, value: str, partition: int | None = None
    ) -> None:
        out.op(
            outcome, Op.SEND, id=send_id, topic=spec.topic, partition=partition, key=key, value=value,
            error=error_name(error),
        )  # fmt: skip

    interval_ns = int(1e9 / spec.rate_per_s) if spec.rate_per_s > 0 else 0
    next_ns = time.monotonic_ns()
    seq = 0
    try:
        while not stop.is_set() and (spec.count is None or seq < spec.count):
            if interval_ns:
                wait_ns = next_ns - time.monotonic_ns()
                if wait_ns > 0:
                    # Pacing the rate, while serving delivery reports.
                    producer.poll(min(wait_ns / 1e9, _POLL_S))
                    continue
                next_ns += interval_ns
            key = f"k{seq % spec.keys}" if spec.keys > 0 else None
            value = value_for(spec.process, seq, spec.record_size)
            in_flight[seq] = (key, value)
            out.op(OpType.INVOKE, Op.SEND, id=seq, topic=spec.topic, key=key, value=value)
            send_id = seq
            while True:
                try:
                    producer.produce(
                        spec.topic, value=value, key=key, on_delivery=lambda e, m, i=send_id: report(e, m, i)
                    )
                    break
                except BufferError:
                    producer.poll(_POLL_S)
                except KafkaException as e:
                    # Refused before it was queued (the topic's metadata said TOPIC_AUTHORIZATION_FAILED, an ACL
                    # removed): this send never left, and the next one is tried at its time.
                    failed(OpType.FAIL, e.args[0], send_id, *in_flight.pop(send_id))
                    break
            seq += 1
            producer.poll(0)
        producer.flush(spec.flush_timeout_s)
    finally:
        producer.poll(0)
        # Whatever is still in flight when we stop may or may not have been appended.
        for send_id, (key, value) in sorted(in_flight.items()):
            out.op(
                OpType.INFO,
                Op.SEND,
                id=send_id,
                topic=spec.topic,
                partition=None,
                key=key,
                value=value,
                error="PRODUCER_STOPPED_IN_FLIGHT",
            )
        out.op(OpType.INFO, Op.CLOSE)
        out.flush()
    return seq
