"""``failsafe produce``: lines from stdin to a topic, every one acknowledged or reported failed."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TextIO

from confluent_kafka import KafkaError, Message, Producer

from failsafe.errors import UserError
from failsafe.tools.admin import client_config, describe_error, fetch_metadata, new_admin
from failsafe.tools.connections import CLIENT
from failsafe.tools.topics import validate_topic_name

ACKS = {"all": "all", "-1": "all", "1": "1", "0": "0"}
QUEUE_FULL_POLL_S = 0.1


@dataclass
class ProduceReport:
    sent: int = 0
    acknowledged: int = 0
    failed: int = 0
    skipped_lines: list[int] = field(default_factory=list)


def producer_config(bootstrap_servers: str, acks: str, properties: dict[str, str]) -> dict[str, object]:
    if acks not in ACKS:
        raise UserError(f"--acks {acks!r} is not one of all, 1, 0")
    config = client_config(bootstrap_servers, CLIENT, acks=ACKS[acks])
    # The Java producer enables idempotence by default (Kafka 3.0+) and it needs acks=all;
    # librdkafka does not, so match the Java default where it can apply.
    config["enable.idempotence"] = ACKS[acks] == "all"
    for key in ("parse.key", "key.separator"):
        properties.pop(key, None)
    config.update(properties)
    return config


def key_separator(separator: str | None, properties: dict[str, str]) -> str | None:
    """--key-separator, or the console producer's --property parse.key=true key.separator=X."""
    if separator is not None:
        return separator
    if properties.get("parse.key", "false").lower() == "true":
        return properties.get("key.separator", "\t")
    return None


def produce_lines(
    bootstrap_servers: str,
    topic: str,
    lines: Iterable[str],
    *,
    separator: str | None,
    acks: str,
    properties: dict[str, str],
    print_acks: bool,
    timeout_s: float,
    out: TextIO = sys.stdout,
    err: TextIO = sys.stderr,
) -> ProduceReport:
    validate_topic_name(topic)
    fetch_metadata(new_admin(bootstrap_servers), bootstrap_servers, timeout_s)
    report = ProduceReport()
    try:
        producer = Producer(producer_config(bootstrap_servers, acks, dict(properties)))
    except Exception as e:  # confluent-kafka raises KafkaException or ValueError on a bad property
        raise UserError(f"bad producer property: {describe_error(e)}: see librdkafka's CONFIGURATION.md") from e

    def on_delivery(error: KafkaError | None, msg: Message) -> None:
        value = (msg.value() or b"").decode(errors="replace")
        if error is not None:
            report.failed += 1
            print(f"Failed to deliver {value}: {describe_error(error)}", file=err, flush=True)
            return
        report.acknowledged += 1
        if print_acks:
            print(
                f"Successfully produced {value} to {msg.topic()} [{msg.partition()}] @ {msg.offset()}",
                file=out,
                flush=True,
            )

    for number, raw in enumerate(lines, start=1):
        line = raw.rstrip("\n")
        key: str | None = None
        if separator is not None:
            key, sep, value = line.partition(separator)
            if not sep:
                report.skipped_lines.append(number)
                print(
                    f"Failed to deliver {line}: no key separator {separator!r} in line {number}", file=err, flush=True
                )
                continue
        else:
            value = line
        _send(producer, topic, key, value, on_delivery)
        report.sent += 1
        producer.poll(0)
    remaining = producer.flush()
    while remaining:
        remaining = producer.flush(1.0)
    return report


def _send(producer: Producer, topic: str, key: str | None, value: str, on_delivery) -> None:
    while True:
        try:
            producer.produce(
                topic, value=value.encode(), key=key.encode() if key is not None else None, on_delivery=on_delivery
            )
            return
        except BufferError:
            # The local queue is full: serve delivery reports until there is room.
            producer.poll(QUEUE_FULL_POLL_S)
