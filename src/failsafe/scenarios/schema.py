"""A scenario is data: cluster, topics, workloads, fault schedule, checker options and expectations.

``parse_scenario`` validates a whole scenario before anything touches a process, with messages that
name the field and the value (as chaostoolkit's ``ensure_experiment_is_valid`` does).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, ClassVar

from failsafe.cluster.spec import MODES as CLUSTER_MODES
from failsafe.cluster.spec import ZOOKEEPER_MODE
from failsafe.errors import UserError
from failsafe.faults import CONSUMER_FAULTS, NODE_NETWORK_FAULTS, SIDES_FAULTS, FaultError, FaultKind, FaultSpec, Role
from failsafe.faults.sides import parse_sides

# Every fault but the Spark driver's: the lab's workload has no driver.
FAULTS = tuple(k for k in FaultKind if k not in (FaultKind.KILL_DRIVER, FaultKind.KILL_SPARK_WORKER))
ROLES = tuple(Role)


class ActionKind(StrEnum):
    """Admin actions a scenario takes at a time, recorded as ops."""

    ELECT_LEADERS = "elect-leaders"
    CREATE_TOPIC = "create-topic"
    # The live ZooKeeper-to-KRaft migration (cluster/migration.py), each step recorded as a fault window.
    MIGRATE = "migrate"
    # DR scenarios (kind = "dr"): the clients move to the backup, or back to the primary (scenarios/kinds/dr.py).
    FAILOVER = "failover"
    FAILBACK = "failback"


ACTIONS = tuple(ActionKind)
DR_ACTIONS = (ActionKind.FAILOVER, ActionKind.FAILBACK)
# failsafe's own clients (confluent-kafka), or Kafka's VerifiableProducer / VerifiableConsumer.
DRIVERS = ("failsafe", "kafka-verifiable")
COMPARATORS = ("==", "!=", "<", "<=", ">", ">=", "all", "any", "none", "contains")


class ScenarioError(UserError):
    """A scenario that cannot be run as written."""


@dataclass(frozen=True)
class ClusterNeeds:
    brokers: int = 3
    controllers: int = 1
    combined: bool = False
    # "kraft" or "zookeeper" when the scenario is about one mode; empty: it runs in either (failsafe run --mode).
    mode: str = ""
    # Racks the brokers are split into (broker.rack); 0: none needed.
    racks: int = 0
    # Server properties the cluster needs (failsafe up --override): a cluster the run starts gets them,
    # a running cluster without them does not fit.
    overrides: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class TopicSpec:
    name: str
    partitions: int
    replication_factor: int
    configs: dict[str, str] = field(default_factory=dict)
    # Replicas placed by hand, one list of broker ids per partition (e.g. a layout blind to racks); None: Kafka places them.
    replica_assignment: tuple[tuple[int, ...], ...] | None = None


@dataclass(frozen=True)
class ProducerGroup:
    name: str
    topic: str
    count: int = 1
    rate_per_s: float = 200.0
    keys: int = 16
    acks: str = "all"
    idempotence: bool | None = None
    retries: int | None = None
    linger_ms: int | None = None
    delivery_timeout_ms: int | None = None
    record_size: int = 0
    properties: dict[str, str] = field(default_factory=dict)
    driver: str = "failsafe"


@dataclass(frozen=True)
class ConsumerGroup:
    name: str
    topics: tuple[str, ...]
    group: str | None
    count: int = 1
    session_timeout_ms: int | None = None
    properties: dict[str, str] = field(default_factory=dict)
    driver: str = "failsafe"


@dataclass(frozen=True)
class ActionSpec:
    action: str
    phase: str = "chaos"
    at_s: float = 0.0
    topic: str | None = None


@dataclass(frozen=True)
class Phases:
    warmup_s: float = 3.0
    chaos_s: float = 20.0
    recover_s: float = 3.0
    recover_timeout_s: float = 90.0
    drain_timeout_s: float = 60.0


@dataclass(frozen=True)
class Expectation:
    name: str
    check: str
    op: str
    value: Any = None
    description: str = ""


# The client library each driver's producer is: what a known anomaly's ``client`` names.
CLIENT_OF_DRIVER = {"failsafe": "librdkafka", "kafka-verifiable": "kafka-java"}
# A lost acknowledged write is what failsafe exists to find: never a known anomaly.
NEVER_KNOWN_PREFIX = "delivery.lost"


@dataclass(frozen=True)
class KnownAnomaly:
    """A violation the scenario expects under a stated condition, with the upstream reference that explains it.

    anomaly: CHECKER.VIOLATION (e.g. delivery.duplicate-acknowledged). client: librdkafka or kafka-java.
    when: producer properties (Kafka's names) that every producer of the run must have, e.g.
    {"enable.idempotence" = "true"}; a property the producer does not set never matches.
    """

    anomaly: str
    client: str
    reference: str
    when: dict[str, str] = field(default_factory=dict)
    description: str = ""


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    seed: str
    cluster: ClusterNeeds
    topics: tuple[TopicSpec, ...]
    producers: tuple[ProducerGroup, ...]
    consumers: tuple[ConsumerGroup, ...]
    faults: tuple[FaultSpec, ...]
    actions: tuple[ActionSpec, ...]
    phases: Phases
    checkers: dict[str, dict]
    expect: tuple[Expectation, ...]
    known: tuple[KnownAnomaly, ...] = ()
    raw: dict = field(default_factory=dict, compare=False)
    kind: ClassVar[str] = "lab"


def _fail(where: str, message: str) -> ScenarioError:
    return ScenarioError(f"scenario {where}: {message}")


def _take(data: dict, where: str, cls: type, required: tuple[str, ...], converters: dict | None = None) -> Any:
    """Build ``cls`` from ``data``, naming an unknown or missing field and a value of the wrong type."""
    if not isinstance(data, dict):
        raise _fail(where, f"expected a table, got {data!r}")
    known = set(cls.__dataclass_fields__)
    unknown = sorted(set(data) - known)
    if unknown:
        raise _fail(where, f"unknown field {unknown[0]!r} (known: {', '.join(sorted(known))})")
    missing = [f for f in required if f not in data]
    if missing:
        raise _fail(where, f"missing field {missing[0]!r}")
    values = dict(data)
    for name, convert in (converters or {}).items():
        if name in values:
            try:
                values[name] = convert(values[name])
            except (TypeError, ValueError) as e:
                raise _fail(f"{where}.{name}", f"{values[name]!r} is not valid: {e}") from e
    return cls(**values)


def _positive(value: object) -> float:
    number = float(value)  # type: ignore[arg-type]
    if number < 0:
        raise ValueError("must not be negative")
    return number


def _assignment(value: object) -> tuple[tuple[int, ...], ...]:
    if not isinstance(value, list) or not all(isinstance(r, list) and all(isinstance(b, int) for b in r) for r in value):
        raise TypeError("expected a list of lists of broker ids, e.g. [[0, 1, 2], [1, 2, 0]]")
    return tuple(tuple(r) for r in value)


def _str_dict(value: object) -> dict[str, str]:
    if not isinstance(value, dict):
        raise TypeError("expected a table of key = value")
    return {str(k): str(v).lower() if isinstance(v, bool) else str(v) for k, v in value.items()}


def _check_network_fields(f: FaultSpec, at: str, topic_names: set[str]) -> None:
    network = f.fault in SIDES_FAULTS or f.fault in NODE_NETWORK_FAULTS
    if not network:
        for name in ("sides", "loss", "clients"):
            if getattr(f, name) not in (None, False):
                raise _fail(f"{at}.{name}", f"is for network faults ({', '.join((*SIDES_FAULTS, *NODE_NETWORK_FAULTS))}), not {f.fault}")
        return
    if f.loss is not None and not (isinstance(f.loss, int | float) and 0 < f.loss <= 1):
        raise _fail(f"{at}.loss", f"{f.loss!r} must be a drop probability in (0, 1]")
    if f.fault == FaultKind.LOSSY_LINK and (f.loss is None or f.loss >= 1):
        raise _fail(f"{at}.loss", "a lossy-link needs a drop probability below 1 (e.g. loss = 0.2); for 1 use partition")
    if f.fault not in SIDES_FAULTS:
        if f.sides is not None:
            raise _fail(f"{at}.sides", f"{f.fault} picks its node by role, node or partition: sides are for partition and lossy-link")
        return
    if f.sides is None:
        raise _fail(f"{at}.sides", "missing: name the sides, e.g. sides = \"{leader} | {followers,controllers}\"")
    try:
        parsed = parse_sides(f.sides)
    except FaultError as e:
        raise _fail(f"{at}.sides", str(e)) from e
    if any(t in ("leader", "follower", "followers", "replicas") for side in parsed.sides for t in side):
        if f.partition is None or f.partition.rsplit("-", 1)[0] not in topic_names:
            raise _fail(f"{at}.partition", f"{f.partition!r}: the sides name replicas, so give a partition of the scenario's topics as TOPIC-N")


def parse_scenario(data: dict, cls: type[Scenario] | None = None, **extra: Any) -> Scenario:
    """A lab scenario from its table (``cls`` and ``extra``: a kind that adds fields, e.g. DrScenario's mirror)."""
    name = data.get("name")
    if not isinstance(name, str) or not name:
        raise ScenarioError("scenario: missing field 'name'")
    where = name
    top = {"name", "description", "seed", "cluster", "topics", "producers", "consumers", "faults", "actions", "phases", "checkers", "expect", "known"}
    unknown = sorted(set(data) - top)
    if unknown:
        raise _fail(where, f"unknown field {unknown[0]!r} (known: {', '.join(sorted(top))})")
    cluster = _take(data.get("cluster", {}), f"{where}.cluster", ClusterNeeds, (), {"overrides": _str_dict})
    topics = tuple(_take(t, f"{where}.topics[{i}]", TopicSpec, ("name", "partitions", "replication_factor"),
                         {"configs": _str_dict, "replica_assignment": _assignment})
                   for i, t in enumerate(data.get("topics", [])))
    producers = tuple(_take(p, f"{where}.producers[{i}]", ProducerGroup, ("name", "topic"),
                            {"rate_per_s": _positive, "properties": _str_dict, "acks": str})
                      for i, p in enumerate(data.get("producers", [])))
    consumers = tuple(_take(c, f"{where}.consumers[{i}]", ConsumerGroup, ("name", "topics", "group"),
                            {"topics": tuple, "properties": _str_dict})
                      for i, c in enumerate(_with_group_default(data.get("consumers", []))))
    faults = tuple(_take(f, f"{where}.faults[{i}]", FaultSpec, ("fault", "at_s"), {"at_s": _positive, "duration_s": _positive})
                   for i, f in enumerate(data.get("faults", [])))
    actions = tuple(_take(a, f"{where}.actions[{i}]", ActionSpec, ("action",), {"at_s": _positive})
                    for i, a in enumerate(data.get("actions", [])))
    phases = _take(data.get("phases", {}), f"{where}.phases", Phases, (), {k: _positive for k in Phases.__dataclass_fields__})
    expect = tuple(_take(e, f"{where}.expect[{i}]", Expectation, ("name", "check", "op")) for i, e in enumerate(data.get("expect", [])))
    known = tuple(_take(k, f"{where}.known[{i}]", KnownAnomaly, ("anomaly", "client", "reference"), {"when": _str_dict})
                  for i, k in enumerate(data.get("known", [])))
    scenario = (cls or Scenario)(
        name=name, description=str(data.get("description", "")), seed=str(data.get("seed", "")), cluster=cluster,
        topics=topics, producers=producers, consumers=consumers, faults=faults, actions=actions, phases=phases,
        checkers=dict(data.get("checkers", {})), expect=expect, known=known, raw=data, **extra,
    )
    _validate(scenario)
    return scenario


def _with_group_default(consumers: list) -> list:
    # A consumer table without 'group' means manual assignment; make that explicit for _take.
    return [{"group": None, **c} if isinstance(c, dict) else c for c in consumers]


def _validate(s: Scenario) -> None:
    where = s.name
    topic_names = {t.name for t in s.topics}
    if s.cluster.brokers < 1 or s.cluster.controllers < 1:
        raise _fail(f"{where}.cluster", "needs at least one broker and one controller")
    if s.cluster.mode not in ("", *CLUSTER_MODES):
        raise _fail(f"{where}.cluster.mode", f"{s.cluster.mode!r} is not one of {', '.join(CLUSTER_MODES)} (or absent: either)")
    if s.cluster.mode == ZOOKEEPER_MODE and s.cluster.combined:
        raise _fail(f"{where}.cluster", "combined = true is KRaft only: a ZooKeeper-mode cluster has no controller nodes")
    for i, t in enumerate(s.topics):
        if t.partitions < 1:
            raise _fail(f"{where}.topics[{i}].partitions", f"{t.partitions} must be at least 1")
        if t.replica_assignment is not None and (len(t.replica_assignment) != t.partitions
                                                 or any(len(set(r)) != t.replication_factor for r in t.replica_assignment)):
            raise _fail(f"{where}.topics[{i}].replica_assignment",
                        f"needs {t.partitions} lists of {t.replication_factor} distinct broker ids, one per partition")
        if not 1 <= t.replication_factor <= s.cluster.brokers:
            raise _fail(f"{where}.topics[{i}].replication_factor",
                        f"{t.replication_factor} must be between 1 and the {s.cluster.brokers} brokers")
    names = [p.name for p in s.producers] + [c.name for c in s.consumers]
    if len(names) != len(set(names)):
        raise _fail(where, f"producer and consumer names must be unique: {names}")
    for i, p in enumerate(s.producers):
        if p.topic not in topic_names:
            raise _fail(f"{where}.producers[{i}].topic", f"{p.topic!r} is not one of the scenario's topics {sorted(topic_names)}")
        if p.acks not in ("0", "1", "all", "-1"):
            raise _fail(f"{where}.producers[{i}].acks", f"{p.acks!r} must be 0, 1 or all")
        if p.count < 1:
            raise _fail(f"{where}.producers[{i}].count", f"{p.count} must be at least 1")
        if p.driver not in DRIVERS:
            raise _fail(f"{where}.producers[{i}].driver", f"{p.driver!r} is not one of {', '.join(DRIVERS)}")
    consumer_names = {c.name for c in s.consumers}
    for i, c in enumerate(s.consumers):
        bad = [t for t in c.topics if t not in topic_names]
        if bad or not c.topics:
            raise _fail(f"{where}.consumers[{i}].topics", f"{list(c.topics)!r} must name the scenario's topics {sorted(topic_names)}")
        if c.count < 1:
            raise _fail(f"{where}.consumers[{i}].count", f"{c.count} must be at least 1")
        if c.driver not in DRIVERS:
            raise _fail(f"{where}.consumers[{i}].driver", f"{c.driver!r} is not one of {', '.join(DRIVERS)}")
        if c.driver == "kafka-verifiable" and (c.group is None or len(c.topics) != 1):
            raise _fail(f"{where}.consumers[{i}]", "Kafka's VerifiableConsumer needs a group and exactly one topic")
    for i, f in enumerate(s.faults):
        at = f"{where}.faults[{i}]"
        if f.fault not in FAULTS:
            raise _fail(f"{at}.fault", f"{f.fault!r} is not one of {', '.join(FAULTS)}")
        if f.role not in ROLES:
            raise _fail(f"{at}.role", f"{f.role!r} is not one of {', '.join(ROLES)}")
        if f.fault in CONSUMER_FAULTS:
            if f.consumer is None or f.consumer.rsplit("-", 1)[0] not in consumer_names:
                raise _fail(f"{at}.consumer", f"{f.consumer!r} must name a consumer as NAME-INDEX, e.g. {next(iter(consumer_names), 'queue')}-0")
        elif f.role in (Role.LEADER, Role.FOLLOWER, Role.REPLICAS) and f.node is None:
            if f.partition is None or f.partition.rsplit("-", 1)[0] not in topic_names or not f.partition.rsplit("-", 1)[-1].isdigit():
                raise _fail(f"{at}.partition", f"{f.partition!r} must name a partition of the scenario's topics as TOPIC-N")
        _check_network_fields(f, at, topic_names)
        if f.fault == FaultKind.QUORUM_LOSS and s.cluster.combined:
            raise _fail(at, "quorum-loss needs separate controllers (cluster.combined = false)")
        if f.at_s > s.phases.chaos_s:
            raise _fail(f"{at}.at_s", f"{f.at_s:g} is after the chaos phase ends ({s.phases.chaos_s:g}s)")
    for i, a in enumerate(s.actions):
        if a.action not in ACTIONS:
            raise _fail(f"{where}.actions[{i}].action", f"{a.action!r} is not one of {', '.join(ACTIONS)}")
        if a.phase not in ("chaos", "recover"):
            raise _fail(f"{where}.actions[{i}].phase", f"{a.phase!r} must be chaos or recover")
        if a.action in DR_ACTIONS and s.kind != "dr":
            raise _fail(f"{where}.actions[{i}]", f"{a.action} moves clients between the clusters of a DR pair: it needs kind = \"dr\"")
        if a.action == ActionKind.MIGRATE and s.cluster.mode != ZOOKEEPER_MODE:
            raise _fail(f"{where}.actions[{i}]", "migrate needs a ZooKeeper-mode cluster: set cluster.mode = \"zookeeper\"")
    for i, k in enumerate(s.known):
        at = f"{where}.known[{i}]"
        checker, _, violation = k.anomaly.partition(".")
        if not checker or not violation:
            raise _fail(f"{at}.anomaly", f"{k.anomaly!r} must be CHECKER.VIOLATION, e.g. delivery.duplicate-acknowledged")
        if k.anomaly.startswith(NEVER_KNOWN_PREFIX):
            raise _fail(f"{at}.anomaly", f"{k.anomaly!r}: a lost acknowledged write is never a known anomaly")
        if k.client not in CLIENT_OF_DRIVER.values():
            raise _fail(f"{at}.client", f"{k.client!r} is not one of {', '.join(CLIENT_OF_DRIVER.values())}")
        if not k.reference.strip():
            raise _fail(f"{at}.reference", "a known anomaly needs the upstream reference that explains it")
    for i, e in enumerate(s.expect):
        if e.op not in COMPARATORS:
            raise _fail(f"{where}.expect[{i}].op", f"{e.op!r} is not one of {' '.join(COMPARATORS)}")
