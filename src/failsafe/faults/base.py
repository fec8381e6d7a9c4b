"""What every fault is: a type in the registry, a spec from the scenario, and an applied fault that can be undone.

A fault type (``FaultType``) declares, in its own module, everything about it that the rest of
failsafe needs:

    name        what scenario files write (``fault = "kill"``)
    family      what kind of fault it is (history.ops.Family), recorded with every start
    needs       what it acts on (``Need``): a scenario kind that does not offer all of it cannot use it
    params      its own fields, a frozen dataclass parsed from the scenario's table (unknown fields refused)
    validate    what a scenario must hold for it (a partition of its topics, a consumer it has), named by field
    fits        why a running cluster cannot take it (e.g. quorum-loss on a combined cluster), or None
    draw        how a randomized campaign draws one (faults/draw.py): its fields, aimed by role, and how
                many brokers and controllers it takes away; None: campaigns do not use it
    cluster_needs   what the cluster must have for it (``protocol_proxy``), turned on for a run that has one
    start       ``start(spec, targets) -> AppliedFault``: chooses its targets when it starts (leadership
                moves, so a scenario names a role, not an id), acts, and returns how to undo it and how
                reports draw it (``label``, a network fault's ``sides``)
    undo        how it is undone, in words

``register`` adds one; failsafe.faults finds its own modules and registers them, and a module
outside failsafe (a test's toy fault) registers its own the same way. The engine records the start
and every undo attempt; an undo is marked done only after its action succeeded, so a failed
restart is tried again by the heal.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol

from failsafe.cluster.site import Leash, RunSite
from failsafe.errors import UserError
from failsafe.faults.draw import Drawer
from failsafe.history.ops import Family, Target

__all__ = [
    "AppliedFault",
    "ClientTargets",
    "FaultContext",
    "FaultError",
    "FaultSpec",
    "FaultStart",
    "FaultTargets",
    "FaultType",
    "Family",
    "NoFields",
    "Need",
    "Target",
    "parse_fields",
]


class FaultError(UserError):
    """A fault that cannot be applied to this cluster as it is now, or a fault table that cannot be run as written."""


class Need(StrEnum):
    """What a fault acts on; a scenario kind offers some of these (its ``offers``) and takes the faults that need no
    more."""

    NODES = "nodes"  # brokers and controllers, chosen by role, id or partition
    QUORUM = "quorum"  # the whole controller quorum (in ZooKeeper mode: the ensemble)
    REGION = "region"  # every node of a cluster at once
    NETWORK = "network"  # links between nodes and to the clients (nodes on addresses of their own, nftables)
    CONSUMERS = "consumers"  # the workload's consumers, by name
    SPARK_DRIVER = "spark-driver"  # the Spark driver the workload runs
    SPARK_WORKERS = "spark-workers"  # the workers of a Spark cluster the workload runs


@dataclass(frozen=True)
class FaultContext:
    """What a scenario tells a fault type when its fault is validated (before anything starts).

    ``topics``: topic -> partitions of the scenario's topics. ``clients``: the names a client fault may
    target, by Need (consumers -> ``member-0``, ...). ``hints``: how the scenario would offer a Need it
    lacks now, for the error message (spark-workers -> 'set pipeline.master = "standalone"').
    """

    where: str
    topics: Mapping[str, int] = field(default_factory=dict)
    brokers: int = 3
    combined: bool = False
    mode: str = ""
    volatile_disks: bool = False  # the scenario's cluster keeps its data on disk layers (power-loss faults need them)
    clients: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    hints: Mapping[str, str] = field(default_factory=dict)

    def fail(self, field_name: str, message: str) -> FaultError:
        return FaultError(
            f"scenario {self.where}.{field_name}: {message}" if field_name else f"scenario {self.where}: {message}"
        )

    def require_client(self, field_name: str, name: str, need: str, noun: str) -> None:
        """``name`` names one of the scenario's clients the kind offers as ``need``, as NAME-INDEX (``member-0``)."""
        names = self.clients.get(need, ())
        if name not in names:
            raise self.fail(field_name, f"{name!r} must name {noun} as NAME-INDEX, one of {', '.join(names) or 'none'}")

    def require_partition(self, field_name: str, partition: str | None) -> None:
        """``partition`` names a partition of the scenario's topics as TOPIC-N."""
        topic, _, number = (partition or "").rpartition("-")
        if topic not in self.topics or not number.isdigit() or int(number) >= self.topics[topic]:
            example = next(iter(self.topics), "topic")
            raise self.fail(
                field_name, f"{partition!r} must name a partition of the scenario's topics as TOPIC-N, e.g. {example}-0"
            )


