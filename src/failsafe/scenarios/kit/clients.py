"""The kit's scenario: topics, verifying producers and consumers, on one cluster; the kinds compose it (the lab is it
alone; txn, share and dr add their own clients and fields).

A producer that promises no durability (acks 0 or 1) may be declared ``may_lose = true``: its lost
writes are then counted against it and are not violations. An acks=all producer cannot be: loss of
its acknowledged writes is INVALID whatever else the scenario allows (the checkers hold to that
from the history too, by the acks each client ran with).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from failsafe.checkers.evidence import ACKS_NAMES, DURABLE_ACKS
from failsafe.faults import Need
from failsafe.faults.nodes import CONSUMER_GROUPS
from failsafe.history.ops import Role, declared_client
from failsafe.scenarios.base import (
    MAX_WORKERS,
    KindInfo,
    Phases,
    Scenario,
    TopicSpec,
    fail,
    fault_context,
    group_name,
    parse_actions,
    parse_checks,
    parse_cluster,
    parse_faults,
    parse_phases,
    positive,
    refuse_unknown,
    scenario_name,
    str_dict,
    tables,
    take,
    topic_name,
    topic_names,
    validate_actions,
    worker_name,
)
from failsafe.workloads.group_settings import GroupSettings
from failsafe.workloads.specs import ConsumerSettings, ProducerSettings

# failsafe's own clients (confluent-kafka), or Kafka's VerifiableProducer / VerifiableConsumer.
DRIVERS = ("failsafe", "kafka-verifiable")
TOP = {
    "name",
    "description",
    "seed",
    "cluster",
    "topics",
    "producers",
    "consumers",
    "faults",
    "actions",
    "phases",
    "checkers",
    "expect",
    "known",
}


@dataclass(frozen=True)
class ProducerGroup(ProducerSettings):
    name: str
    topic: str
    count: int = 1
    driver: str = "failsafe"
    host: str | None = (
        None  # a host of the cluster's inventory to run on (kafka-verifiable only); None: where failsafe runs
    )
    # The producer promises no durability (acks 0 or 1): its lost writes are counted, not violations.
    may_lose: bool = False

    def processes(self) -> list[str]:
        return [f"{self.name}-{i}" for i in range(self.count)] if self.count > 1 else [self.name]


@dataclass(frozen=True)
class ConsumerGroup(ConsumerSettings):
    name: str
    topics: tuple[str, ...]
    group: str | None
    count: int = 1
    driver: str = "failsafe"
    host: str | None = None  # as ProducerGroup's
    # The rebalance protocol and assignor (workloads/group_settings.py), given to either driver in its own words.
    group_protocol: str | None = None
    assignment_strategy: str | None = None
    remote_assignor: str | None = None

    def processes(self) -> list[str]:
        return [f"{self.name}-{i}" for i in range(self.count)]

    def group_settings(self) -> GroupSettings:
        return GroupSettings(self.group_protocol, self.assignment_strategy, self.remote_assignor)


@dataclass(frozen=True)
class ClientsScenario(Scenario):
    topics: tuple[TopicSpec, ...] = ()
    producers: tuple[ProducerGroup, ...] = ()
    consumers: tuple[ConsumerGroup, ...] = ()

    def client_hosts(self) -> dict[str, str]:
        """Each producer or consumer placed on a host (``host``), by name: its host's name."""
        return {c.name: c.host for c in (*self.producers, *self.consumers) if c.host}

    def process_name(self, name: str) -> str:
        """A worker's process as its first start names it (a kind that renames its workers says how)."""
        return name

    def incarnations(self, name: str) -> str:
        """A regular expression every process of worker ``name`` fully matches: NAME, and NAME.N once started again."""
        return re.escape(name) + r"(\.\d+)?"

    def declared_clients(self) -> list[dict[str, Any]]:
        """Each producer and consumer worker, with its topics, group, and whether the scenario lets it lose
        (may_lose)."""
        out = [
            declared_client(
                self.process_name(n), Role.PRODUCER, topics=[p.topic], may_lose=p.may_lose, matches=self.incarnations(n)
            )
            for p in self.producers
            for n in p.processes()
        ]
        out += [
            declared_client(
                self.process_name(n), Role.CONSUMER, topics=c.topics, group=c.group, matches=self.incarnations(n)
            )
            for c in self.consumers
            for n in c.processes()
        ]
        return out

    def checker_options(self) -> dict[str, dict]:
        """The scenario's options, with each group's session given to the rebalance checker."""
        options = super().checker_options()
        sessions = {c.group: ms for c in self.consumers if c.group and (ms := self.session_ms(c)) is not None}
        if sessions:
            # What a frozen member is judged by (checkers/rebalance.py): its group's session.
            options["rebalance"] = {"session_timeout_ms_by_group": sessions, **options.get("rebalance", {})}
        return options

    def session_ms(self, c: ConsumerGroup) -> int | None:
        """The group's session, when the scenario sets it: session_timeout_ms (a KIP-848 group's
        consumer.session.timeout.ms), else the client property, else the cluster's group.consumer.session.timeout.ms for
        a KIP-848 group."""
        if c.session_timeout_ms is not None:
            return c.session_timeout_ms
        setting = c.properties.get("session.timeout.ms")
        if c.group_settings().group_protocol == "consumer":
            setting = self.cluster.overrides.get("group.consumer.session.timeout.ms")
        return int(setting) if setting is not None and str(setting).isdigit() else None

    def manifest(self) -> dict[str, Any]:
        names = [n for p in self.producers for n in p.processes()] + [n for c in self.consumers for n in c.processes()]
        return {
            "topics": [asdict(t) for t in self.topics],
            "producers": [asdict(p) for p in self.producers],
            "consumers": [asdict(c) for c in self.consumers],
            "client_logs": {n: f"logs/{n}.client.log" for n in names},
        }


