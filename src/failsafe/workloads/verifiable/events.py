"""Translating the JSON events of Kafka's VerifiableProducer and VerifiableConsumer into history ops.

Pure functions (no process, no I/O), so they are tested on hand-written event lines. The mapping
is in the docstring of failsafe.workloads.verifiable.clients.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import orjson
from confluent_kafka import KafkaError

from failsafe.history.ops import Op, OpType
from failsafe.workloads.outcomes import error_name, send_outcome

_STOPPED_IN_FLIGHT = "PRODUCER_STOPPED_IN_FLIGHT"

# A Java producer exception's simple class name -> the librdkafka error it corresponds to, so that
# outcomes.send_outcome decides fail or info exactly as for failsafe's own producer, and the
# history names the error as failsafe's producer would (measurements group sends by it).
JAVA_EXCEPTION_ERRORS: dict[str, int] = {
    # Proved not appended (outcomes.DEFINITE_FAILURES): fail.
    "NotEnoughReplicasException": KafkaError.NOT_ENOUGH_REPLICAS,
    "RecordTooLargeException": KafkaError.MSG_SIZE_TOO_LARGE,
    "RecordBatchTooLargeException": KafkaError.RECORD_LIST_TOO_LARGE,
    "InvalidRecordException": KafkaError.INVALID_RECORD,
    "InvalidRequiredAcksException": KafkaError.INVALID_REQUIRED_ACKS,
    "TopicAuthorizationException": KafkaError.TOPIC_AUTHORIZATION_FAILED,
    "ClusterAuthorizationException": KafkaError.CLUSTER_AUTHORIZATION_FAILED,
    "UnknownTopicOrPartitionException": KafkaError.UNKNOWN_TOPIC_OR_PART,
    "InvalidTopicException": KafkaError.TOPIC_EXCEPTION,
    # Outcome unknown: info. Java's TimeoutException covers both an expired batch (librdkafka's
    # _MSG_TIMED_OUT) and a request timeout; either may come after the leader appended.
    "NotEnoughReplicasAfterAppendException": KafkaError.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
    "TimeoutException": KafkaError._MSG_TIMED_OUT,
    "NetworkException": KafkaError.NETWORK_EXCEPTION,
    "DisconnectException": KafkaError._TRANSPORT,
    # Not in outcomes.DEFINITE_FAILURES either: after retries, an earlier attempt of the same
    # batch may have been appended before leadership moved.
    "NotLeaderOrFollowerException": KafkaError.NOT_LEADER_FOR_PARTITION,
    "LeaderNotAvailableException": KafkaError.LEADER_NOT_AVAILABLE,
    "KafkaStorageException": KafkaError.KAFKA_STORAGE_ERROR,
    "CorruptRecordException": KafkaError.INVALID_MSG,
    "OutOfOrderSequenceException": KafkaError.OUT_OF_ORDER_SEQUENCE_NUMBER,
    "UnknownProducerIdException": KafkaError.UNKNOWN_PRODUCER_ID,
    "InvalidProducerEpochException": KafkaError.INVALID_PRODUCER_EPOCH,
}


# -- translating events ---------------------------------------------------------------------------
@dataclass
class ProducerState:
    """What translating one producer's events remembers: which of its sends were reported.

    The tool sends ``{prefix}.0``, ``{prefix}.1``, ... one after the other and prints only
    completions, so a sequence number below the highest reported one that was not reported
    yet is a send in flight.
    """

    topic: str
    value_prefix: int | None = None
    keys: int = 0
    high: int = 0
    missing: set[int] = field(default_factory=set)
    # From tool_data: how many times the tool called send().
    sent: int | None = None
    _next_unparsed_id: int = -1

    def value(self, seq: int) -> str:
        return f"{seq}" if self.value_prefix is None else f"{self.value_prefix}.{seq}"

    def key(self, seq: int) -> str | None:
        return str(seq % self.keys) if self.keys > 0 else None

    def reported(self, value: object) -> int:
        """The send's id: its sequence number, parsed from the value."""
        try:
            seq = int(str(value).rsplit(".", 1)[-1])
        except ValueError:
            seq = -1
        if seq < 0:
            # Not a value this tool makes; negative ids cannot collide with sequence numbers.
            self._next_unparsed_id -= 1
            return self._next_unparsed_id + 1
        if seq >= self.high:
            self.missing.update(range(self.high, seq))
            self.high = seq + 1
        else:
            self.missing.discard(seq)
        return seq

    def unreported(self) -> list[int]:
        """Sequence numbers sent whose outcome was never printed."""
        upto = max(self.high, self.sent or 0)
        return sorted(self.missing | set(range(self.high, upto)))


def parse_event(line: bytes | str) -> dict | None:
    """The event on one stdout line, or None for anything else (log lines, deprecation notices)."""
    line = line.strip()
    if not line.startswith(b"{" if isinstance(line, bytes) else "{"):
        return None
    try:
        event = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    return event if isinstance(event, dict) and isinstance(event.get("name"), str) else None


def event_time_ns(event: dict) -> int:
    """The event's time on failsafe's clock: the tool's ``timestamp`` (ms), or ``timestamp_ns`` when the worker moved it
    from a host's clock (workloads/verifiable/on_host.py); now when it has neither."""
    moved = event.get("timestamp_ns")
    if isinstance(moved, int):
        return moved
    timestamp = event.get("timestamp")
    if isinstance(timestamp, int) and not isinstance(timestamp, bool):
        return timestamp * 1_000_000
    return time.time_ns()


def java_simple_name(exception: object) -> str:
    """``TimeoutException`` of ``class org.apache.kafka.common.errors.TimeoutException``."""
    text = str(exception or "").strip().removeprefix("class ").strip()
    return text.rsplit(".", 1)[-1].rsplit("$", 1)[-1]


