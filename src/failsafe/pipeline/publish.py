"""Exactly-once publishing of a micro-batch's totals to Kafka, by the executors, in Kafka transactions.

Spark's Kafka sink is at least once: a batch that runs again (a driver restarted before Spark
committed it, a task that failed after its producer had sent) writes its records again. Here each
batch's records are written by the executors, one Kafka transaction per output partition per batch:

- the rows are hashed by key to an output partition (Spark's ``hash``, so a key always lands in the
  same partition), and each partition's rows are written by one task;
- that task's producer has the transactional id ``<prefix>-<partition>``: the same for every batch and
  every attempt, so ``init_transactions`` of a new attempt fences an older attempt still running (a
  zombie of a lost executor) and aborts or completes its open transaction before anything else;
- in the same transaction the task commits the offset ``batch_id + 1`` of the output partition for the
  marker group ``<prefix>.published`` (``send_offsets_to_transaction``): the records and the note that
  this batch was published become visible together, or neither does;
- before writing, the task reads the marker group's committed offset for its partition, after
  ``init_transactions``: the transaction coordinator answers InitProducerId only once the id's earlier
  transaction is complete (CONCURRENT_TRANSACTIONS until then), its markers written to every partition
  it touched, the marker group's ``__consumer_offsets`` partition among them. At ``batch_id + 1`` or
  above, the batch was published and nothing is written again;
- a Python worker keeps its producers between batches (``Writer``): while a producer's epoch is the
  id's latest, no other producer of the id has committed since its own marker read or commit, so what
  it knows of the marker is exact; a producer another worker fenced fails its transaction before the
  commit, and a new one (``init_transactions``, the marker's read) decides again.

So a replay of a committed batch publishes nothing, a replay of an uncommitted one publishes it once,
and a read_committed reader sees each batch's records once. Why per partition and per batch: a
transaction per task would have to span partitions whose tasks Spark may retry separately, and a
transaction per batch spanning tasks would need one producer shared by the executors, which Kafka's
producers are not. The cost is a transaction per partition with rows, per batch, and a producer and a
marker read whenever a partition's task lands in a worker whose producer of the id is missing or
fenced (docs/pipeline.md, "Publishing exactly once", has it measured).

The prefix must be stable across restarts of the query and unique to it: ``transactional_prefix``
derives it from Spark's id of the query, which its checkpoint keeps. A prefix given instead
(``--transactional-id-prefix``, a scenario's, so that a fault can name the ids) is refused for a new
checkpoint when its marker group already holds offsets (run.py).

The key of a (window, product) total decides its partition by Spark's hash, not Kafka's default
partitioner: readers of the topic see every total of a key in one partition, in batch order.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

from failsafe.tools.connections import secured
from failsafe.tools.errors import retriable

EXACTLY_ONCE = "exactly-once"
AT_LEAST_ONCE = "at-least-once"
PUBLISH_MODES = (EXACTLY_ONCE, AT_LEAST_ONCE)
BATCH_HEADER = "failsafe.batch"
RETRY_BACKOFF_S = 0.25
# The producer's settings for a batch's records (see job.RESULTS_PRODUCER_OPTIONS for why larger batches).
PRODUCER_CONFIG = {"linger.ms": 20, "batch.size": 512 * 1024, "transaction.timeout.ms": 60_000}


class PublishFenced(RuntimeError):
    """Another attempt of this partition's task took its transactional id: this one is a zombie and stops."""


class PublishFailed(RuntimeError):
    """A partition's transaction could not be committed before the deadline (the task fails; Spark retries it)."""


@dataclass(frozen=True)
class Publication:
    """Where a query's totals go, and the transactional ids its tasks take."""

    bootstrap_servers: str
    topic: str
    partitions: int
    prefix: str
    timeout_s: float = 120.0
    producer_config: dict[str, Any] = field(default_factory=lambda: dict(PRODUCER_CONFIG))

    def transactional_id(self, partition: int) -> str:
        return f"{self.prefix}-{partition}"

    @property
    def marker_group(self) -> str:
        return marker_group(self.prefix)


def transactional_prefix(query: str, query_id: str) -> str:
    """The prefix of ``query``'s transactional ids: Spark's id of the query, which its checkpoint keeps over restarts
    and a new checkpoint does not share (so a marker of an earlier query can never skip a batch of this one)."""
    return f"failsafe-{query}-{query_id}"


def marker_group(prefix: str) -> str:
    return f"{prefix}.published"


@dataclass(frozen=True)
class Outcome:
    """What one partition's task did with its batch: ``published`` records, or ``already`` published."""

    partition: int
    records: int
    published: bool
    attempts: int = 1
    elapsed_ms: float = 0.0
    # The producer: "kept" from an earlier batch by this Python worker, "opened" (none kept: init_transactions and the
    # marker's read), "reopened" (the kept one was fenced by another worker's).
    writer: str = "opened"
    worker: int = 0  # the Python worker's pid

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "elapsed_ms": round(self.elapsed_ms, 1)}