def _acks(value: object) -> str:
    # TOML reads acks = 1 as an integer: the same as "1".
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise TypeError("expected 0, 1 or all")
    return str(value)


def _assignment(value: object) -> tuple[tuple[int, ...], ...]:
    if not isinstance(value, list) or not all(
        isinstance(r, list) and all(isinstance(b, int) for b in r) for r in value
    ):
        raise TypeError("expected a list of lists of broker ids, e.g. [[0, 1, 2], [1, 2, 0]]")
    return tuple(tuple(r) for r in value)


def parse_workload(
    data: dict, where: str
) -> tuple[tuple[TopicSpec, ...], tuple[ProducerGroup, ...], tuple[ConsumerGroup, ...]]:
    """The lab's own tables: topics, producers, consumers (the DR kind takes the same)."""
    topics = tuple(
        take(
            t,
            f"{where}.topics[{i}]",
            TopicSpec,
            ("name", "partitions", "replication_factor"),
            {"name": topic_name, "configs": str_dict, "replica_assignment": _assignment},
        )
        for i, t in enumerate(tables(data, "topics", where))
    )
    producers = tuple(
        take(
            p,
            f"{where}.producers[{i}]",
            ProducerGroup,
            ("name", "topic"),
            {"name": worker_name, "topic": topic_name, "rate_per_s": positive, "properties": str_dict, "acks": _acks},
        )
        for i, p in enumerate(tables(data, "producers", where))
    )
    # A consumer table without 'group' means manual assignment.
    consumers = tuple(
        take(
            {"group": None, **c} if isinstance(c, dict) else c,
            f"{where}.consumers[{i}]",
            ConsumerGroup,
            ("name", "topics", "group"),
            {
                "name": worker_name,
                "topics": topic_names,
                "properties": str_dict,
                "group": lambda g: None if g is None else group_name(g),
            },
        )
        for i, c in enumerate(tables(data, "consumers", where))
    )
    return topics, producers, consumers


def parse_clients(
    data: dict,
    kind: KindInfo,
    cls: type[ClientsScenario],
    top: set[str] = TOP,
    clients: Mapping[str, tuple[str, ...]] | None = None,
    **extra: Any,
) -> ClientsScenario:
    """A scenario of the kit from its table (``cls``, ``top`` and ``extra``: a kind that adds fields, e.g. the DR kind's
    mirror; ``clients``: the names of the kind's own clients a fault may target, by what they are, besides the
    consumers)."""
    name = scenario_name(data)
    refuse_unknown(data, name, top)
    cluster = parse_cluster(data, name)
    phases = parse_phases(data, name, Phases)
    topics, producers, consumers = parse_workload(data, name)
    _validate_workload(name, cluster.brokers, topics, producers, consumers)
    clients = dict(clients or {})
    # The groups a group-coordinator fault may name: the consumers' and any the kind adds (a txn scenario's
    # processors').
    groups = tuple(dict.fromkeys([*(c.group for c in consumers if c.group), *clients.pop(CONSUMER_GROUPS, ())]))
    # The consumers a consumer fault may name: the consumers' workers and any the kind adds (a share scenario's
    # members).
    members = (*(n for c in consumers for n in c.processes()), *clients.pop(Need.CONSUMERS, ()))
    ctx = fault_context(
        name,
        cluster,
        {t.name: t.partitions for t in topics},
        {Need.CONSUMERS: members, CONSUMER_GROUPS: groups, **clients},
    )
    faults = parse_faults(data, name, kind, ctx, phases)
    actions = parse_actions(data, name, kind)
    checkers, expect, known = parse_checks(data, name, kind)
    scenario = cls(
        name=name,
        description=str(data.get("description", "")),
        seed=str(data.get("seed", "")),
        cluster=cluster,
        faults=faults,
        actions=actions,
        phases=phases,
        checkers=checkers,
        expect=expect,
        known=known,
        raw=data,
        topics=topics,
        producers=producers,
        consumers=consumers,
        **extra,
    )
    validate_actions(scenario, kind)
    return scenario


