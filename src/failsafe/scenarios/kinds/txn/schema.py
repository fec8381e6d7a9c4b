"""Transaction scenarios: transactional writers and consume-transform-produce workers, with the lab's topics, plain
producers (the processors' input) and consumers (read_committed unless they say otherwise), on one cluster.

    [transactions] version = 1      finalize Kafka's transaction.version (kafka-features) before the run
                                    (absent: as the cluster has it)
    [[writers]]    name, topics, count, rate_per_s, min_writes, max_writes, abort_probability, driver, ...
    [[processors]] name, input, output, group, count, batch, abort_probability, driver, ...

Every client's ``transactional.id`` is its worker's name (``writer-0``): what a txn-coordinator fault names. ``driver``:
``librdkafka`` (failsafe's confluent-kafka workers, the default) or ``kafka-java`` (failsafe's driver on Kafka's Java
client, of the cluster's Kafka version); ``properties`` are that client's configs.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

from failsafe.faults.nodes import CONSUMER_GROUPS, TRANSACTIONAL_IDS
from failsafe.faults.transactions import TXN_CLIENTS
from failsafe.history.ops import Role, declared_client
from failsafe.scenarios.base import (
    MAX_WORKERS,
    KindInfo,
    fail,
    group_name,
    positive,
    refuse_unknown,
    scenario_name,
    str_dict,
    tables,
    take,
    topic_name,
    topic_names,
    worker_name,
)
from failsafe.scenarios.kit.clients import TOP as KIT_TOP
from failsafe.scenarios.kit.clients import ClientsScenario, parse_clients
from failsafe.workloads.txn.specs import TXN_DRIVERS, ProcessorSettings, WriterSettings

TOP = KIT_TOP | {"transactions", "writers", "processors"}
ISOLATION = "isolation.level"
ISOLATION_LEVELS = ("read_committed", "read_uncommitted")


@dataclass(frozen=True)
class Writers(WriterSettings):
    name: str
    topics: tuple[str, ...]
    count: int = 1

    def processes(self) -> list[str]:
        return [f"{self.name}-{i}" for i in range(self.count)]


@dataclass(frozen=True)
class Processors(ProcessorSettings):
    name: str
    input: str
    output: str
    group: str
    count: int = 1

    def processes(self) -> list[str]:
        return [f"{self.name}-{i}" for i in range(self.count)]


@dataclass(frozen=True)
class TransactionSettings:
    # Kafka's transaction.version to finalize before the run (0, 1 or 2 on Kafka 4.x); None: leave the cluster's.
    version: int | None = None


@dataclass(frozen=True)
class TxnScenario(ClientsScenario):
    writers: tuple[Writers, ...] = ()
    processors: tuple[Processors, ...] = ()
    transactions: TransactionSettings = TransactionSettings()

    def declared_clients(self) -> list[dict[str, Any]]:
        """The lab's clients, each transactional writer, and each processor (reading its input in its group)."""
        return [
            *super().declared_clients(),
            *(
                declared_client(n, Role.TXN_WRITER, topics=w.topics, matches=self.incarnations(n))
                for w in self.writers
                for n in w.processes()
            ),
            *(
                declared_client(n, Role.PROCESSOR, topics=[p.input], group=p.group, matches=self.incarnations(n))
                for p in self.processors
                for n in p.processes()
            ),
        ]

    def txn_clients(self) -> list[str]:
        return [n for w in self.writers for n in w.processes()] + [n for p in self.processors for n in p.processes()]

    def manifest(self) -> dict[str, Any]:
        manifest = super().manifest()
        names = self.txn_clients()
        return {
            **manifest,
            "writers": [asdict(w) for w in self.writers],
            "processors": [asdict(p) for p in self.processors],
            "transactions": asdict(self.transactions),
            "client_logs": {**manifest["client_logs"], **{n: f"logs/{n}.client.log" for n in names}},
        }


# What Kafka requires of a transactional producer: a writer's properties may not say otherwise.
REQUIRED_PRODUCER = {"enable.idempotence": ("true",), "acks": ("all", "-1")}


def _probability(value: object) -> float:
    number = positive(value)
    if number > 1:
        raise ValueError("must be between 0 and 1")
    return number


def parse_txn(data: dict, kind: KindInfo) -> TxnScenario:
    name = scenario_name(data)
    refuse_unknown(data, name, TOP)
    writers = tuple(
        take(
            w,
            f"{name}.writers[{i}]",
            Writers,
            ("name", "topics"),
            {
                "name": worker_name,
                "topics": topic_names,
                "rate_per_s": positive,
                "abort_probability": _probability,
                "properties": str_dict,
            },
        )
        for i, w in enumerate(tables(data, "writers", name))
    )
    processors = tuple(
        take(
            p,
            f"{name}.processors[{i}]",
            Processors,
            ("name", "input", "output", "group"),
            {
                "name": worker_name,
                "input": topic_name,
                "output": topic_name,
                "group": group_name,
                "abort_probability": _probability,
                "properties": str_dict,
            },
        )
        for i, p in enumerate(tables(data, "processors", name))
    )
    for table, clients in (("writers", writers), ("processors", processors)):
        for i, client in enumerate(clients):
            if client.count > MAX_WORKERS:
                raise fail(
                    f"{name}.{table}[{i}].count",
                    f"{client.count} is more than the {MAX_WORKERS} workers one scenario may run of one",
                )
    settings = take(data.get("transactions", {}), f"{name}.transactions", TransactionSettings)
    clients = [n for w in writers for n in w.processes()] + [n for p in processors for n in p.processes()]
    kit_data = {k: v for k, v in data.items() if k not in ("writers", "processors", "transactions")}
    scenario = parse_clients(
        kit_data,
        kind,
        TxnScenario,
        TOP,
        clients={
            TXN_CLIENTS: tuple(clients),
            TRANSACTIONAL_IDS: tuple(clients),
            CONSUMER_GROUPS: tuple(p.group for p in processors),
        },
        writers=writers,
        processors=processors,
        transactions=settings,
    )
    # What scenario.json stores, so that a stored run is parsed again whole (failsafe check): every table, not the lab's
    # alone.
    scenario = replace(_with_isolation(scenario), raw=data)
    _validate(scenario)
    return scenario


