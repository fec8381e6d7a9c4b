"""What a transactional worker is asked to do: a transactional producer, or a consume-transform-produce worker.

Both travel to the worker as JSON like the other specs (workloads/specs.py), each naming its kind. ``driver`` says which
client runs it: failsafe's librdkafka workers (txn_producer.py, ctp.py), or failsafe's driver on Kafka's Java client
(txn_java.py), whose jars are those of ``kafka_version``; ``properties`` are that client's configs.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields

from failsafe.jvm.kafka import DEFAULT_KAFKA_VERSION
from failsafe.workloads.specs import PRODUCER_DEBUG

TXN_PRODUCER = "txn-producer"
CTP = "consume-transform-produce"
TXN_KINDS = (TXN_PRODUCER, CTP)
LIBRDKAFKA = "librdkafka"
KAFKA_JAVA = "kafka-java"
TXN_DRIVERS = (LIBRDKAFKA, KAFKA_JAVA)
# Short enough that a transaction left open by a killed writer is aborted by its coordinator within a run's
# recover and drain phases; Kafka's default (60 s) would hold every read_committed reader back that long.
DEFAULT_TRANSACTION_TIMEOUT_MS = 10_000


def transactional_config(
    process: str,
    bootstrap_servers: str,
    transactional_id: str,
    transaction_timeout_ms: int,
    client_log: str,
    properties: dict[str, str],
) -> dict[str, object]:
    """A transactional producer's settings: idempotent, acks=all (Kafka requires both of a transactional producer)."""
    config: dict[str, object] = {
        "bootstrap.servers": bootstrap_servers,
        "client.id": process,
        "transactional.id": transactional_id,
        "enable.idempotence": True,
        "acks": "all",
        "transaction.timeout.ms": transaction_timeout_ms,
    }
    if client_log:
        config["debug"] = PRODUCER_DEBUG
    config.update(properties)
    return config


@dataclass(frozen=True, kw_only=True)
class TransactionalSettings:
    """What a scenario says of any transactional client, and what its worker is given: declared once, here.

    ``driver`` says which client runs it; ``properties`` are that client's configs, given last.
    """

    abort_probability: float = 0.1
    transaction_timeout_ms: int = DEFAULT_TRANSACTION_TIMEOUT_MS
    # How long a commit is retried after retriable errors before the producer is replaced (the outcome is then unknown).
    commit_timeout_s: float = 30.0
    properties: dict[str, str] = field(default_factory=dict)
    driver: str = LIBRDKAFKA


@dataclass(frozen=True, kw_only=True)
class WriterSettings(TransactionalSettings):
    """A transactional writer's settings (a scenario's ``[[writers]]``, a worker's TxnProducerSpec)."""

    rate_per_s: float = 20.0
    min_writes: int = 1
    max_writes: int = 8
    keys: int = 16


@dataclass(frozen=True, kw_only=True)
class ProcessorSettings(TransactionalSettings):
    """A consume-transform-produce worker's settings (a scenario's ``[[processors]]``, a worker's CtpSpec)."""

    batch: int = 20


@dataclass(frozen=True)
class TxnProducerSpec(WriterSettings):
    """Transactions of ``min_writes``..``max_writes`` writes over ``topics`` (random topic and key per write), each
    committed, or aborted on purpose with probability ``abort_probability``; ``rate_per_s`` transactions a second (0: as
    fast as it goes).

    ``seed`` makes the sizes, keys and aborts reproducible; ``count`` transactions, None: until stopped.
    """

    KIND = TXN_PRODUCER

    process: str
    topics: tuple[str, ...]
    transactional_id: str
    bootstrap_servers: str = ""
    count: int | None = None
    seed: int = 0
    client_log: str = ""
    kafka_version: str = DEFAULT_KAFKA_VERSION
    # Made by the workload just before a frozen instance goes on, once a newer one holds its transactional.id: a fence
    # stops the Java driver only then (librdkafka's workers are told by SIGUSR1 instead: txn_session.SUPERSEDED).
    superseded_file: str = ""

    def producer_config(self) -> dict[str, object]:
        return transactional_config(
            self.process,
            self.bootstrap_servers,
            self.transactional_id,
            self.transaction_timeout_ms,
            self.client_log,
            self.properties,
        )


@dataclass(frozen=True)
class CtpSpec(ProcessorSettings):
    """Consume-transform-produce: read ``input_topic`` in ``group`` at read_committed, write one record to
    ``output_topic`` per record read, and commit the input offsets inside the same transaction
    (``send_offsets_to_transaction``).

    Each transaction takes up to ``batch`` records; ``abort_probability`` of them are aborted on purpose, and the
    consumer then rewinds to the batch's first offsets (a consumer does not rewind by itself after an abort).
    """

    KIND = CTP

    process: str
    input_topic: str
    output_topic: str
    group: str
    transactional_id: str
    bootstrap_servers: str = ""
    session_timeout_ms: int = 10_000
    seed: int = 0
    consumer_properties: dict[str, str] = field(default_factory=dict)
    client_log: str = ""
    kafka_version: str = DEFAULT_KAFKA_VERSION
    # Made by the workload just before a frozen instance goes on, once a newer one holds its transactional.id: a fence
    # stops the Java driver only then (librdkafka's workers are told by SIGUSR1 instead: txn_session.SUPERSEDED).
    superseded_file: str = ""

    def producer_config(self) -> dict[str, object]:
        return transactional_config(
            self.process,
            self.bootstrap_servers,
            self.transactional_id,
            self.transaction_timeout_ms,
            self.client_log,
            self.properties,
        )

    def consumer_config(self) -> dict[str, object]:
        config: dict[str, object] = {
            "bootstrap.servers": self.bootstrap_servers,
            "client.id": f"{self.process}-in",
            "group.id": self.group,
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "session.timeout.ms": self.session_timeout_ms,
        }
        config.update(self.consumer_properties)
        return config


TxnSpec = TxnProducerSpec | CtpSpec


def txn_spec_to_json(spec: TxnSpec) -> dict:
    return {"kind": spec.KIND, **asdict(spec)}


def txn_spec_from_json(data: dict) -> TxnSpec:
    data = dict(data)
    cls = TxnProducerSpec if data.pop("kind") == TXN_PRODUCER else CtpSpec
    known = {f.name for f in fields(cls)}
    values = {k: v for k, v in data.items() if k in known}
    if cls is TxnProducerSpec:
        values["topics"] = tuple(values["topics"])
    return cls(**values)