@dataclass(frozen=True)
class Clients:
    """Kafka's clients, a fake's in unit tests: ``producer(config)`` and ``consumer(config)``."""

    producer: Callable[[dict], Any]
    consumer: Callable[[dict], Any]


def register(publication: Publication, clients: Clients | None = None) -> None:
    """Give every transactional id of ``publication`` its coordinator state now (``init_transactions``, no
    transaction): Kafka creates ``__transaction_state`` and places each id's state when a client first asks, so a fault
    on the ids' coordinator can name it before the first batch has anything to publish. Harmless to the tasks: each
    calls ``init_transactions`` again."""
    clients = clients or kafka_clients()
    deadline = time.monotonic() + publication.timeout_s
    for partition in range(publication.partitions):
        config = {
            "bootstrap.servers": publication.bootstrap_servers,
            "transactional.id": publication.transactional_id(partition),
        }
        producer = clients.producer(config)
        _until(deadline, lambda producer=producer: producer.init_transactions(_left(deadline)), "init_transactions")


def kafka_clients() -> Clients:
    from confluent_kafka import Consumer, Producer

    return Clients(lambda config: Producer(secured(config)), lambda config: Consumer(secured(config)))


@dataclass
class Writer:
    """A partition's transactional producer and a consumer of its marker group, and the marker as far as this producer
    knows it: one past the last batch published to the partition (None: none)."""

    producer: Any
    marker: Any
    published_up_to: int | None

    def close(self) -> None:
        self.marker.close()
        # Anything still queued belongs to a transaction that was not committed: drop it, do not send it.
        self.producer.purge()


# The writers a Python worker keeps between batches, by (bootstrap servers, transactional id): Spark reuses its Python
# workers (spark.python.worker.reuse), so a worker that published a partition before skips init_transactions and the
# marker's read the next time it gets that partition.
WORKER_WRITERS: dict[tuple[str, str], Writer] = {}


def publish_partition(
    publication: Publication,
    batch_id: int,
    partition: int,
    records: list[tuple[str | None, str]],
    clients: Clients | None = None,
    writers: dict[tuple[str, str], Writer] | None = None,
) -> Outcome:
    """Batch ``batch_id``'s ``records`` (key, value) into ``partition`` once, in one transaction with its marker.

    ``writers``: the writers kept from earlier batches (WORKER_WRITERS in an executor; none by default). A kept
    writer's knowledge of the marker is exact while its producer's epoch is the id's latest: only a producer of this
    id commits the partition's marker, and any other that starts fences this one first. So a kept writer skips a
    batch it knows published, and writes otherwise; if another worker's producer of the id fenced it meanwhile, its
    transaction fails before it commits, and a writer opened anew (init_transactions, the marker's read) decides
    again. A writer opened by this call and fenced is a zombie: PublishFenced.
    """
    clients = clients or kafka_clients()
    writers = {} if writers is None else writers
    started = time.monotonic()
    deadline = started + publication.timeout_s
    key = (publication.bootstrap_servers, publication.transactional_id(partition))
    writer = writers.pop(key, None)
    attempts, how = 0, "kept" if writer is not None else "opened"
    try:
        while True:
            if writer is None:
                writer = open_writer(publication, partition, clients, deadline)
            if writer.published_up_to is not None and writer.published_up_to > batch_id:
                outcome = Outcome(partition, len(records), False, attempts, _ms(started), how, os.getpid())
                break
            attempts += 1
            try:
                _transact(writer, publication, batch_id, partition, records, deadline)
            except _Aborted:
                continue
            except PublishFenced:
                if how != "kept":  # a producer this task opened: a newer attempt took the id
                    raise
                writer.close()
                writer, how = None, "reopened"  # fenced by a producer of the id in another worker: open anew
                continue
            writer.published_up_to = batch_id + 1
            outcome = Outcome(partition, len(records), True, attempts, _ms(started), how, os.getpid())
            break
    except BaseException:
        if writer is not None:
            writer.close()
        raise
    writers[key] = writer
    return outcome


def open_writer(publication: Publication, partition: int, clients: Clients, deadline: float) -> Writer:
    """A new producer of the partition's transactional id, past ``init_transactions`` (which fences every older one and
    settles its transaction), and the marker as it then stands: the transaction coordinator answers InitProducerId
    only once the id's earlier transaction is complete (CONCURRENT_TRANSACTIONS until then), its markers written to
    every partition it touched, the marker group's ``__consumer_offsets`` partition among them."""
    producer = clients.producer(
        {
            "bootstrap.servers": publication.bootstrap_servers,
            **publication.producer_config,
            "transactional.id": publication.transactional_id(partition),
        }
    )
    marker = clients.consumer(
        {
            "bootstrap.servers": publication.bootstrap_servers,
            "group.id": publication.marker_group,
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
        }
    )
    writer = Writer(producer, marker, None)
    try:
        _until(deadline, lambda: producer.init_transactions(_left(deadline)), "init_transactions")
        read = _until(deadline, lambda: published_up_to(marker, publication.topic, [partition]), "the marker's read")
    except BaseException:
        writer.close()
        raise
    writer.published_up_to = read[partition]
    return writer