@dataclass(frozen=True)
class NoFields:
    """A fault that takes no field of its own."""


@dataclass(frozen=True)
class FaultSpec:
    """One entry of a scenario's fault schedule: which type, when (seconds into chaos), for how long, and its own
    fields.

    ``may_fail``: when the fault cannot start at its time (its partition has no leader, no in-sync
    follower, no active controller), the run records that (a ``fault-not-started`` event) and goes
    on; otherwise the run stops there. Randomized campaigns write it on every fault they draw.
    """

    fault: str
    at_s: float
    duration_s: float | None = None
    params: Any = NoFields()
    may_fail: bool = False


@dataclass
class AppliedFault:
    """A fault as it was applied, how to undo it, and how reports draw it.

    ``undo_action`` None: nothing comes back (a killed consumer stays dead), the fault stops at once.
    ``heals_at_once``: the undo is part of the fault (restart), so the engine runs it right away.
    ``label``: how a report names it when its nodes do not say it; ``sides``: a network fault's sides
    (node labels and ``clients``), recorded as data so nothing has to parse them back from text.
    ``acted_ns``: when the fault acted, for one that first waits on a condition of its own (restart-consumer's
    settled_within_s) or first reads which nodes to act on (a node fault: on hosts, each read is an SSH command);
    None: when it was started.
    """

    kind: str
    target: Target
    nodes: list[int | str]
    role: str
    undo_action: Callable[[], None] | None = None
    heals_at_once: bool = False
    undone: bool = False
    undo_attempts: int = 0
    details: dict = field(default_factory=dict)
    label: str | None = None
    sides: list[list[str]] | None = None
    one_way: bool | None = None
    loss: float | None = None
    acted_ns: int | None = None
    # What the fault did while in force, known at its undo (a protocol fault's counts): recorded with its stop.
    stop_details: dict | None = None

    def undo(self) -> None:
        """Run the undo; marked undone only when it succeeded, so a failed one can be tried again."""
        if self.undone:
            return
        self.undo_attempts += 1
        if self.undo_action is not None:
            self.undo_action()
        self.undone = True


class ClientTargets(Protocol):
    """The parts of a workload a fault may act on, by the names the scenario gives them."""

    def kill_client(self, name: str) -> None: ...

    def close_client(self, name: str) -> None: ...

    def restart_client(self, name: str) -> None: ...

    # The process a client's name stands for now: the name itself, or its latest incarnation's (member-0.1) once
    # restarted.
    def process_of(self, name: str) -> str: ...

    # Wait up to timeout_s until the consumer groups are settled; what was still unsettled then, or ""
    # (restart-consumer).
    def wait_settled(self, timeout_s: float) -> str: ...

    # Only kinds that offer txn-clients (faults/transactions.py): freeze a client (SIGSTOP) and let it go on (SIGCONT).
    def pause_client(self, name: str) -> None: ...

    def resume_client(self, name: str) -> None: ...

    # Only kinds that offer spark-driver: wait until a micro-batch's publishing job has run for delay_s (at most
    # timeout_s for one to start); which batch it was (kill-driver when = "publishing": the fault's details).
    def wait_publishing(self, delay_s: float, timeout_s: float) -> dict[str, Any]: ...


@dataclass(frozen=True)
class FaultTargets:
    """What the engine hands a fault: the cluster, the workload's clients, and the latest topology."""

    cluster: RunSite  # cluster/site.py
    clients: ClientTargets
    partition: Callable[[str], dict | None]  # "topic-N" -> its latest topology sample
    # The watchdog that deletes a network fault's rules if failsafe dies before the heal (made on first use).
    network_leash: Callable[[], Leash | None] = lambda: None


FaultStart = Callable[[FaultSpec, FaultTargets], AppliedFault]


def _no_check(params: Any, ctx: FaultContext) -> None:
    """A fault whose fields need nothing of the scenario."""


def _fits_any(spec: Any) -> str | None:
    return None