def java_send_outcome(exception: object) -> tuple[str, str]:
    """(``fail`` or ``info``, error name) of a producer_send_error's ``exception`` field."""
    name = java_simple_name(exception)
    code = JAVA_EXCEPTION_ERRORS.get(name)
    if code is None:
        # An exception we cannot place proves nothing about the write.
        return "info", name or "UNKNOWN"
    error = KafkaError(code)
    return send_outcome(error), error_name(error)


def _op(time_ns: int, process: str, type: OpType | str, f: Op, **fields: object) -> dict:
    return {"time_ns": time_ns, "process": process, "type": str(type), "f": str(f), **fields}


def producer_event_to_ops(event: dict, process: str, state: ProducerState) -> list[dict]:
    """The history ops of one VerifiableProducer event (none for events that are not ops)."""
    name = event.get("name")
    now_ns = event_time_ns(event)
    if name in ("producer_send_success", "producer_send_error"):
        topic = event.get("topic") or state.topic
        key, value = event.get("key"), event.get("value")
        send_id = state.reported(value)
        # The tool prints nothing when it calls send(), only when the send completes: the invoke
        # is written just before its outcome, at the same time, so every send is still an
        # invoke/completion pair. Its latency is unknown (zero here), not measured.
        invoke = _op(now_ns, process, OpType.INVOKE, Op.SEND, id=send_id, topic=topic, key=key, value=value)
        if name == "producer_send_success":
            offset = event.get("offset")
            # With acks=0 the Java client reports offset -1: the broker confirmed nothing.
            offset = offset if isinstance(offset, int) and offset >= 0 else None
            done = _op(
                now_ns,
                process,
                OpType.OK,
                Op.SEND,
                id=send_id,
                topic=topic,
                partition=event.get("partition"),
                offset=offset,
                key=key,
                value=value,
            )
        else:
            outcome, error = java_send_outcome(event.get("exception"))
            done = _op(
                now_ns,
                process,
                outcome,
                Op.SEND,
                id=send_id,
                topic=topic,
                key=key,
                value=value,
                partition=None,
                error=error,
            )
        return [invoke, done]
    if name == "tool_data":
        sent = event.get("sent")
        state.sent = sent if isinstance(sent, int) else state.sent
        return []
    if name == "shutdown_complete":
        return [_op(now_ns, process, OpType.INFO, Op.CLOSE)]
    return []


def producer_stopped_ops(state: ProducerState, process: str, time_ns: int | None = None) -> list[dict]:
    """Sends the tool made but never reported (it was killed): each an invoke and an info."""
    now_ns = time.time_ns() if time_ns is None else time_ns
    ops = []
    for seq in state.unreported():
        base = {"id": seq, "topic": state.topic, "key": state.key(seq), "value": state.value(seq)}
        ops.append(_op(now_ns, process, OpType.INVOKE, Op.SEND, **base))
        ops.append(_op(now_ns, process, OpType.INFO, Op.SEND, **base, partition=None, error=_STOPPED_IN_FLIGHT))
        state.reported(state.value(seq))
    state.sent = state.high
    return ops


def _partitions(items: object) -> list[dict]:
    return [{"topic": p["topic"], "partition": p["partition"]} for p in items or []]


def consumer_event_to_ops(event: dict, process: str, group: str | None, *, verbose: bool = True) -> list[dict]:
    """The history ops of one VerifiableConsumer event (none for events that are not ops).

    With ``verbose`` (the tool's --verbose) each record_data is one poll ok of that record, and
    records_consumed, which only summarises the same records, is dropped. Without it,
    records_consumed is the poll, its records known by offset only (key and value null).
    """
    name = event.get("name")
    now_ns = event_time_ns(event)
    if name == "record_data":
        record = {k: event.get(k) for k in ("topic", "partition", "offset", "key", "value")}
        return [_op(now_ns, process, OpType.OK, Op.POLL, group=group, records=[record])]
    if name == "records_consumed":
        if verbose:
            return []
        records = [
            # Offsets in a range may be transaction markers; those stay without a value in the log.
            {"topic": s["topic"], "partition": s["partition"], "offset": offset, "key": None, "value": None}
            for s in event.get("partitions") or []
            for offset in range(s["minOffset"], s["maxOffset"] + 1)
        ]
        return [_op(now_ns, process, OpType.OK, Op.POLL, group=group, records=records)] if records else []
    if name == "partitions_assigned":
        return [
            _op(now_ns, process, OpType.INFO, Op.ASSIGN, group=group, partitions=_partitions(event.get("partitions")))
        ]
    if name == "partitions_revoked":
        # The Java listener's onPartitionsLost defaults to onPartitionsRevoked: a loss looks the same.
        return [
            _op(now_ns, process, OpType.INFO, Op.REVOKE, group=group, partitions=_partitions(event.get("partitions")))
        ]
    if name == "offsets_committed":
        offsets = [
            {"topic": o["topic"], "partition": o["partition"], "offset": o["offset"]}
            for o in event.get("offsets") or []
        ]
        if event.get("success", False):
            # After an empty poll the tool commits nothing and still says so.
            return [_op(now_ns, process, OpType.OK, Op.COMMIT, group=group, offsets=offsets)] if offsets else []
        # The tool reports the exception's message, not its class.
        return [
            _op(
                now_ns,
                process,
                OpType.FAIL,
                Op.COMMIT,
                group=group,
                offsets=offsets,
                error=event.get("error") or "UNKNOWN",
            )
        ]
    if name == "shutdown_complete":
        return [_op(now_ns, process, OpType.INFO, Op.CLOSE, group=group)]
    return []
