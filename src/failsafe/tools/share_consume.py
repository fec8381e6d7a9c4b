"""``failsafe consume TOPIC --share-group NAME``: a member of a share group (KIP-932), its records to stdout in kcat's
format.

Each record printed is acknowledged as accepted (explicitly, one by one; the acknowledgements go with the next poll and
are committed before the consumer closes); a record acquired and not printed (past --max-messages) is not, and closing
hands it back to the group for another member. ``--from-beginning`` sets the group's ``share.auto.offset.reset`` to
earliest first (a group config: it only matters before the group has state of a partition; Kafka's default is latest).
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

from confluent_kafka import AcknowledgeType, KafkaError, KafkaException, ShareConsumer

from failsafe.errors import KafkaClientError, UserError
from failsafe.tools.admin import client_config, describe_error, fetch_metadata, new_admin, set_group_configs
from failsafe.tools.connections import CLIENT
from failsafe.tools.consume import POLL_S, ConsumeOptions, compile_format
from failsafe.tools.topics import validate_topic_name

COMMIT_TIMEOUT_S = 30.0


def consume_share(
    bootstrap_servers: str,
    group: str,
    opts: ConsumeOptions,
    connect_timeout_s: float,
    out: TextIO = sys.stdout,
    err: TextIO = sys.stderr,
) -> int:
    """Returns how many records were printed."""
    validate_topic_name(opts.topic)
    if opts.exit_at_end:
        raise UserError(
            "--exit-at-end needs a partition's end, which a share group's member is not told: use --timeout-s "
            "or --max-messages"
        )
    render = compile_format(opts.fmt)
    metadata = fetch_metadata(new_admin(bootstrap_servers), bootstrap_servers, connect_timeout_s, topic=opts.topic)
    topic_meta = metadata.topics.get(opts.topic)
    if (
        topic_meta is None
        or topic_meta.error is not None
        and topic_meta.error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART
    ):
        raise UserError(f"topic {opts.topic} does not exist: create it with 'failsafe topics create {opts.topic} ...'")
    if opts.from_beginning:
        set_group_configs(bootstrap_servers, group, {"share.auto.offset.reset": "earliest"}, connect_timeout_s)
    config = client_config(bootstrap_servers, CLIENT, **{"group.id": group, "share.acknowledgement.mode": "explicit"})
    config.update(opts.properties or {})
    try:
        consumer = ShareConsumer(config)
    except Exception as e:  # a bad --property
        raise UserError(f"bad share consumer property: {describe_error(e)}: see librdkafka's CONFIGURATION.md") from e
    consumer.subscribe([opts.topic])
    print(f"% Share group {group}: subscribed to {opts.topic}", file=err, flush=True)
    printed = 0
    last_record = time.monotonic()
    try:
        while opts.max_messages is None or printed < opts.max_messages:
            batch = consumer.poll(POLL_S)
            if not batch:
                out.flush()
                if opts.timeout_s is not None and time.monotonic() - last_record >= opts.timeout_s:
                    break
                continue
            for msg in batch:
                error = msg.error()
                if error is not None:
                    if error.fatal():
                        raise KafkaClientError(f"share consumer failed: {describe_error(error)}")
                    print(f"% ERROR: {describe_error(error)}", file=err, flush=True)
                    continue
                if opts.max_messages is not None and printed >= opts.max_messages:
                    break  # not printed, so not acknowledged: close() hands it back to the group
                out.write(render(msg))
                consumer.acknowledge(msg, AcknowledgeType.ACCEPT)
                printed += 1
            last_record = time.monotonic()
    finally:
        out.flush()
        _commit_then_close(consumer, err)
    return printed


def _commit_then_close(consumer: ShareConsumer, err: TextIO) -> None:
    try:
        refused = {
            f"{tp.topic} [{tp.partition}]": describe_error(e)
            for tp, e in (consumer.commit_sync(COMMIT_TIMEOUT_S) or {}).items()
            if e is not None
        }
        for where, why in sorted(refused.items()):
            print(f"% ERROR: the acknowledgements of {where} were refused: {why}", file=err, flush=True)
    except KafkaException as e:
        print(f"% ERROR: the last acknowledgements were not committed: {describe_error(e)}", file=err, flush=True)
    finally:
        consumer.close()
