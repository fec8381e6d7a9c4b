"""Kafka's VerifiableShareConsumer (Kafka 4.1 and later) as a share-consumer driver: its events as history ops.

The tool is a KafkaShareConsumer in implicit acknowledgement mode: every record a poll returns is accepted when the next
commit goes out (``--acknowledgement-mode sync``: commitSync after every poll that returned records). It prints one JSON
event per line:

    record_data           (--verbose) one record of the poll that follows: kept until its records_consumed
    records_consumed      -> share-poll ok, its records (key and value from their record_data; delivery_count null:
                             the tool does not print it)
    offsets_acknowledged  -> share-ack ok (every offset accepted), or fail when the broker refused them for the records'
                             state (InvalidRecordStateException), or info for any other error: the tool prints the
                             exception's message, not its class
    shutdown_complete     -> close        startup_complete, offset_reset_strategy_set -> nothing

The tool prints an acknowledgement's answer from its callback, which runs on a later poll or commit: when it ends (a
kill, or a close after its last poll), the records it was delivered and never reported acknowledged become one share-ack
info (ShareEvents.stopped_ops): an accept whose answer is unknown.

The share checker judges what it can without delivery counts: a redelivery is still a second acquisition of a record,
but archived-at-limit cannot be told from the tool's output (docs/share-groups.md).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import ClassVar

from failsafe.errors import UserError
from failsafe.history.ops import Op, OpType
from failsafe.jvm.java import Java
from failsafe.jvm.jvm import tool_command
from failsafe.jvm.kafka import DEFAULT_KAFKA_VERSION, KafkaDist
from failsafe.tools.kafka_tools import main_class
from failsafe.workloads.share.consumer import ShareConsumerSpec
from failsafe.workloads.verifiable.events import event_time_ns

# The stop's allowance: the tool's shutdown hook wakes the consumer up and waits for its close.
DEFAULT_STOP_TIMEOUT_S = 40.0
# What an accept the tool never reported an answer for is recorded with.
STOPPED_UNREPORTED = "STOPPED_BEFORE_REPORTED"
# The message of Kafka's InvalidRecordStateException (Errors.INVALID_RECORD_STATE): the broker refused the
# acknowledgement.
_REFUSED_MESSAGE = "record state is invalid"


@dataclass(frozen=True)
class VerifiableShareConsumerSpec(ShareConsumerSpec):
    """A ShareConsumerSpec run by Kafka's VerifiableShareConsumer: one topic, every record accepted (implicit mode), no
    processing time. ``properties`` are Java consumer configs (``--command-config``)."""

    KIND: ClassVar[str] = "verifiable-share-consumer"

    kafka_version: str = DEFAULT_KAFKA_VERSION
    stop_timeout_s: float = DEFAULT_STOP_TIMEOUT_S
    verbose: bool = True

    def __post_init__(self) -> None:
        if len(self.topics) != 1:
            raise UserError(
                f"{self.process}: topics = {list(self.topics)}: the VerifiableShareConsumer reads exactly one topic"
            )
        if self.release_per_mille or self.reject_per_mille or self.processing_ms:
            raise UserError(
                f"{self.process}: the VerifiableShareConsumer accepts every record at once: no release_per_mille, "
                "reject_per_mille or processing_ms"
            )

    def java_properties(self) -> dict[str, str]:
        return {"client.id": self.process, **{k: str(v) for k, v in self.properties.items()}}

    def effective_properties(self) -> dict[str, str]:
        """What the Java client is given, by config name: the group, implicit acknowledgement, and the config file."""
        return {"group.id": self.group, "share.acknowledgement.mode": "implicit", **self.java_properties()}


def verifiable_share_consumer_command(
    spec: VerifiableShareConsumerSpec, java: Java, dist: KafkaDist, config_path: str | None = None
) -> list[str]:
    """The JVM command line. The group's share.auto.offset.reset is the workload's to set (it is a group config), so the
    tool's --offset-reset-strategy is not given."""
    args = [
        "--bootstrap-server",
        spec.bootstrap_servers,
        "--topic",
        spec.topics[0],
        "--group-id",
        spec.group,
        "--acknowledgement-mode",
        "sync",
        "--max-messages",
        "-1",
    ]
    if spec.verbose:
        args.append("--verbose")
    if config_path is not None:
        args += ["--command-config", str(config_path)]
    return tool_command(java, dist, main_class(dist, "verifiable-share-consumer"), args)


class ShareEvents:
    """Translates one tool's events in order: record_data lines wait for the records_consumed they belong to."""

    def __init__(self, process: str, group: str) -> None:
        self.process = process
        self.group = group
        self.pending: dict[tuple[str, int, int], tuple[str | None, str | None]] = {}
        # Records delivered whose acknowledgement the tool has not reported: its callback runs on a later poll or
        # commit.
        self.unacknowledged: dict[tuple[str, int, int], None] = {}

    def __call__(self, event: dict) -> list[dict]:
        name = event.get("name")
        now_ns = event_time_ns(event)
        if name == "record_data":
            self.pending[(event["topic"], event["partition"], event["offset"])] = (event.get("key"), event.get("value"))
            return []
        if name == "records_consumed":
            records = []
            for summary in event.get("partitions") or []:
                for offset in summary["offsets"]:
                    key, value = self.pending.pop((summary["topic"], summary["partition"], offset), (None, None))
                    records.append(
                        {
                            "topic": summary["topic"],
                            "partition": summary["partition"],
                            "offset": offset,
                            "key": key,
                            "value": value,
                            "delivery_count": None,
                        }
                    )
                    self.unacknowledged[(summary["topic"], summary["partition"], offset)] = None
            self.pending.clear()
            return [self._op(now_ns, OpType.OK, Op.SHARE_POLL, records=records)] if records else []
        if name == "offsets_acknowledged":
            acks = [
                {"topic": p["topic"], "partition": p["partition"], "offset": offset, "ack": "accept"}
                for p in event.get("partitions") or []
                for offset in p["offsets"]
            ]
            for a in acks:
                self.unacknowledged.pop((a["topic"], a["partition"], a["offset"]), None)
            if not acks:
                return []
            if event.get("success", False):
                return [self._op(now_ns, OpType.OK, Op.SHARE_ACK, acks=acks)]
            error = str(event.get("error") or "UNKNOWN")
            outcome = OpType.FAIL if _REFUSED_MESSAGE in error.lower() else OpType.INFO
            return [self._op(now_ns, outcome, Op.SHARE_ACK, acks=acks, error=error)]
        if name == "shutdown_complete":
            return [self._op(now_ns, OpType.INFO, Op.CLOSE)]
        return []

    def stopped_ops(self, time_ns: int | None = None) -> list[dict]:
        """When the tool has ended: the records it was delivered and never reported acknowledged, as one share-ack info
        (an accept in flight: the tool commits right after each poll, but prints the answer only from a later call,
        which a kill or a close may never make). The broker may have taken it or not: the share checker judges neither
        way."""
        if not self.unacknowledged:
            return []
        acks = [{"topic": t, "partition": p, "offset": o, "ack": "accept"} for t, p, o in self.unacknowledged]
        self.unacknowledged.clear()
        return [
            self._op(
                time.time_ns() if time_ns is None else time_ns,
                OpType.INFO,
                Op.SHARE_ACK,
                acks=acks,
                error=STOPPED_UNREPORTED,
            )
        ]

    def _op(self, time_ns: int, type: OpType, f: Op, **fields: object) -> dict:
        return {
            "time_ns": time_ns,
            "process": self.process,
            "type": str(type),
            "f": str(f),
            "group": self.group,
            **fields,
        }