@dataclass(frozen=True)
class FaultType:
    name: str
    family: Family | str
    summary: str
    needs: frozenset[str]  # Need values, or a plug-in's own words
    start: FaultStart
    undo: str
    params: type = NoFields
    validate: Callable[[Any, FaultContext], None] = _no_check
    fits: Callable[[Any], str | None] = _fits_any  # a ClusterSpec -> why it cannot take this fault
    draw: Drawer | None = None  # how a campaign draws one (faults/draw.py); None: campaigns do not use it
    # What a cluster must have for it, as ClusterNeeds fields a run turns on (protocol faults: "protocol_proxy"): a
    # scenario with such a fault gets a cluster with it without saying so.
    cluster_needs: tuple[str, ...] = ()
    # Topic settings without which it acts on nothing (remote-store: a tiered topic): a campaign drawing it gives them
    # to its workload's topics (a setting a topic has already is kept).
    topic_settings: Mapping[str, str] = field(default_factory=dict)

    def parse(self, table: Mapping[str, Any], ctx: FaultContext) -> Any:
        """The fault's own fields from its table (``fault``, ``at_s`` and ``duration_s`` already taken), validated."""
        params = parse_fields(self.params, table, ctx)
        self.validate(params, ctx)
        return params


def parse_fields(cls: type, table: Mapping[str, Any], ctx: FaultContext) -> Any:
    """``cls`` (a dataclass) from ``table``: an unknown field, a missing one or a value of the wrong type is named.

    A field's type is checked against its annotation's plain types (str, int, float, bool, None); a
    field may declare ``metadata={"convert": f}`` to convert and check the value itself.
    """
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(table) - set(fields))
    if unknown:
        known = ", ".join(sorted(["fault", "at_s", "duration_s", "may_fail", *fields]))
        raise ctx.fail(unknown[0], f"is not a field of this fault (its fields: {known})")
    missing = [
        name
        for name, f in fields.items()
        if name not in table and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    ]
    if missing:
        raise ctx.fail(missing[0], "missing")
    converters = {name: f.metadata["convert"] for name, f in fields.items() if "convert" in f.metadata}
    return cls(**typed_fields(cls, table, converters, ctx.fail))


def typed_fields(
    cls: type,
    table: Mapping[str, Any],
    converters: Mapping[str, Callable[[Any], Any]],
    fail: Callable[[str, str], Exception],
) -> dict[str, Any]:
    """The values of ``table`` for the fields of dataclass ``cls``: each through its converter, else checked against its
    plain annotation (str, int, float, bool, None); a bad one raises ``fail(field, message)``. Scenario tables and fault
    tables are read alike (scenarios/base.py ``take`` and ``parse_fields`` above)."""
    values: dict[str, Any] = dict(table)
    for f in dataclasses.fields(cls):
        if f.name not in values:
            continue
        value = values[f.name]
        try:
            if f.name in converters:
                values[f.name] = converters[f.name](value)
            else:
                values[f.name] = typed(
                    value, f.type if isinstance(f.type, str) else getattr(f.type, "__name__", str(f.type))
                )
        except (TypeError, ValueError) as e:
            raise fail(f.name, f"{value!r} is not valid: {e}") from e
    return values


_PLAIN = {"str": str, "int": int, "float": (int, float), "bool": bool}
# Kafka's numbers are 32-bit (partitions, counts, timeouts in ms): what does not fit is refused, never wrapped.
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


def typed(value: Any, annotation: str) -> Any:
    """``value`` checked against a field's annotation when it names only plain types (``int | None``, ``bool``, ...);
    anything else (``dict[str, str]``, ``Any``) is left to the field's own converter. Raises TypeError."""
    if all(part.strip() in (*_PLAIN, "None") for part in annotation.split("|")):
        return _typed(value, annotation)
    return value


def _typed(value: Any, annotation: str) -> Any:
    """``value`` when it is of one of the plain types ``annotation`` names (``int | None``, ``str``, ...)."""
    allowed = [part.strip() for part in annotation.split("|")]
    if value is None and "None" in allowed:
        return value
    for name in allowed:
        kind = _PLAIN.get(name)
        if kind is None:
            continue
        if isinstance(value, bool) and name != "bool":
            continue
        if isinstance(value, kind):
            if name == "float" and not math.isfinite(float(value)):
                raise ValueError("must be a finite number")
            if name == "int" and not INT32_MIN <= value <= INT32_MAX:
                raise ValueError(f"is out of range ({INT32_MIN} to {INT32_MAX})")
            return float(value) if name == "float" else value
    raise TypeError(f"expected {annotation}")
