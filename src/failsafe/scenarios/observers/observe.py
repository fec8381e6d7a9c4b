"""What the runner observes of the cluster from outside: topology samples and, after the run, the log itself."""

from __future__ import annotations

import json
import threading
import time

from confluent_kafka import (
    TIMESTAMP_CREATE_TIME,
    TIMESTAMP_LOG_APPEND_TIME,
    TIMESTAMP_NOT_AVAILABLE,
    Consumer,
    KafkaError,
    KafkaException,
    TopicPartition,
)
from confluent_kafka.admin import ConfigResource, ResourceType

from failsafe.history.ops import Op, Process, log_read, op
from failsafe.history.recorder import Recorder
from failsafe.tools.admin import client_config, describe_error, new_admin

SAMPLE_INTERVAL_S = 0.25
METADATA_TIMEOUT_S = 1.0


def partitions_of(metadata, topics: list[str]) -> list[dict]:
    out = []
    for topic in topics:
        tm = metadata.topics.get(topic)
        if tm is None:
            continue
        for pid in sorted(tm.partitions):
            p = tm.partitions[pid]
            out.append(
                {
                    "topic": topic,
                    "partition": pid,
                    "leader": p.leader,
                    "replicas": list(p.replicas),
                    "isr": list(p.isrs),
                }
            )
    return out


class TopologySampler:
    """Leader, replicas and ISR of every partition of the scenario's topics, every 250 ms, into the history.

    A sample that takes longer than the interval (a dead broker answering nothing) is followed at
    once by the next: the interval is a floor, never a sleep added after a slow request.
    """

    def __init__(self, bootstrap_servers: str, topics: list[str], recorder: Recorder) -> None:
        self.topics = topics
        self.recorder = recorder
        self.admin = new_admin(bootstrap_servers)
        self.latest: list[dict] = []
        self.metadata = None  # the last sample's metadata, every topic of the cluster (the internal ones too)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="topology", daemon=True)

    def start(self) -> TopologySampler:
        self._thread.start()
        return self

    def sample(self) -> list[dict] | None:
        now = time.time_ns()
        try:
            metadata = self.admin.list_topics(timeout=METADATA_TIMEOUT_S)
        except KafkaException as e:
            self.recorder.record(op(Op.TOPOLOGY, process=Process.TOPOLOGY, time_ns=now, error=describe_error(e)))
            return None
        self.metadata = metadata
        partitions = partitions_of(metadata, self.topics)
        controller = metadata.controller_id if metadata.controller_id >= 0 else None
        self.recorder.record(
            op(
                Op.TOPOLOGY,
                process=Process.TOPOLOGY,
                time_ns=now,
                partitions=partitions,
                brokers=sorted(metadata.brokers),
                controller=controller,
            )
        )
        self.latest = partitions
        return partitions

    def find(self, name: str) -> dict | None:
        """Partition ``name`` (TOPIC-N) of any topic, as the last sample's metadata shows it (not recorded in the
        history)."""
        topic, _, number = name.rpartition("-")
        if self.metadata is None or not number.isdigit():
            return None
        return next((p for p in partitions_of(self.metadata, [topic]) if p["partition"] == int(number)), None)

    def _run(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            self.sample()
            self._stop.wait(max(0.0, SAMPLE_INTERVAL_S - (time.monotonic() - started)))

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(10)


def read_log(
    bootstrap_servers: str,
    partitions: list[tuple[str, int]],
    recorder: Recorder,
    timeout_s: float = 30.0,
    cluster: str | None = None,
) -> dict[tuple[str, int], int]:
    """Read every partition from its first offset to its high watermark into ``log-read`` ops, one per partition asked
    for: ok with what it read (none, for an empty log), the log start offset and the high watermark it read between; or
    fail.

    This is how the durability and delivery checkers tell a write that is not in the log from one no consumer read
    (kafkatest searches the log segments for the same reason), and a partition read empty from one not read at all.
    All partitions are read at once, by one consumer assigned to all of them: one at a time cost a fetch round trip
    each, about 0.4 s a partition, seconds a scenario. It reads at read_committed (librdkafka's default, said here):
    no aborted transaction's record, and nothing past an open transaction. ``cluster``: the alias the ops name (a DR
    pair's cluster). Returns the highest offset read of each partition read completely.
    """
    consumer = Consumer(
        client_config(
            bootstrap_servers,
            **{
                "group.id": "failsafe-log-reader",
                "enable.auto.commit": False,
                "enable.partition.eof": True,
                "auto.offset.reset": "earliest",
                "isolation.level": "read_committed",
            },
        )
    )
    upto: dict[tuple[str, int], int] = {}
    retention = topic_retention(bootstrap_servers, sorted({t for t, _ in partitions}))
    try:
        highs: dict[tuple[str, int], int] = {}
        lows: dict[tuple[str, int], int] = {}
        records: dict[tuple[str, int], list[dict]] = {}
        assigned = []
        for topic, partition in partitions:
            try:
                low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)
            except KafkaException as e:
                recorder.record(log_read(topic, partition, cluster=cluster, error=describe_error(e)))
                continue
            highs[(topic, partition)] = high
            lows[(topic, partition)] = low
            records[(topic, partition)] = []
            if high > low:
                assigned.append(TopicPartition(topic, partition, low))
        pending = {(tp.topic, tp.partition) for tp in assigned}
        if assigned:
            consumer.assign(assigned)
        deadline = time.monotonic() + timeout_s
        while pending and time.monotonic() < deadline:
            for m in consumer.consume(1000, 0.5):
                tp = (m.topic(), m.partition())
                if m.error() is not None:
                    if m.error().code() == KafkaError._PARTITION_EOF:
                        pending.discard(tp)
                    continue
                if tp not in pending:
                    continue
                records[tp].append(
                    {
                        "topic": tp[0],
                        "partition": tp[1],
                        "offset": m.offset(),
                        "key": None if m.key() is None else m.key().decode(errors="replace"),
                        "value": None if m.value() is None else m.value().decode(errors="replace"),
                        "timestamp_ms": m.timestamp()[1] if m.timestamp()[0] != TIMESTAMP_NOT_AVAILABLE else None,
                        "timestamp_type": TIMESTAMP_TYPES.get(m.timestamp()[0]),
                        "headers": _headers(m.headers()),
                    }
                )
                if m.offset() >= highs[tp] - 1:
                    pending.discard(tp)
        for (topic, partition), read in records.items():
            if (topic, partition) not in pending:
                recorder.record(
                    log_read(
                        topic,
                        partition,
                        read,
                        log_start_offset=lows[(topic, partition)],
                        high_watermark=highs[(topic, partition)],
                        cluster=cluster,
                        retention=retention.get(topic),
                    )
                )
                upto[(topic, partition)] = read[-1]["offset"] if read else -1
            else:
                recorder.record(
                    log_read(
                        topic,
                        partition,
                        cluster=cluster,
                        error=f"read {len(read)} records but not up to the high watermark {highs[(topic, partition)]} "
                        f"within {timeout_s:g}s",
                    )
                )
    finally:
        consumer.close()
    return upto


