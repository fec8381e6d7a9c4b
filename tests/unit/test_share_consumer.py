"""The verifying share consumer against a small fake of confluent-kafka's ShareConsumer: what it records, what it
acknowledges, and how each partition's answer becomes a share-ack op (the real client runs in no test yet)."""

from __future__ import annotations

import io
import threading

import orjson
from confluent_kafka import AcknowledgeType, KafkaError, KafkaException, TopicPartition

from failsafe.checkers.share.deliveries import check as check_share
from failsafe.history.load import history_from_ops
from failsafe.history.recorder import OpWriter
from failsafe.workloads.share.consumer import ShareConsumerSpec, run_share_consumer, share_spec_from_json
from failsafe.workloads.specs import spec_to_json
from failsafe.workloads.worker import decode_spec


class FakeMessage:
    def __init__(self, partition: int, offset: int, count: int = 1) -> None:
        self._p, self._o, self._c = partition, offset, count

    def topic(self) -> str:
        return "t"

    def partition(self) -> int:
        return self._p

    def offset(self) -> int:
        return self._o

    def key(self) -> bytes:
        return b"k"

    def value(self) -> bytes:
        return f"v{self._o}".encode()

    def delivery_count(self) -> int:
        return self._c

    def error(self) -> None:
        return None


class FakeShareConsumer:
    """Hands out ``batches`` one per poll, then stops the worker; commit_sync answers with ``answers`` per partition."""

    def __init__(self, batches: list[list[FakeMessage]], answers: dict[int, object], stop: threading.Event) -> None:
        self.batches, self.answers, self.stop = batches, answers, stop
        self.acked: list[tuple[int, int, AcknowledgeType]] = []
        self.closed = False

    def subscribe(self, topics: list[str]) -> None:
        self.topics = topics

    def poll(self, timeout: float) -> list[FakeMessage]:
        if not self.batches:
            self.stop.set()
            return []
        return self.batches.pop(0)

    def acknowledge(self, message: FakeMessage, ack_type: AcknowledgeType) -> None:
        self.acked.append((message.partition(), message.offset(), ack_type))

    def commit_sync(self, timeout: float) -> dict:
        return {TopicPartition("t", p): answer for p, answer in self.answers.items()}

    def close(self) -> None:
        self.closed = True


def _run(
    spec: ShareConsumerSpec, batches: list[list[FakeMessage]], answers: dict[int, object]
) -> tuple[list[dict], FakeShareConsumer]:
    stream, stop = io.BytesIO(), threading.Event()
    fake = FakeShareConsumer(batches, answers, stop)
    run_share_consumer(spec, OpWriter(stream, spec.process), stop, make=lambda config: fake)
    return [orjson.loads(line) for line in stream.getvalue().splitlines()], fake


SPEC = ShareConsumerSpec("s-0", ("t",), group="sg")


def test_each_poll_is_recorded_before_its_acknowledgements_and_each_partitions_answer_after() -> None:
    refused = KafkaException(KafkaError(KafkaError.INVALID_RECORD_STATE))
    ops, fake = _run(SPEC, [[FakeMessage(0, 5), FakeMessage(1, 7, count=2)]], {0: None, 1: refused})
    assert [(o["f"], o["type"]) for o in ops] == [
        ("share-poll", "ok"),
        ("share-ack", "invoke"),
        ("share-ack", "ok"),
        ("share-ack", "fail"),
        ("close", "info"),
    ]
    assert [(r["offset"], r["delivery_count"], r["value"]) for r in ops[0]["records"]] == [(5, 1, "v5"), (7, 2, "v7")]
    assert [(a["partition"], a["offset"]) for a in ops[1]["acks"]] == [(0, 5), (1, 7)]
    assert (ops[2]["type"], ops[2]["acks"]) == ("ok", [{"topic": "t", "partition": 0, "offset": 5, "ack": "accept"}])
    assert (ops[3]["type"], ops[3]["error"]) == ("fail", "INVALID_RECORD_STATE")
    assert fake.closed and fake.topics == ["t"]
    # The history loads them as the share frames the share checker reads.
    h = history_from_ops(ops)
    assert h.share_deliveries["delivery_count"].to_list() == [1, 2]
    assert h.share_acks.select("offset", "type").rows() == [(5, "ok"), (7, "fail")]


def test_a_partition_without_an_answer_or_with_a_timeout_is_unknown() -> None:
    timed_out = KafkaException(KafkaError(KafkaError._TIMED_OUT))
    ops, _ = _run(SPEC, [[FakeMessage(0, 1), FakeMessage(1, 1)]], {1: timed_out})
    acks = [o for o in ops if o["f"] == "share-ack" and o["type"] != "invoke"]
    assert [(o["type"], o["error"]) for o in acks] == [("info", "NO_ANSWER"), ("info", "TIMED_OUT")]


def test_an_acknowledgement_sent_by_a_worker_killed_before_its_answer_is_unknown_not_lost() -> None:
    ops, _ = _run(SPEC, [[FakeMessage(0, 5)]], {0: None})
    write = [
        {
            "time_ns": 1,
            "process": "p",
            "type": "invoke",
            "f": "send",
            "id": 1,
            "topic": "t",
            "key": None,
            "value": "v5",
        },
        {
            "time_ns": 2,
            "process": "p",
            "type": "ok",
            "f": "send",
            "id": 1,
            "topic": "t",
            "partition": 0,
            "offset": 5,
            "key": None,
            "value": "v5",
        },
    ]
    killed = [
        o for o in ops if not (o["f"] == "share-ack" and o["type"] == "ok") and o["f"] != "close"
    ]  # SIGKILL during commit_sync
    h = history_from_ops(write + killed)
    assert h.share_acks.select("offset", "type", "error").rows() == [(5, "info", "NO_ANSWER_RECORDED")]
    result = check_share(h)
    assert result["valid"] is True and result["counts"]["unknown-acks"] == 1 and result["counts"]["lost"] == 0
    # Answered, the invoke leaves no row of its own.
    assert history_from_ops(write + ops).share_acks.select("offset", "type").rows() == [(5, "ok")]


def test_records_chosen_for_release_are_released_at_their_first_delivery_only() -> None:
    spec = ShareConsumerSpec("s-0", ("t",), group="sg", release_per_mille=1000)
    _, fake = _run(spec, [[FakeMessage(0, 1)], [FakeMessage(0, 1, count=2)]], {0: None})
    assert [a for _, _, a in fake.acked] == [AcknowledgeType.RELEASE, AcknowledgeType.ACCEPT]
    spec = ShareConsumerSpec("s-0", ("t",), group="sg", reject_per_mille=1000)
    _, fake = _run(spec, [[FakeMessage(0, 1)]], {0: None})
    assert [a for _, _, a in fake.acked] == [AcknowledgeType.REJECT]


def test_the_spec_goes_to_the_worker_and_back() -> None:
    spec = ShareConsumerSpec(
        "s-0", ("t", "u"), group="sg", properties={"fetch.max.bytes": "1048576"}, release_per_mille=10
    )
    assert (
        decode_spec(orjson.loads(orjson.dumps(spec_to_json(spec)))) == spec == share_spec_from_json(spec_to_json(spec))
    )
    config = spec.consumer_config()
    assert config["share.acknowledgement.mode"] == "explicit" and "auto.offset.reset" not in config