def _check_host(where: str, host: str | None, driver: str) -> None:
    if host is not None and driver != "kafka-verifiable":
        raise fail(
            f"{where}.host",
            'only driver = "kafka-verifiable" runs on a host (Kafka\'s Java client, whose jars failsafe '
            "copies there); failsafe's own clients run where failsafe runs",
        )


def _validate_workload(
    where: str,
    brokers: int,
    topics: tuple[TopicSpec, ...],
    producers: tuple[ProducerGroup, ...],
    consumers: tuple[ConsumerGroup, ...],
) -> None:
    topic_names = {t.name for t in topics}
    if len(topic_names) != len(topics):
        twice = next(t.name for i, t in enumerate(topics) if t.name in {u.name for u in topics[:i]})
        raise fail(f"{where}.topics", f"two topics are named {twice!r}")
    for i, c in enumerate((*producers, *consumers)):
        if c.count > MAX_WORKERS:
            table = f"producers[{i}]" if i < len(producers) else f"consumers[{i - len(producers)}]"
            raise fail(
                f"{where}.{table}.count",
                f"{c.count} is more than the {MAX_WORKERS} workers one scenario may run of one",
            )
    for i, t in enumerate(topics):
        if t.partitions < 1:
            raise fail(f"{where}.topics[{i}].partitions", f"{t.partitions} must be at least 1")
        if t.replica_assignment is not None and (
            len(t.replica_assignment) != t.partitions
            or any(len(set(r)) != t.replication_factor for r in t.replica_assignment)
        ):
            raise fail(
                f"{where}.topics[{i}].replica_assignment",
                f"needs {t.partitions} lists of {t.replication_factor} distinct broker ids, one per partition",
            )
        if not 1 <= t.replication_factor <= brokers:
            raise fail(
                f"{where}.topics[{i}].replication_factor",
                f"{t.replication_factor} must be between 1 and the {brokers} brokers",
            )
    names = [p.name for p in producers] + [c.name for c in consumers]
    if len(names) != len(set(names)):
        raise fail(where, f"producer and consumer names must be unique: {names}")
    # Each worker's name is its producer's or consumer's and its index: two groups must not make the same one (b with
    # count 2, and b-1).
    processes = Counter([n for p in producers for n in p.processes()] + [n for c in consumers for n in c.processes()])
    twice = sorted(n for n, times in processes.items() if times > 1)
    if twice:
        raise fail(
            where,
            f"two producers or consumers would run a worker named {twice[0]}: rename one (workers are NAME or "
            f"NAME-INDEX)",
        )
    for i, p in enumerate(producers):
        if p.topic not in topic_names:
            raise fail(
                f"{where}.producers[{i}].topic",
                f"{p.topic!r} is not one of the scenario's topics {sorted(topic_names)}",
            )
        if p.acks not in ("0", "1", "all", "-1"):
            raise fail(f"{where}.producers[{i}].acks", f"{p.acks!r} must be 0, 1 or all")
        if p.count < 1:
            raise fail(f"{where}.producers[{i}].count", f"{p.count} must be at least 1")
        if p.driver not in DRIVERS:
            raise fail(f"{where}.producers[{i}].driver", f"{p.driver!r} is not one of {', '.join(DRIVERS)}")
        _check_host(f"{where}.producers[{i}]", p.host, p.driver)
        # The acks it may run with: Java reads acks (the field, or a property of that name), librdkafka the last of its
        # two names.
        acks = {str(p.properties[name]).lower() for name in ACKS_NAMES if name in p.properties} | (
            {p.acks} if "acks" not in p.properties else set()
        )
        if p.may_lose and acks & set(DURABLE_ACKS):
            raise fail(
                f"{where}.producers[{i}].may_lose",
                "an acks=all producer promises durability: failsafe never lets a scenario "
                "allow the loss of its acknowledged writes (may_lose is for acks 0 or 1)",
            )
    for i, c in enumerate(consumers):
        bad = [t for t in c.topics if t not in topic_names]
        if bad or not c.topics:
            raise fail(
                f"{where}.consumers[{i}].topics",
                f"{list(c.topics)!r} must name the scenario's topics {sorted(topic_names)}",
            )
        if c.count < 1:
            raise fail(f"{where}.consumers[{i}].count", f"{c.count} must be at least 1")
        if c.driver not in DRIVERS:
            raise fail(f"{where}.consumers[{i}].driver", f"{c.driver!r} is not one of {', '.join(DRIVERS)}")
        if c.driver == "kafka-verifiable" and (c.group is None or len(c.topics) != 1):
            raise fail(f"{where}.consumers[{i}]", "Kafka's VerifiableConsumer needs a group and exactly one topic")
        _check_host(f"{where}.consumers[{i}]", c.host, c.driver)
        settings = c.group_settings()
        if settings != GroupSettings() and c.group is None:
            raise fail(
                f"{where}.consumers[{i}]", "group_protocol, assignment_strategy and remote_assignor need a group"
            )
        problems = settings.problems(c.session_timeout_ms, c.properties)
        if problems:
            name, why = problems[0]
            raise fail(f"{where}.consumers[{i}].{name}", why)
