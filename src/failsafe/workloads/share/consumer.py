"""The verifying share consumer (KIP-932): every acquisition, with its delivery count, and every acknowledgement.

confluent-kafka's ShareConsumer in explicit acknowledgement mode: each poll's records are written as one
``share-poll`` op (and down the pipe) before any of them is acknowledged; then each record is acknowledged
(accept, or release / reject when the spec asks for some), a ``share-ack`` invoke of them all is written, the
acknowledgements are committed with commit_sync, and each partition's answer becomes a ``share-ack`` op: ok, fail
(the broker refused them) or info (no answer).
A killed worker leaves records acquired and unacknowledged: the broker delivers them again when their lock runs out.
"""

from __future__ import annotations

import threading
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import ClassVar

from confluent_kafka import AcknowledgeType, KafkaException, Message, ShareConsumer, TopicPartition

from failsafe.history.ops import Op, OpType
from failsafe.history.recorder import OpWriter
from failsafe.tools.connections import secured
from failsafe.workloads.consumer import decode
from failsafe.workloads.outcomes import error_name

_POLL_S = 0.1
_COMMIT_S = 30.0
# What the broker's refusal of an acknowledgement says for certain (the record's state did not change): fail; anything
# else (a timeout, a lost connection) leaves it unknown.
_REFUSED = {"INVALID_RECORD_STATE"}
# The acknowledgements that settle a record for good (a release hands it back).
SETTLING = ("accept", "reject")
ACK_NAMES = {AcknowledgeType.ACCEPT: "accept", AcknowledgeType.RELEASE: "release", AcknowledgeType.REJECT: "reject"}


@dataclass(frozen=True)
class ShareConsumerSpec:
    """A member of share group ``group``. ``release_per_mille`` / ``reject_per_mille``: the records (chosen by their
    offset, so every member chooses alike) released at their first delivery, or rejected; the rest are accepted.
    ``processing_ms``: how long each batch is worked on between its poll and its acknowledgement (the time a member
    holds its records: what a kill-consumer catches it holding)."""

    KIND: ClassVar[str] = "share-consumer"

    process: str
    topics: tuple[str, ...]
    group: str
    bootstrap_servers: str = ""
    properties: dict[str, str] = field(default_factory=dict)
    client_log: str = ""
    release_per_mille: int = 0
    reject_per_mille: int = 0
    processing_ms: int = 0

    def consumer_config(self) -> dict[str, object]:
        # ShareConsumer refuses auto.offset.reset and enable.auto.commit: the group's start is share.auto.offset.reset,
        # a group config (the workload sets it to earliest before the first member joins).
        config: dict[str, object] = {
            "bootstrap.servers": self.bootstrap_servers,
            "client.id": self.process,
            "group.id": self.group,
            "share.acknowledgement.mode": "explicit",
        }
        if self.client_log:
            config["debug"] = "cgrp,fetch"
        config.update(self.properties)
        return config

    def choose(self, message: Message) -> AcknowledgeType:
        """Accept, or release a record at its first delivery, or reject it, by a hash of where it is."""
        where = zlib.crc32(f"{message.topic()}-{message.partition()}-{message.offset()}".encode()) % 1000
        if where < self.reject_per_mille:
            return AcknowledgeType.REJECT
        if where < self.reject_per_mille + self.release_per_mille and (message.delivery_count() or 1) == 1:
            return AcknowledgeType.RELEASE
        return AcknowledgeType.ACCEPT


def share_spec_from_json(data: dict) -> ShareConsumerSpec:
    values = {k: v for k, v in data.items() if k != "kind"}
    values["topics"] = tuple(values["topics"])
    return ShareConsumerSpec(**values)


def run_share_consumer(
    spec: ShareConsumerSpec,
    out: OpWriter,
    stop: threading.Event,
    logger: object | None = None,
    make: Callable[[dict], ShareConsumer] = ShareConsumer,
) -> None:
    """Poll, record, acknowledge and commit until ``stop`` is set, then close (leaving the group)."""
    config = spec.consumer_config()
    if logger is not None:
        config["logger"] = logger
    consumer = make(secured(config))
    consumer.subscribe(list(spec.topics))
    try:
        while not stop.is_set():
            try:
                polled = consumer.poll(_POLL_S)
            except KafkaException as e:
                out.op(OpType.FAIL, Op.SHARE_POLL, group=spec.group, error=error_name(e.args[0]))
                continue
            batch = [m for m in polled if _is_record(m, out, spec.group)]
            if not batch:
                continue
            out.op(OpType.OK, Op.SHARE_POLL, group=spec.group, records=[_record(m) for m in batch])
            out.flush()
            if spec.processing_ms and stop.wait(spec.processing_ms / 1000):
                break  # asked to stop while working: close() hands the batch back unacknowledged
            chosen: dict[tuple[str, int], list[dict]] = {}
            for message in batch:
                ack = spec.choose(message)
                consumer.acknowledge(message, ack)
                chosen.setdefault((message.topic(), message.partition()), []).append(
                    {
                        "topic": message.topic(),
                        "partition": message.partition(),
                        "offset": message.offset(),
                        "ack": ACK_NAMES[ack],
                    }
                )
            _commit(consumer, chosen, out, spec.group)
    finally:
        consumer.close()
        out.op(OpType.INFO, Op.CLOSE, group=spec.group)
        out.flush()


def _is_record(message: Message, out: OpWriter, group: str) -> bool:
    error = message.error()
    if error is None:
        return True
    out.op(OpType.FAIL, Op.SHARE_POLL, group=group, error=error_name(error))
    return False


def _record(message: Message) -> dict:
    return {
        "topic": message.topic(),
        "partition": message.partition(),
        "offset": message.offset(),
        "key": decode(message.key()),
        "value": decode(message.value()),
        "delivery_count": message.delivery_count(),
    }


def _commit(consumer: ShareConsumer, chosen: dict[tuple[str, int], list[dict]], out: OpWriter, group: str) -> None:
    """One share-ack invoke of every acknowledgement sent, then commit_sync, then one share-ack op per partition with
    what the broker answered for it. A worker killed between the two leaves the invoke alone: the history loads it as an
    acknowledgement with no answer known (the broker may have taken it)."""
    out.op(OpType.INVOKE, Op.SHARE_ACK, group=group, acks=[a for acks in chosen.values() for a in acks])
    out.flush()
    try:
        answers = consumer.commit_sync(_COMMIT_S)
    except KafkaException as e:
        for acks in chosen.values():
            out.op(OpType.INFO, Op.SHARE_ACK, group=group, acks=acks, error=error_name(e.args[0]))
        out.flush()
        return
    for (topic, partition), acks in chosen.items():
        tp = TopicPartition(topic, partition)
        if tp not in answers:
            out.op(OpType.INFO, Op.SHARE_ACK, group=group, acks=acks, error="NO_ANSWER")
        elif answers[tp] is None:
            out.op(OpType.OK, Op.SHARE_ACK, group=group, acks=acks)
        else:
            error = error_name(answers[tp].args[0])
            out.op(OpType.FAIL if error in _REFUSED else OpType.INFO, Op.SHARE_ACK, group=group, acks=acks, error=error)
    out.flush()