class _Aborted(Exception):
    """The transaction was aborted on an abortable or retriable error: the batch is written again in a new one."""


def _transact(
    writer: Writer,
    publication: Publication,
    batch_id: int,
    partition: int,
    records: list[tuple[str | None, str]],
    deadline: float,
) -> None:
    """The records and the marker ``batch_id + 1`` in one transaction."""
    from confluent_kafka import KafkaException, TopicPartition

    producer = writer.producer
    headers = [(BATCH_HEADER, str(batch_id).encode())]
    try:
        producer.begin_transaction()
        for key, value in records:
            _produce(producer, publication.topic, partition, key, value, headers)
        offsets = [TopicPartition(publication.topic, partition, batch_id + 1)]
        producer.send_offsets_to_transaction(offsets, writer.marker.consumer_group_metadata(), _left(deadline))
        _commit(producer, deadline)
    except KafkaException as e:
        error = e.args[0] if e.args else None
        if _fatal(error):
            raise PublishFenced(f"partition {partition} of batch {batch_id}: {error}") from e
        again = error is not None and (error.txn_requires_abort() or retriable(e))
        if not again or time.monotonic() >= deadline:
            raise PublishFailed(f"partition {partition} of batch {batch_id}: {error or e}") from e
        producer.abort_transaction(_left(deadline))
        raise _Aborted from e


def publish_rows(publication: Publication, batch_id: int, rows: Iterable[Any]) -> Iterator[dict[str, Any]]:
    """An executor's ``mapPartitions`` body: its rows (partition, key, value) published per output partition, by the
    writers this Python worker keeps."""
    by_partition: dict[int, list[tuple[str | None, str]]] = {}
    for row in rows:
        by_partition.setdefault(int(row["partition"]), []).append((row["key"], row["value"]))
    for partition in sorted(by_partition):
        yield publish_partition(
            publication, batch_id, partition, by_partition[partition], writers=WORKER_WRITERS
        ).as_dict()


def published_up_to(marker: Any, topic: str, partitions: list[int]) -> dict[int, int | None]:
    """The marker group's committed offset of each partition: one past the last batch published there (None: none).
    A partition the coordinator answered with an error raises it (KafkaException)."""
    from confluent_kafka import KafkaException, TopicPartition

    answered = marker.committed([TopicPartition(topic, p) for p in partitions], timeout=10)
    errors = [tp.error for tp in answered if tp.error is not None]
    if errors:
        raise KafkaException(errors[0])
    return {tp.partition: tp.offset if tp.offset >= 0 else None for tp in answered}


def _produce(producer: Any, topic: str, partition: int, key: str | None, value: str, headers: list) -> None:
    while True:
        try:
            producer.produce(topic, value=value, key=key, partition=partition, headers=headers)
            producer.poll(0)
            return
        except BufferError:
            producer.poll(0.1)  # the local queue is full: serve delivery reports until it has room


def _commit(producer: Any, deadline: float) -> None:
    """commit_transaction, again on a retriable error (the transaction stays as it was: librdkafka's contract)."""
    from confluent_kafka import KafkaException

    while True:
        try:
            producer.commit_transaction(_left(deadline))
            return
        except KafkaException as e:
            if not retriable(e) or time.monotonic() >= deadline:
                raise


def _until(deadline: float, call: Callable[[], Any], what: str) -> Any:
    """``call`` again on a retriable Kafka error until it succeeds or the deadline passes: retriable as Kafka says, not
    only as librdkafka flags it (a committed() answered NOT_COORDINATOR, unflagged, while the coordinator moved)."""
    from confluent_kafka import KafkaException

    while True:
        try:
            return call()
        except KafkaException as e:
            error = e.args[0] if e.args else None
            if _fatal(error):
                raise PublishFenced(f"{what}: {error}") from e
            if not retriable(e) or time.monotonic() >= deadline:
                raise PublishFailed(f"{what}: {error or e}") from e
            time.sleep(RETRY_BACKOFF_S)  # a back-off between tries (librdkafka's retry.backoff.ms), not a wait on state


def _fatal(error: Any) -> bool:
    """The producer is unusable (fenced, most often): librdkafka flags the error fatal, or, from ``produce()`` once the
    producer has learned it, answers with the code _FATAL and no flag (seen with librdkafka 2.16.0)."""
    from confluent_kafka import KafkaError

    return error is not None and (getattr(error, "fatal", lambda: False)() or error.code() == KafkaError._FATAL)


def _left(deadline: float) -> float:
    return max(1.0, deadline - time.monotonic())


def _ms(started: float) -> float:
    return (time.monotonic() - started) * 1000
