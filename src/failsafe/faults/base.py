"""What every fault is: a kind in the registry, a spec from the scenario, and an applied fault that can be undone.

A fault plug-in is a function ``start(spec, targets) -> AppliedFault``: it chooses what to act on
at the moment it starts (leadership moves, so a scenario names a role, not an id), acts, and
returns how to undo it. The engine records the start and every undo attempt; an undo is marked
done only after its action succeeded, so a failed restart is tried again by the heal.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Protocol

from failsafe.errors import UserError


class FaultKind(StrEnum):
    KILL = "kill"  # SIGKILL (kill -9) of brokers or controllers
    TERMINATE = "terminate"  # SIGTERM: Kafka's controlled shutdown
    PAUSE = "pause"  # SIGSTOP until the undo's SIGCONT
    RESTART = "restart"  # SIGTERM, then started again at once
    QUORUM_LOSS = "quorum-loss"  # every controller stopped (in ZooKeeper mode: every ZooKeeper node)
    CLUSTER_LOSS = "cluster-loss"  # kill -9 of every node of the cluster at once: a region lost (DR scenarios)
    KILL_CONSUMER = "kill-consumer"  # SIGKILL of a consumer: a crash, its group must rebalance
    CLOSE_CONSUMER = "close-consumer"  # a consumer closes and leaves its group
    KILL_DRIVER = "kill-driver"  # SIGKILL of the Spark driver's process group; the undo starts it from its checkpoint
    KILL_SPARK_WORKER = "kill-spark-worker"  # SIGKILL of a standalone Spark worker's group (its executors too); the undo starts it
    # Network faults (faults/network.py): nftables rules in the cluster's own table, deleted by the undo.
    PARTITION = "partition"  # the cluster split into ``sides``, both ways or one way ('A -> B')
    LOSSY_LINK = "lossy-link"  # packets between ``sides`` dropped with probability ``loss``
    ISOLATE = "isolate"  # one node (by role) cut from every other node; its clients keep it unless ``clients``
    CUT_CLIENTS = "cut-clients"  # one broker (by role) cut from the clients only


class Role(StrEnum):
    """How a broker fault picks its nodes when it starts."""

    LEADER = "leader"
    FOLLOWER = "follower"
    REPLICAS = "replicas"
    CONTROLLER = "controller"
    ANY = "any"


class Target(StrEnum):
    """What a fault acts on, as recorded in ``fault-start``."""

    BROKER = "broker"
    CONTROLLER = "controller"
    QUORUM = "quorum"
    CLUSTER = "cluster"
    CONSUMER = "consumer"
    PIPELINE = "pipeline"
    SPARK_WORKER = "spark-worker"
    NETWORK = "network"


class FaultError(UserError):
    """A fault that cannot be applied to this cluster as it is now."""


@dataclass(frozen=True)
class FaultSpec:
    """One entry of a scenario's fault schedule: what, when (seconds into chaos), for how long, on what."""

    fault: str
    at_s: float
    duration_s: float | None = None
    role: str = Role.ANY
    partition: str | None = None
    node: int | None = None
    consumer: str | None = None
    # Network faults: the sides as written ('{leader} | {followers,controllers}'), a drop probability, clients cut too.
    sides: str | None = None
    loss: float | None = None
    clients: bool = False


@dataclass
class AppliedFault:
    """A fault as it was applied, and how to undo it.

    ``undo_action`` None: nothing comes back (a killed consumer stays dead), the fault stops at once.
    ``heals_at_once``: the undo is part of the fault (restart), so the engine runs it right away.
    """

    kind: FaultKind
    target: Target
    nodes: list[int | str]
    role: str
    undo_action: Callable[[], None] | None = None
    heals_at_once: bool = False
    undone: bool = False
    undo_attempts: int = 0
    details: dict = field(default_factory=dict)

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


@dataclass(frozen=True)
class FaultTargets:
    """What the engine hands a fault: the cluster, the workload's clients, and the latest topology."""

    cluster: object  # failsafe.cluster.lifecycle.Cluster; typed loosely so engine tests can hand a fake
    clients: ClientTargets
    partition: Callable[[str], dict | None]  # "topic-N" -> its latest topology sample
    # The watchdog that deletes a network fault's rules if failsafe dies before the heal (made on first use).
    network_leash: Callable[[], object | None] = lambda: None


FaultStart = Callable[[FaultSpec, FaultTargets], AppliedFault]