def _with_isolation(scenario: TxnScenario) -> TxnScenario:
    """Every consumer states its isolation level (read_committed unless it says otherwise), so its client-config op
    records it."""
    consumers = tuple(
        c if ISOLATION in c.properties else replace(c, properties={**c.properties, ISOLATION: "read_committed"})
        for c in scenario.consumers
    )
    return replace(scenario, consumers=consumers)


def _validate(s: TxnScenario) -> None:
    where = s.name
    topics = {t.name for t in s.topics}
    if not s.writers and not s.processors:
        raise fail(where, "a transaction scenario needs [[writers]] or [[processors]]")
    for i, c in enumerate(s.consumers):
        if c.properties[ISOLATION] not in ISOLATION_LEVELS:
            raise fail(
                f"{where}.consumers[{i}].properties", f"{ISOLATION} must be one of {', '.join(ISOLATION_LEVELS)}"
            )
        if c.driver != "failsafe":
            raise fail(
                f"{where}.consumers[{i}].driver", "a transaction scenario's consumers are failsafe's own (librdkafka)"
            )
    for i, client in enumerate(s.writers):
        _check_driver(f"{where}.writers[{i}].driver", client.driver)
    for i, client in enumerate(s.processors):
        _check_driver(f"{where}.processors[{i}].driver", client.driver)
    for i, client in enumerate((*s.writers, *s.processors)):
        table = f"writers[{i}]" if i < len(s.writers) else f"processors[{i - len(s.writers)}]"
        if client.transaction_timeout_ms <= 0:
            raise fail(f"{where}.{table}.transaction_timeout_ms", f"{client.transaction_timeout_ms} must be positive")
        if client.commit_timeout_s <= 0:
            raise fail(f"{where}.{table}.commit_timeout_s", f"{client.commit_timeout_s} must be positive")
        for key, allowed in REQUIRED_PRODUCER.items():
            if key in client.properties and client.properties[key].lower() not in allowed:
                raise fail(
                    f"{where}.{table}.properties",
                    f"{key} = {client.properties[key]!r}: a transactional producer needs {' or '.join(allowed)}",
                )
    for i, w in enumerate(s.writers):
        bad = [t for t in w.topics if t not in topics]
        if bad or not w.topics:
            raise fail(
                f"{where}.writers[{i}].topics", f"{list(w.topics)!r} must name the scenario's topics {sorted(topics)}"
            )
        if not 1 <= w.min_writes <= w.max_writes:
            raise fail(
                f"{where}.writers[{i}]", f"needs 1 <= min_writes <= max_writes (got {w.min_writes}, {w.max_writes})"
            )
        if w.count < 1:
            raise fail(f"{where}.writers[{i}].count", f"{w.count} must be at least 1")
    for i, p in enumerate(s.processors):
        for field_name in ("input", "output"):
            if getattr(p, field_name) not in topics:
                raise fail(
                    f"{where}.processors[{i}].{field_name}",
                    f"{getattr(p, field_name)!r} is not one of the scenario's topics {sorted(topics)}",
                )
        if p.input == p.output:
            raise fail(f"{where}.processors[{i}]", "input and output must be different topics")
        transactional = {t for w in s.writers for t in w.topics} | {q.output for q in s.processors}
        if p.input in transactional:
            # Its end is a transaction marker no reader is ever given, so the drain could not tell when it read it all.
            raise fail(
                f"{where}.processors[{i}].input",
                f"{p.input!r} is written in transactions: a processor reads a topic that "
                "[[producers]] write (the drain cannot yet tell when a transactional input was read to its end)",
            )
        if p.count < 1 or p.batch < 1:
            raise fail(f"{where}.processors[{i}]", "count and batch must be at least 1")
    names = (
        [p.name for p in s.producers]
        + [c.name for c in s.consumers]
        + [w.name for w in s.writers]
        + [p.name for p in s.processors]
    )
    if len(names) != len(set(names)):
        raise fail(where, f"producer, consumer, writer and processor names must be unique: {names}")
    if s.transactions.version is not None and s.transactions.version not in (0, 1, 2):
        raise fail(
            f"{where}.transactions.version", f"{s.transactions.version} must be 0, 1 or 2 (Kafka's transaction.version)"
        )


def _check_driver(where: str, driver: str) -> None:
    if driver not in TXN_DRIVERS:
        raise fail(
            where,
            f"{driver!r} is not one of {', '.join(TXN_DRIVERS)} (failsafe's librdkafka worker, or its driver "
            f"on Kafka's Java client)",
        )
