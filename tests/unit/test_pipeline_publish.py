"""The exactly-once publish protocol (pipeline/publish.py) against a fake of Kafka's transactional producer.

The fake keeps what the protocol relies on: init_transactions gives the transactional id a new epoch,
fences every older producer of the id and aborts its open transaction; a transaction's records and
its offsets become visible together at commit; read_committed shows committed records only.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition

from failsafe.pipeline.publish import (
    BATCH_HEADER,
    Clients,
    Publication,
    PublishFailed,
    PublishFenced,
    Writer,
    publish_partition,
    publish_rows,
    register,
    transactional_prefix,
)

TOPIC = "demo.sales-by-product"


class Crash(BaseException):
    """The executor died: nothing after this line of the task runs."""


@dataclass
class Record:
    key: str | None
    value: str
    headers: list
    txn: int
    state: str = "open"  # open, committed, aborted


@dataclass
class Txn:
    records: list[Record] = field(default_factory=list)
    offsets: list = field(default_factory=list)
    group: str | None = None


class FakeKafka:
    def __init__(self) -> None:
        self.logs: dict[int, list[Record]] = {}
        self.epochs: dict[str, int] = {}
        self.open: dict[str, Txn] = {}
        self.committed: dict[tuple[str, str, int], int] = {}
        self.txns = 0
        self.calls: dict[str, int] = {}  # call name -> how many times it was made
        self.faults: dict[str, list] = {}  # call name -> errors (or callables) to raise, one per call

    def read(self, partition: int, committed: bool = True) -> list[tuple[str | None, str]]:
        wanted = {"committed"} if committed else {"committed", "open", "aborted"}
        return [(r.key, r.value) for r in self.logs.get(partition, []) if r.state in wanted]

    def fault(self, call: str) -> None:
        self.calls[call] = self.calls.get(call, 0) + 1
        queued = self.faults.get(call)
        if queued:
            fault = queued.pop(0)
            if callable(fault) and not isinstance(fault, BaseException):
                fault()
            else:
                raise fault

    def clients(self) -> Clients:
        return Clients(lambda config: FakeProducer(self, config), lambda config: FakeConsumer(self, config))


def error(code: int, **flags: bool) -> KafkaException:
    return KafkaException(KafkaError(code, "fake", **flags))


class FakeProducer:
    def __init__(self, kafka: FakeKafka, config: dict) -> None:
        self.kafka, self.id, self.epoch = kafka, config["transactional.id"], None
        self.txn: Txn | None = None

    def _check(self) -> None:
        if self.epoch != self.kafka.epochs.get(self.id):
            raise error(KafkaError._FENCED, fatal=True)

    def init_transactions(self, timeout: float) -> None:
        self.kafka.fault("init_transactions")
        self.epoch = self.kafka.epochs.get(self.id, -1) + 1
        self.kafka.epochs[self.id] = self.epoch
        if (stale := self.kafka.open.pop(self.id, None)) is not None:
            for r in stale.records:
                r.state = "aborted"

    def begin_transaction(self) -> None:
        # Local in librdkafka: a producer fenced meanwhile learns it from its first request (produce, below).
        self.kafka.txns += 1
        self.txn = Txn()
        self.kafka.open[self.id] = self.txn

    def produce(self, topic: str, value: str, key: str | None, partition: int, headers: list) -> None:
        assert topic == TOPIC and self.txn is not None
        if self.epoch != self.kafka.epochs.get(self.id):
            # What librdkafka 2.16.0 raised from produce() once its producer had learned it was fenced: the code
            # _FATAL, without the fatal flag.
            raise error(KafkaError._FATAL)
        self.kafka.fault("produce")
        record = Record(key, value, headers, self.kafka.txns)
        self.txn.records.append(record)
        self.kafka.logs.setdefault(partition, []).append(record)

    def poll(self, timeout: float) -> int:
        return 0

    def send_offsets_to_transaction(self, offsets: list, metadata: str, timeout: float) -> None:
        self._check()
        assert self.txn is not None
        self.txn.offsets, self.txn.group = offsets, metadata

    def commit_transaction(self, timeout: float) -> None:
        self._check()
        self.kafka.fault("commit_transaction")
        assert self.txn is not None
        for r in self.txn.records:
            r.state = "committed"
        for tp in self.txn.offsets:
            self.kafka.committed[(self.txn.group, tp.topic, tp.partition)] = tp.offset
        self.kafka.open.pop(self.id, None)
        self.txn = None

    def abort_transaction(self, timeout: float) -> None:
        self._check()
        assert self.txn is not None
        for r in self.txn.records:
            r.state = "aborted"
        self.kafka.open.pop(self.id, None)
        self.txn = None

    def purge(self) -> None:
        pass


class FakeConsumer:
    def __init__(self, kafka: FakeKafka, config: dict) -> None:
        assert config["isolation.level"] == "read_committed"
        self.kafka, self.group = kafka, config["group.id"]

    def consumer_group_metadata(self) -> str:
        return self.group

    def committed(self, partitions: list, timeout: float) -> list:
        self.kafka.fault("committed")
        return [
            TopicPartition(
                tp.topic, tp.partition, self.kafka.committed.get((self.group, tp.topic, tp.partition), -1001)
            )
            for tp in partitions
        ]

    def close(self) -> None:
        pass


PUBLICATION = Publication(
    "127.0.0.1:9092", TOPIC, 6, transactional_prefix("sales-by-product", "8c5e-query-id"), timeout_s=5
)
ROWS = [("SF05|a", '{"purchases": 1}'), ("SC02|a", '{"purchases": 2}')]


def test_a_batch_is_published_with_its_marker_in_one_transaction() -> None:
    kafka = FakeKafka()
    outcome = publish_partition(PUBLICATION, 7, 2, ROWS, kafka.clients())
    assert outcome.published and outcome.records == 2 and outcome.attempts == 1
    assert kafka.read(2) == ROWS
    assert kafka.committed[(PUBLICATION.marker_group, TOPIC, 2)] == 8
    assert kafka.logs[2][0].headers == [(BATCH_HEADER, b"7")]


def test_a_replay_of_a_committed_batch_publishes_nothing() -> None:
    kafka = FakeKafka()
    publish_partition(PUBLICATION, 7, 2, ROWS, kafka.clients())
    replay = publish_partition(PUBLICATION, 7, 2, ROWS, kafka.clients())
    assert not replay.published
    assert kafka.read(2, committed=False) == ROWS  # not even an aborted copy
    # An older marker does not stop the next batch.
    assert publish_partition(PUBLICATION, 8, 2, ROWS, kafka.clients()).published
    assert kafka.read(2) == ROWS + ROWS


def test_a_crash_between_the_write_and_the_commit_leaves_nothing_to_read_committed() -> None:
    kafka = FakeKafka()
    kafka.faults["commit_transaction"] = [Crash()]
    with pytest.raises(Crash):
        publish_partition(PUBLICATION, 7, 2, ROWS, kafka.clients())
    assert kafka.read(2) == []
    assert kafka.read(2, committed=False) == ROWS  # written, in an open transaction
    assert (PUBLICATION.marker_group, TOPIC, 2) not in kafka.committed
    # The task's next attempt (Spark's retry, or the batch's replay) aborts it and publishes once.
    assert publish_partition(PUBLICATION, 7, 2, ROWS, kafka.clients()).published
    assert kafka.read(2) == ROWS
    assert [r.state for r in kafka.logs[2]] == ["aborted", "aborted", "committed", "committed"]


def test_a_zombie_attempt_is_fenced_and_its_writes_aborted() -> None:
    kafka = FakeKafka()
    clients = kafka.clients()
    # The first attempt stalls after its first record (a lost executor); a second attempt runs meanwhile.
    kafka.faults["produce"] = [lambda: None, lambda: publish_partition(PUBLICATION, 7, 2, ROWS, clients)]
    with pytest.raises(PublishFenced):
        publish_partition(PUBLICATION, 7, 2, ROWS, clients)
    assert kafka.read(2) == ROWS
    assert kafka.committed[(PUBLICATION.marker_group, TOPIC, 2)] == 8
    assert all(r.state == "aborted" for r in kafka.logs[2][:1])


def test_an_abortable_error_aborts_and_writes_the_batch_again() -> None:
    kafka = FakeKafka()
    kafka.faults["commit_transaction"] = [error(KafkaError._MSG_TIMED_OUT, txn_requires_abort=True)]
    outcome = publish_partition(PUBLICATION, 7, 2, ROWS, kafka.clients())
    assert outcome.published and outcome.attempts == 2
    assert kafka.read(2) == ROWS


def test_a_retriable_error_inside_the_transaction_aborts_it_and_writes_the_batch_again() -> None:
    kafka = FakeKafka()
    kafka.faults["produce"] = [lambda: None, error(KafkaError.NOT_COORDINATOR)]
    outcome = publish_partition(PUBLICATION, 7, 2, ROWS, kafka.clients())
    assert outcome.published and outcome.attempts == 2
    assert kafka.read(2) == ROWS and [r.state for r in kafka.logs[2]] == ["aborted", "committed", "committed"]


def test_retriable_errors_are_retried_and_a_hard_one_fails_the_task() -> None:
    kafka = FakeKafka()
    kafka.faults["init_transactions"] = [error(KafkaError._TIMED_OUT, retriable=True)]
    # NOT_COORDINATOR as librdkafka returned it from committed() while the coordinator moved: not flagged retriable.
    kafka.faults["committed"] = [
        error(KafkaError.COORDINATOR_NOT_AVAILABLE, retriable=True),
        error(KafkaError.NOT_COORDINATOR),
    ]
    kafka.faults["commit_transaction"] = [error(KafkaError.COORDINATOR_LOAD_IN_PROGRESS, retriable=True)]
    assert publish_partition(PUBLICATION, 7, 2, ROWS, kafka.clients()).published
    assert kafka.read(2) == ROWS
    kafka.faults["commit_transaction"] = [error(KafkaError.TOPIC_AUTHORIZATION_FAILED)]
    with pytest.raises(PublishFailed, match="TOPIC_AUTHORIZATION_FAILED"):
        publish_partition(PUBLICATION, 8, 2, ROWS, kafka.clients())
    kafka.faults["init_transactions"] = [error(KafkaError.INVALID_TRANSACTION_TIMEOUT)]
    with pytest.raises(PublishFailed):
        publish_partition(PUBLICATION, 9, 2, ROWS, kafka.clients())
    assert kafka.read(2) == ROWS


def test_an_executors_rows_are_published_per_output_partition(monkeypatch) -> None:
    kafka = FakeKafka()
    monkeypatch.setattr("failsafe.pipeline.publish.kafka_clients", kafka.clients)
    monkeypatch.setattr("failsafe.pipeline.publish.WORKER_WRITERS", {})
    rows = [{"partition": 3, "key": "a", "value": "1"}, {"partition": 1, "key": "b", "value": "2"}]
    rows.append({"partition": 3, "key": "c", "value": "3"})
    outcomes = list(publish_rows(PUBLICATION, 4, rows))
    assert [(o["partition"], o["records"], o["published"]) for o in outcomes] == [(1, 1, True), (3, 2, True)]
    assert kafka.read(3) == [("a", "1"), ("c", "3")] and kafka.read(1) == [("b", "2")]
    assert {PUBLICATION.transactional_id(p) for p in (1, 3)} == set(kafka.epochs)


def test_the_ids_are_the_querys_own() -> None:
    assert PUBLICATION.transactional_id(4) == "failsafe-sales-by-product-8c5e-query-id-4"
    assert PUBLICATION.marker_group == "failsafe-sales-by-product-8c5e-query-id.published"


class MarkerConsumer:
    """A consumer of the marker group: ``answers`` is what each committed() call returns (or raises)."""

    def __init__(self, answers: list) -> None:
        self.answers, self.closed = answers, False

    def committed(self, partitions: list, timeout: float) -> list:
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return [TopicPartition(tp.topic, tp.partition, answer.get(tp.partition, -1001)) for tp in partitions]

    def close(self) -> None:
        self.closed = True


def test_a_new_checkpoint_refuses_a_named_prefix_an_earlier_query_published_under(monkeypatch, tmp_path) -> None:
    from failsafe.errors import UserError
    from failsafe.pipeline import run
    from failsafe.pipeline.job import PipelineConfig

    config = PipelineConfig("127.0.0.1:9092", tmp_path / "out", tmp_path / "ck", transactional_prefix="failsafe-x")
    made: list[tuple[dict, MarkerConsumer]] = []

    def consumer(answers: list):
        def make(conf: dict) -> MarkerConsumer:
            made.append((conf, MarkerConsumer(answers)))
            return made[-1][1]

        monkeypatch.setattr("confluent_kafka.Consumer", make)

    consumer([error(KafkaError.COORDINATOR_LOAD_IN_PROGRESS, retriable=True), {3: 12}])
    with pytest.raises(UserError, match="failsafe-x.published holds offsets of an earlier query"):
        run._refuse_a_used_prefix(config)
    assert made[-1][0]["group.id"] == "failsafe-x.published" and made[-1][1].closed
    consumer([{}])  # nothing committed
    run._refuse_a_used_prefix(config)
    # A restart of the query that owns the prefix: its checkpoint has commits, and nothing is asked.
    consumer([])
    (tmp_path / "ck" / "sales-by-product" / "commits").mkdir(parents=True)
    run._refuse_a_used_prefix(config)


def test_registering_the_ids_gives_each_its_state_and_fences_nothing_the_tasks_need() -> None:
    kafka = FakeKafka()
    register(PUBLICATION, kafka.clients())
    assert set(kafka.epochs) == {PUBLICATION.transactional_id(p) for p in range(PUBLICATION.partitions)}
    assert publish_partition(PUBLICATION, 0, 2, ROWS, kafka.clients()).published and kafka.read(2) == ROWS


def test_a_kept_writer_publishes_the_next_batches_without_opening_again() -> None:
    kafka = FakeKafka()
    writers: dict[tuple[str, str], Writer] = {}
    first = publish_partition(PUBLICATION, 7, 2, ROWS, kafka.clients(), writers)
    second = publish_partition(PUBLICATION, 8, 2, ROWS, kafka.clients(), writers)
    replay = publish_partition(PUBLICATION, 8, 2, ROWS, kafka.clients(), writers)
    assert (first.writer, second.writer, replay.writer) == ("opened", "kept", "kept")
    assert second.published and not replay.published
    assert kafka.calls == {"init_transactions": 1, "committed": 1, "produce": 4, "commit_transaction": 2}
    assert kafka.read(2) == ROWS + ROWS and kafka.committed[(PUBLICATION.marker_group, TOPIC, 2)] == 9


def test_a_kept_writer_fenced_by_another_worker_opens_anew_and_decides_from_the_marker() -> None:
    kafka = FakeKafka()
    worker_a: dict[tuple[str, str], Writer] = {}
    worker_b: dict[tuple[str, str], Writer] = {}
    publish_partition(PUBLICATION, 7, 2, ROWS, kafka.clients(), worker_a)
    # Batch 8 of partition 2 runs in worker B, whose producer of the id fences worker A's.
    assert publish_partition(PUBLICATION, 8, 2, ROWS, kafka.clients(), worker_b).published
    # A replay of batch 8 lands in worker A: its writer still believes the marker at 8, writes, is fenced before
    # it commits; the writer opened anew reads 9 and publishes nothing.
    replay = publish_partition(PUBLICATION, 8, 2, ROWS, kafka.clients(), worker_a)
    assert not replay.published and replay.writer == "reopened" and replay.attempts == 1
    assert kafka.read(2) == ROWS + ROWS
    # Batch 9 in worker B: now B's writer is the fenced one; it opens anew and publishes once.
    nine = publish_partition(PUBLICATION, 9, 2, ROWS, kafka.clients(), worker_b)
    assert nine.published and nine.writer == "reopened"
    assert kafka.read(2) == ROWS * 3 and kafka.committed[(PUBLICATION.marker_group, TOPIC, 2)] == 10


def test_a_writer_whose_task_failed_is_not_kept() -> None:
    kafka = FakeKafka()
    writers: dict[tuple[str, str], Writer] = {}
    publish_partition(PUBLICATION, 7, 2, ROWS, kafka.clients(), writers)
    kafka.faults["commit_transaction"] = [Crash()]
    with pytest.raises(Crash):
        publish_partition(PUBLICATION, 8, 2, ROWS, kafka.clients(), writers)
    assert writers == {}
    again = publish_partition(PUBLICATION, 8, 2, ROWS, kafka.clients(), writers)
    assert again.published and again.writer == "opened"
    assert kafka.read(2) == ROWS + ROWS
