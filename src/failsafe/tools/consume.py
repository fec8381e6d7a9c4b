"""``failsafe consume``: records to stdout in kcat's format, rebalances to stderr as kcat prints them."""

from __future__ import annotations

import re
import sys
import time
import uuid
from dataclasses import dataclass
from typing import TextIO

from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, Consumer, KafkaError, Message, TopicPartition

from failsafe.errors import KafkaClientError, UserError
from failsafe.tools.admin import client_config, describe_error, fetch_metadata, new_admin
from failsafe.tools.connections import CLIENT
from failsafe.tools.topics import validate_topic_name

DEFAULT_FORMAT = "%s\\n"
POLL_S = 0.2
_FORMAT_TOKEN = re.compile(r"%[tpokKsST%]|\\[nt\\]")


def compile_format(fmt: str):
    """kcat's -f: %t topic, %p partition, %o offset, %k key, %s value, %T timestamp (ms),
    %K key length, %S value length, %% a percent sign; \\n and \\t."""
    leftover = _FORMAT_TOKEN.sub("", fmt)
    if "%" in leftover:
        bad = leftover[leftover.index("%") :][:2]
        raise UserError(f"--format has unknown token {bad!r}: use %t %p %o %k %s %T %K %S and \\n")
    parts = _FORMAT_TOKEN.split(fmt)
    tokens = _FORMAT_TOKEN.findall(fmt)

    def render(msg: Message) -> str:
        key, value = msg.key(), msg.value()
        fields = {
            "%t": msg.topic(),
            "%p": str(msg.partition()),
            "%o": str(msg.offset()),
            "%k": (key or b"").decode(errors="replace"),
            "%s": (value or b"").decode(errors="replace"),
            "%T": str(msg.timestamp()[1]),
            "%K": str(len(key) if key is not None else -1),
            "%S": str(len(value) if value is not None else -1),
            "%%": "%",
            "\\n": "\n",
            "\\t": "\t",
            "\\\\": "\\",
        }
        out = [parts[0]]
        for token, text in zip(tokens, parts[1:], strict=True):
            out.append(fields[token])
            out.append(text)
        return "".join(out)

    return render


@dataclass
class ConsumeOptions:
    topic: str
    from_beginning: bool = False
    group: str | None = None
    fmt: str = DEFAULT_FORMAT
    max_messages: int | None = None
    timeout_s: float | None = None
    exit_at_end: bool = False
    properties: dict[str, str] | None = None


def _partitions_text(partitions: list[TopicPartition]) -> str:
    return ", ".join(f"{p.topic} [{p.partition}]" for p in partitions)


def consume(
    bootstrap_servers: str,
    opts: ConsumeOptions,
    connect_timeout_s: float,
    out: TextIO = sys.stdout,
    err: TextIO = sys.stderr,
) -> int:
    """Returns how many records were printed."""
    validate_topic_name(opts.topic)
    render = compile_format(opts.fmt)
    metadata = fetch_metadata(new_admin(bootstrap_servers), bootstrap_servers, connect_timeout_s, topic=opts.topic)
    topic_meta = metadata.topics.get(opts.topic)
    if (
        topic_meta is None
        or topic_meta.error is not None
        and topic_meta.error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART
    ):
        raise UserError(f"topic {opts.topic} does not exist: create it with 'failsafe topics create {opts.topic} ...'")
    config = client_config(
        bootstrap_servers,
        CLIENT,
        **{
            "group.id": opts.group or f"failsafe-consume-{uuid.uuid4().hex[:8]}",
            "auto.offset.reset": "earliest" if opts.from_beginning else "latest",
            "enable.partition.eof": opts.exit_at_end,
            # Without a group of its own choosing, commit nothing: no group is left behind.
            "enable.auto.commit": opts.group is not None,
        },
    )
    config.update(opts.properties or {})
    try:
        consumer = Consumer(config)
    except Exception as e:  # a bad --property
        raise UserError(f"bad consumer property: {describe_error(e)}: see librdkafka's CONFIGURATION.md") from e

    assigned: set[tuple[str, int]] = set()
    at_end: set[tuple[str, int]] = set()

    def on_assign(c: Consumer, partitions: list[TopicPartition]) -> None:
        assigned.update((p.topic, p.partition) for p in partitions)
        print(
            f"% Group {opts.group} rebalanced (memberid {c.memberid()}): assigned: {_partitions_text(partitions)}",
            file=err,
            flush=True,
        )

    def on_revoke(c: Consumer, partitions: list[TopicPartition]) -> None:
        assigned.difference_update((p.topic, p.partition) for p in partitions)
        at_end.difference_update((p.topic, p.partition) for p in partitions)
        print(
            f"% Group {opts.group} rebalanced (memberid {c.memberid()}): revoked: {_partitions_text(partitions)}",
            file=err,
            flush=True,
        )

    if opts.group:
        consumer.subscribe([opts.topic], on_assign=on_assign, on_revoke=on_revoke)
    else:
        # No group: read every partition directly, as kcat -C does, leaving no group behind.
        start = OFFSET_BEGINNING if opts.from_beginning else OFFSET_END
        partitions = [TopicPartition(opts.topic, p, start) for p in sorted(topic_meta.partitions)]
        assigned.update((p.topic, p.partition) for p in partitions)
        consumer.assign(partitions)

    printed = 0
    last_record = time.monotonic()
    try:
        while opts.max_messages is None or printed < opts.max_messages:
            msg = consumer.poll(POLL_S)
            if msg is None:
                out.flush()
                if opts.timeout_s is not None and time.monotonic() - last_record >= opts.timeout_s:
                    break
                continue
            error = msg.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    at_end.add((msg.topic(), msg.partition()))
                    if opts.exit_at_end and assigned and at_end >= assigned:
                        break
                    continue
                if error.fatal():
                    raise KafkaClientError(f"consumer failed: {describe_error(error)}")
                print(f"% ERROR: {describe_error(error)}", file=err, flush=True)
                continue
            at_end.discard((msg.topic(), msg.partition()))
            out.write(render(msg))
            printed += 1
            last_record = time.monotonic()
            if printed % 1000 == 0:
                out.flush()
    finally:
        out.flush()
        consumer.close()
    return printed
