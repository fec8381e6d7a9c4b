"""What every scenario is, whatever its kind, and the parsing every kind shares.

A scenario is data: cluster, workload (the kind's own tables), fault schedule, actions, phases,
checker options, expectations and known anomalies. Each kind (scenarios/kinds/) parses its own
tables and builds its fault context (its topics, the clients a fault may target); the rest is
parsed and validated here, completely, before anything touches a process, with messages that name
the field and the value (as chaostoolkit's ``ensure_experiment_is_valid`` does).
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from failsafe.checkers import CHECKERS, LOSS_VIOLATIONS, check_options
from failsafe.checkers.common import CheckerOptionError
from failsafe.cluster.profiles import profile_names
from failsafe.cluster.security.modes import MODES as SECURITY_MODES
from failsafe.cluster.spec import MAX_ADDRESSED_BROKERS, MAX_ADDRESSED_CONTROLLERS, ZOOKEEPER_MODE
from failsafe.cluster.spec import MODES as CLUSTER_MODES
from failsafe.errors import UserError
from failsafe.faults import FAULT_TYPES, FaultContext, FaultError, FaultSpec, allowed
from failsafe.faults.base import typed_fields

COMPARATORS = ("==", "!=", "<", "<=", ">", ">=", "all", "any", "none", "contains")
# A scenario's name is a directory of every run of it (runs/NAME/...), a worker's name its process and its log file's:
# one path component of letters, digits, '.', '_' and '-', not '.' or '..' (no run directory lands outside DIR/runs).
NAME_PATTERN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,199}")
# Kafka's own rule for a topic name (Topic.validate): at most 249 of these characters, not '.' or '..'; and not an
# internal topic.
TOPIC_PATTERN = re.compile(r"[A-Za-z0-9._-]{1,249}")
INTERNAL_TOPICS = ("__consumer_offsets", "__transaction_state", "__share_group_state", "__cluster_metadata")
# More workers of one producer or consumer than one machine runs: refused, not a run that cannot start.
MAX_WORKERS = 1000
# The client libraries a known anomaly may name: librdkafka (failsafe's own clients), Kafka's Java client.
CLIENT_LIBRARIES = ("librdkafka", "kafka-java")
# When an action runs: at a time into the chaos phase, or once the recover phase has every partition led.
ACTION_PHASES = ("chaos", "recover")


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
    # Every node's data directory on a disk layer that forgets what was not synced (power-loss faults need it).
    volatile_disks: bool = False
    # A protocol proxy in front of each broker (failsafe up --protocol-proxy): on by itself when a fault needs one.
    protocol_proxy: bool = False
    # Every node's clock settable (failsafe up --clock-faults): on by itself when a fault needs it.
    clock_faults: bool = False
    # Tiered storage (failsafe up --tiered-storage): on by itself when a fault needs it (remote-store).
    tiered_storage: bool = False
    # Every listener's security mode (failsafe up --security, docs/security.md): a cluster the run starts gets it, a
    # running cluster in another mode does not fit. Empty: any cluster's.
    security: str = ""
    # Feature levels a cluster the run starts is formatted with (failsafe up --feature); a running cluster made
    # without them does not fit.
    features: dict[str, str] = field(default_factory=dict)
    # Server properties the cluster needs (failsafe up --override): a cluster the run starts gets them,
    # a running cluster without them does not fit.
    overrides: dict[str, str] = field(default_factory=dict)
    # The profile (cluster/profiles.py) the cluster must have been made with: a cluster the run starts gets it, a
    # running cluster with another does not fit. Empty: any cluster's, and its topic and client settings apply to the
    # run.
    profile: str = ""
    # The Kafka release a cluster the run starts runs (X.Y.Z; empty: failsafe's default); a running cluster on another
    # does not fit. A scenario that rolls the cluster onto another release (the rolling-upgrade action) names it.
    kafka_version: str = ""
    # A cluster the run starts is deleted after it, not stopped: the run leaves it changed for good (upgraded and
    # finalized), so the next run starts from a fresh one.
    delete_after: bool = False
    # A dynamic controller quorum (KIP-853; failsafe up --dynamic-quorum): what add-controller and remove-controller
    # change. A running cluster with a static one does not fit.
    dynamic_quorum: bool = False
    # Brokers the scenario's add-broker actions add to ``brokers`` (ids brokers..brokers+adds_brokers-1, which its
    # faults may name): a cluster the run starts has ``brokers``, a running one fits only with exactly that many.
    adds_brokers: int = 0


@dataclass(frozen=True)
class TopicSpec:
    name: str
    partitions: int
    replication_factor: int
    configs: dict[str, str] = field(default_factory=dict)
    # Replicas placed by hand, one list of broker ids per partition (e.g. a layout blind to racks); None: Kafka places
    # them.
    replica_assignment: tuple[tuple[int, ...], ...] | None = None


@dataclass(frozen=True)
class Phases:
    warmup_s: float = 3.0
    chaos_s: float = 20.0
    recover_s: float = 3.0
    recover_timeout_s: float = 90.0
    drain_timeout_s: float = 60.0


@dataclass(frozen=True)
class ActionSpec:
    action: str
    phase: str = "chaos"
    at_s: float = 0.0
    topic: str | None = None
    # rolling-upgrade: the release every node is rolled onto, and whether the features are finalized at it after.
    to: str | None = None
    finalize: bool = True
    # add-controller: the controller id to add (absent: the first free slot); remove-controller: the one to remove
    # (absent: the active controller); reassign-partitions: the broker the replicas move to (absent: the newest).
    node: int | None = None
    # reassign-partitions: the broker whose replicas move, and the replication throttle in bytes per second per broker
    # (kafka-reassign-partitions --throttle; absent: none).
    source: int | None = None
    throttle: int | None = None
    # set-feature: a KRaft feature (transaction.version, eligible.leader.replicas.version, group.version, ...) and the
    # level it is finalized at (kafka-features upgrade or downgrade).
    feature: str | None = None
    level: int | None = None


@dataclass(frozen=True)
class Expectation:
    name: str
    check: str
    op: str
    value: Any = None
    description: str = ""


@dataclass(frozen=True)
class KnownAnomaly:
    """A violation the scenario expects under a stated condition, with the upstream reference that explains it.

    anomaly: CHECKER.VIOLATION (e.g. delivery.duplicate-acknowledged), one its kind's checkers report.
    client: librdkafka or kafka-java. when: client properties (Kafka's names) that every client on the
    violation's side (its producers, or its consumers: checkers/run.py) ran with, e.g.
    {"enable.idempotence" = "true"}; required, and a property a client did not set never matches.
    """

    anomaly: str
    client: str
    reference: str
    when: dict[str, str] = field(default_factory=dict)
    description: str = ""


@dataclass(frozen=True)
class Scenario:
    """The fields every kind has. ``kind`` is set by the kind that parsed it (scenarios/kinds/)."""

    name: str
    description: str
    seed: str
    cluster: ClusterNeeds
    faults: tuple[FaultSpec, ...]
    actions: tuple[ActionSpec, ...]
    phases: Phases
    checkers: dict[str, dict] = field(default_factory=dict)
    expect: tuple[Expectation, ...] = ()
    known: tuple[KnownAnomaly, ...] = ()
    raw: dict = field(default_factory=dict, compare=False)
    kind: str = ""

    def checker_options(self) -> dict[str, dict]:
        """What each checker is run with: the scenario's [checkers.X] tables (a kind may add what it derives)."""
        return {name: dict(options) for name, options in self.checkers.items()}

    def manifest(self) -> dict[str, Any]:
        """What the run's manifest.json records of the workload (a kind adds its own)."""
        return {}

    def declared_clients(self) -> list[dict[str, Any]]:
        """The clients the scenario declares (history.ops.declared_client), recorded in the history's ``declare`` op
        when the run is set up: what checkers/clients.py accounts for and whom evidence.lossy_writers may let lose."""
        return []


class KindInfo(Protocol):
    """What parsing needs to know of a scenario kind (scenarios/kinds/__init__.py ScenarioKind)."""

    name: str
    offers: frozenset[str]
    checkers: tuple[str, ...]
    actions: Mapping[str, Any]  # name -> scenarios.actions.ActionType


def fail(where: str, message: str) -> ScenarioError:
    return ScenarioError(f"scenario {where}: {message}")


def take(
    data: object,
    where: str,
    cls: type,
    required: tuple[str, ...] = (),
    converters: Mapping[str, Callable] | None = None,
) -> Any:
    """Build ``cls`` from ``data``, naming an unknown or missing field and a value of the wrong type."""
    if not isinstance(data, dict):
        raise fail(where, f"expected a table, got {data!r}")
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise fail(where, f"unknown field {unknown[0]!r} (known: {', '.join(sorted(known))})")
    missing = [f for f in required if f not in data]
    if missing:
        raise fail(where, f"missing field {missing[0]!r}")
    values = typed_fields(cls, data, converters or {}, lambda name, message: fail(f"{where}.{name}", message))
    for f in dataclasses.fields(cls):
        value = values.get(f.name)
        # Counts, sizes, partitions, timeouts and rates: none of a scenario's numbers is negative.
        if isinstance(value, int | float) and not isinstance(value, bool) and value < 0:
            raise fail(f"{where}.{f.name}", f"{value!r} must not be negative")
    return cls(**values)


def topic_names(value: object) -> tuple[str, ...]:
    """A list of topic names (a string alone would read as its characters)."""
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise TypeError('expected a list of topic names, e.g. ["txn-a", "txn-b"]')
    return tuple(topic_name(v) for v in value)


def positive(value: object) -> float:
    """A number of seconds, a rate, a probability: a finite number, not negative (a string of digits is not a
    number)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError("expected a number")
    number = float(value)
    if not math.isfinite(number):
        raise ValueError("must be a finite number")
    if number < 0:
        raise ValueError("must not be negative")
    return number


def worker_name(value: object) -> str:
    """A producer's, consumer's or writer's name: one path component (NAME_PATTERN)."""
    if not isinstance(value, str) or not NAME_PATTERN.fullmatch(value):
        raise ValueError("must be 1-200 letters, digits, '.', '_' or '-', not starting with '.' or '-'")
    return value


def group_name(value: object) -> str:
    """A consumer or share group's id: not empty, no control character."""
    if not isinstance(value, str) or not value.strip() or any(ord(c) < 32 for c in value):
        raise ValueError("must be a non-empty group id")
    return value


def topic_name(value: object) -> str:
    """A topic name Kafka accepts, and not one of its internal topics."""
    if not isinstance(value, str) or not TOPIC_PATTERN.fullmatch(value) or value in (".", ".."):
        raise ValueError("is not a topic name Kafka accepts (1-249 letters, digits, '.', '_' or '-'; not '.' or '..')")
    if value in INTERNAL_TOPICS:
        raise ValueError("is one of Kafka's internal topics")
    return value


def str_dict(value: object) -> dict[str, str]:
    if not isinstance(value, dict):
        raise TypeError("expected a table of key = value")
    return {str(k): str(v).lower() if isinstance(v, bool) else str(v) for k, v in value.items()}


def tables(data: dict, name: str, where: str) -> list:
    value = data.get(name, [])
    if not isinstance(value, list):
        raise fail(f"{where}.{name}", f"expected an array of tables ([[{name}]]), got {value!r}")
    return value


# -- the parts every kind has -------------------------------------------------------------------------
def scenario_name(data: object) -> str:
    if not isinstance(data, dict):
        raise ScenarioError(f"scenario: expected a table, got {type(data).__name__}")
    name = data.get("name")
    if not isinstance(name, str) or not name:
        raise ScenarioError("scenario: missing field 'name'")
    if not NAME_PATTERN.fullmatch(name):
        raise ScenarioError(
            f"scenario.name: {name[:80]!r} must be 1-200 letters, digits, '.', '_' or '-', not starting with '.' or "
            "'-' (it names the directory of its runs)"
        )
    return name


def refuse_unknown(data: dict, where: str, top: set[str]) -> None:
    unknown = sorted(set(data) - top)
    if unknown:
        raise fail(where, f"unknown field {unknown[0]!r} (known: {', '.join(sorted(top))})")


def parse_cluster(data: dict, where: str) -> ClusterNeeds:
    cluster = take(
        data.get("cluster", {}), f"{where}.cluster", ClusterNeeds, (), {"overrides": str_dict, "features": str_dict}
    )
    if cluster.brokers < 1 or cluster.controllers < 1:
        raise fail(f"{where}.cluster", "needs at least one broker and one controller")
    if cluster.brokers + cluster.adds_brokers > MAX_ADDRESSED_BROKERS:
        raise fail(
            f"{where}.cluster.brokers",
            f"{cluster.brokers + cluster.adds_brokers} is more than the {MAX_ADDRESSED_BROKERS} brokers a cluster of "
            "failsafe's has",
        )
    if cluster.security and cluster.security not in SECURITY_MODES:
        raise fail(f"{where}.cluster.security", f"{cluster.security!r} is not one of {', '.join(SECURITY_MODES)}")
    if cluster.adds_brokers < 0:
        raise fail(f"{where}.cluster.adds_brokers", f"{cluster.adds_brokers} must be 0 or more")
    if cluster.controllers > MAX_ADDRESSED_CONTROLLERS:
        raise fail(
            f"{where}.cluster.controllers",
            f"{cluster.controllers} is more than the {MAX_ADDRESSED_CONTROLLERS} controllers a cluster "
            "of failsafe's has",
        )
    if cluster.racks > cluster.brokers:
        raise fail(
            f"{where}.cluster.racks",
            f"{cluster.racks} must be between 1 and the {cluster.brokers} brokers, or 0 for none",
        )
    if cluster.mode not in ("", *CLUSTER_MODES):
        raise fail(
            f"{where}.cluster.mode", f"{cluster.mode!r} is not one of {', '.join(CLUSTER_MODES)} (or absent: either)"
        )
    if cluster.kafka_version and not re.fullmatch(r"\d+\.\d+\.\d+", cluster.kafka_version):
        raise fail(f"{where}.cluster.kafka_version", f"{cluster.kafka_version!r} is not a Kafka release (X.Y.Z)")
    if cluster.mode == ZOOKEEPER_MODE and cluster.combined:
        raise fail(
            f"{where}.cluster", "combined = true is KRaft only: a ZooKeeper-mode cluster has no controller nodes"
        )
    if cluster.profile and cluster.profile not in profile_names():
        raise fail(
            f"{where}.cluster.profile",
            f"{cluster.profile!r} is not one of {', '.join(profile_names())} (failsafe profiles)",
        )
    return cluster


def parse_phases(data: dict, where: str, cls: type[Phases] = Phases) -> Phases:
    return take(data.get("phases", {}), f"{where}.phases", cls, (), {f.name: positive for f in dataclasses.fields(cls)})


def fault_context(
    where: str,
    cluster: ClusterNeeds,
    topics: Mapping[str, int],
    clients: Mapping[str, tuple[str, ...]] | None = None,
    hints: Mapping[str, str] | None = None,
) -> FaultContext:
    return FaultContext(
        where=where,
        topics=dict(topics),
        brokers=cluster.brokers + cluster.adds_brokers,
        combined=cluster.combined,
        mode=cluster.mode,
        volatile_disks=cluster.volatile_disks,
        clients=dict(clients or {}),
        hints=dict(hints or {}),
    )


def parse_faults(data: dict, where: str, kind: KindInfo, ctx: FaultContext, phases: Phases) -> tuple[FaultSpec, ...]:
    """The fault schedule: each fault a type this kind takes, its own fields parsed and validated by the type."""
    takes = allowed(kind.offers)
    out = []
    for i, table in enumerate(tables(data, "faults", where)):
        at = f"{where}.faults[{i}]"
        if not isinstance(table, dict):
            raise fail(at, f"expected a table, got {table!r}")
        name = table.get("fault")
        if name is None:
            raise fail(at, "missing field 'fault'")
        if not isinstance(name, str):
            raise fail(f"{at}.fault", f"{name!r} is not a fault type's name (one of {', '.join(allowed(kind.offers))})")
        if name not in takes:
            also = f" ({name!r} needs what {kind.name} scenarios do not offer)" if name in FAULT_TYPES else ""
            raise fail(f"{at}.fault", f"{name!r} is not one of {', '.join(takes)}{also}")
        if "at_s" not in table:
            raise fail(at, "missing field 'at_s'")
        timing = {}
        for key in ("at_s", "duration_s"):
            if key in table:
                try:
                    timing[key] = positive(table[key])
                except (TypeError, ValueError) as e:
                    raise fail(f"{at}.{key}", f"{table[key]!r} is not valid: {e}") from e
        if timing["at_s"] > phases.chaos_s:
            raise fail(f"{at}.at_s", f"{timing['at_s']:g} is after the chaos phase ends ({phases.chaos_s:g}s)")
        may_fail = table.get("may_fail", False)
        if not isinstance(may_fail, bool):
            raise fail(f"{at}.may_fail", f"{may_fail!r} is not true or false")
        own = {k: v for k, v in table.items() if k not in ("fault", "at_s", "duration_s", "may_fail")}
        try:
            params = FAULT_TYPES[name].parse(own, dataclasses.replace(ctx, where=at))
        except FaultError as e:
            raise ScenarioError(str(e)) from e
        out.append(FaultSpec(fault=name, params=params, may_fail=may_fail, **timing))
    return tuple(out)


def parse_actions(data: dict, where: str, kind: KindInfo) -> tuple[ActionSpec, ...]:
    out = []
    for i, table in enumerate(tables(data, "actions", where)):
        a = take(table, f"{where}.actions[{i}]", ActionSpec, ("action",), {"at_s": positive})
        if a.action not in kind.actions:
            takes = ", ".join(kind.actions) or "none"
            raise fail(
                f"{where}.actions[{i}].action",
                f"{a.action!r} is not an action {kind.name} scenarios take (they take: {takes})",
            )
        if a.phase not in ACTION_PHASES:
            raise fail(f"{where}.actions[{i}].phase", f"{a.phase!r} must be chaos or recover")
        out.append(a)
    return tuple(out)


def validate_actions(scenario: Scenario, kind: KindInfo) -> None:
    """What each action needs of the scenario as a whole (migrate: a ZooKeeper-mode cluster)."""
    for i, a in enumerate(scenario.actions):
        why = kind.actions[a.action].validate(a, scenario)
        if why:
            raise fail(f"{scenario.name}.actions[{i}]", why)


def parse_checks(
    data: dict, where: str, kind: KindInfo
) -> tuple[dict[str, dict], tuple[Expectation, ...], tuple[KnownAnomaly, ...]]:
    """[checkers.X] options, [[expect]] and [[known]], each checked against what the kind's checkers take and report."""
    checkers = data.get("checkers", {})
    if not isinstance(checkers, dict):
        raise fail(f"{where}.checkers", "expected tables [checkers.NAME] of options")
    for name, options in checkers.items():
        at = f"{where}.checkers.{name}"
        if name not in kind.checkers:
            raise fail(
                at,
                f"{name!r} is not a checker of {kind.name} scenarios (they are checked by {', '.join(kind.checkers)})",
            )
        if not isinstance(options, dict):
            raise fail(at, "expected a table of options")
        if "allow_loss" in options:
            raise fail(
                f"{at}.allow_loss",
                "there is no checker-wide allowance of loss: set may_lose = true on the producers that "
                "promise no durability (acks 0 or 1); an acks=all producer's loss is always a violation",
            )
        if "lossy_writers" in options:
            raise fail(
                f"{at}.lossy_writers",
                "is derived from the producers: set may_lose = true on the producers that may lose",
            )
        for excuse in (
            "allow",
            "allow_duplicates",
            "groups",
            "idempotent_producers",
            "delivery_count_limit",
            "lock_duration_ms",
            "lock_slack_ms",
            "from_first_delivered",
        ):
            if excuse in options and not (name == "enriched" and excuse == "allow_duplicates"):
                raise fail(
                    f"{at}.{excuse}",
                    "no checker option can excuse a violation or choose what is judged: a behaviour the scenario "
                    "expects is a cited [[known]] entry (never a loss), and what the clients and groups ran with is "
                    "read from the history",
                )
        try:
            check_options(name, options)
        except CheckerOptionError as e:
            raise fail(at, str(e)) from e
    expect = tuple(
        take(e, f"{where}.expect[{i}]", Expectation, ("name", "check", "op"))
        for i, e in enumerate(tables(data, "expect", where))
    )
    for i, e in enumerate(expect):
        if e.op not in COMPARATORS:
            raise fail(f"{where}.expect[{i}].op", f"{e.op!r} is not one of {' '.join(COMPARATORS)}")
    known = tuple(
        take(k, f"{where}.known[{i}]", KnownAnomaly, ("anomaly", "client", "reference"), {"when": str_dict})
        for i, k in enumerate(tables(data, "known", where))
    )
    for i, k in enumerate(known):
        _validate_known(k, f"{where}.known[{i}]", kind)
    return dict(checkers), expect, known


def _validate_known(k: KnownAnomaly, at: str, kind: KindInfo) -> None:
    checker, _, violation = k.anomaly.partition(".")
    if not checker or not violation:
        raise fail(f"{at}.anomaly", f"{k.anomaly!r} must be CHECKER.VIOLATION, e.g. delivery.duplicate-acknowledged")
    if k.anomaly in LOSS_VIOLATIONS:
        raise fail(
            f"{at}.anomaly",
            f"{k.anomaly!r}: a lost acknowledged write (or a partition that never came back) is never a known anomaly",
        )
    if checker not in kind.checkers:
        raise fail(
            f"{at}.anomaly",
            f"{checker!r} is not a checker of {kind.name} scenarios (they are checked by {', '.join(kind.checkers)})",
        )
    declared = CHECKERS[checker].violations
    if violation not in declared:
        raise fail(
            f"{at}.anomaly",
            f"the {checker} checker reports no violation {violation!r}: it reports {', '.join(declared)}",
        )
    if k.client not in CLIENT_LIBRARIES:
        raise fail(f"{at}.client", f"{k.client!r} is not one of {', '.join(CLIENT_LIBRARIES)}")
    if not k.when:
        raise fail(
            f"{at}.when",
            "a known anomaly needs its condition: the client settings under which it is known, "
            'e.g. when = { "enable.idempotence" = "true" }',
        )
    if not k.reference.strip():
        raise fail(f"{at}.reference", "a known anomaly needs the upstream reference that explains it")