def topic_retention(bootstrap_servers: str, topics: list[str], timeout_s: float = 10.0) -> dict[str, dict]:
    """Each topic's retention as the cluster describes it now (retention.ms, retention.bytes, cleanup.policy, the
    values in force): what tells a write retention deleted in its time from one deleted early. A topic the cluster
    does not describe is left out (its below-log-start writes stay unverified)."""
    if not topics:
        return {}
    admin = new_admin(bootstrap_servers)
    futures = admin.describe_configs([ConfigResource(ResourceType.TOPIC, t) for t in topics], request_timeout=timeout_s)
    out = {}
    for resource, future in futures.items():
        try:
            entries = future.result(timeout=timeout_s + 2)
            out[resource.name] = {
                "retention_ms": int(entries["retention.ms"].value),
                "retention_bytes": int(entries["retention.bytes"].value),
                "cleanup_policy": entries["cleanup.policy"].value,
            }
        except (KafkaException, TimeoutError, KeyError, ValueError, TypeError):
            continue
    return out


# A record's timestamp type in Kafka's words (message.timestamp.type): set by its producer, or by the broker on append.
TIMESTAMP_TYPES = {TIMESTAMP_CREATE_TIME: "CreateTime", TIMESTAMP_LOG_APPEND_TIME: "LogAppendTime"}


def _headers(headers: list[tuple[str, bytes | None]] | None) -> str | None:
    """A record's headers as a JSON object of name to text (a name given twice: its last value), or None."""
    if not headers:
        return None
    return json.dumps({name: None if value is None else value.decode(errors="replace") for name, value in headers})
