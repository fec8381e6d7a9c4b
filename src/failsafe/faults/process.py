"""Process faults on brokers and controllers: kill -9, SIGTERM, SIGSTOP/SIGCONT, restart, loss of the quorum.

A fault picks its node by role at the moment it starts (the leader of a partition, a follower, the
active controller), because leadership moves: the scenario names a role, not an id.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from failsafe.cluster.lifecycle import DEFAULT_READY_TIMEOUT_S, Cluster, ensure_ports_free
from failsafe.cluster.process import DOWN, PAUSED
from failsafe.cluster.spec import NodeSpec
from failsafe.dist.java import find_java
from failsafe.dist.kafka import kafka_dist
from failsafe.errors import UserError

SIGNAL_TIMEOUT_S = 60.0


class FaultError(UserError):
    """A fault that cannot be applied to this cluster as it is now."""


@dataclass
class ProcessFault:
    """One applied fault and how to undo it."""

    fault: str
    target: str  # broker, controller or quorum
    nodes: list[int]
    role: str
    undo_action: Callable[[], None] | None = None
    undone: bool = False
    details: dict = field(default_factory=dict)

    def undo(self) -> None:
        if not self.undone:
            self.undone = True
            if self.undo_action is not None:
                self.undo_action()


def choose_brokers(cluster: Cluster, role: str, partition: dict | None, node: int | None) -> tuple[list[NodeSpec], str]:
    """The brokers a fault acts on and how they were chosen. ``partition`` is the latest topology sample of it."""
    if node is not None:
        return [cluster.node(node, "broker")], f"broker {node}"
    running = [n for n in cluster.spec.brokers_nodes() if cluster.node_state(n) != DOWN]
    if role == "controller":
        active = cluster.active_controller()
        if active is None:
            raise FaultError("no active controller to act on: the quorum has no leader")
        return [cluster.node(active)], "active controller"
    if role == "any":
        if not running:
            raise FaultError("no running broker to act on")
        return [running[-1]], "any"
    if partition is None:
        raise FaultError(f"role {role!r} needs a partition, and no topology sample shows it")
    name = f"{partition['topic']}-{partition['partition']}"
    leader, replicas = partition["leader"], partition["replicas"]
    if role == "leader":
        if leader < 0:
            raise FaultError(f"{name} has no leader to kill")
        return [cluster.node(leader, "broker")], f"leader of {name}"
    if role == "follower":
        followers = [r for r in replicas if r != leader and r in partition["isr"]]
        if not followers:
            raise FaultError(f"{name} has no in-sync follower (replicas {replicas}, ISR {partition['isr']})")
        return [cluster.node(followers[0], "broker")], f"follower of {name}"
    if role == "replicas":
        return [cluster.node(r, "broker") for r in replicas], f"replicas of {name}"
    raise FaultError(f"unknown role {role!r}")


def _restarter(cluster: Cluster, nodes: list[NodeSpec]) -> Callable[[], None]:
    def restart() -> None:
        # All at once, then one wait until every one of them is registered: two brokers restarted
        # one after the other would double the heal phase.
        down = [n for n in nodes if cluster.node_state(n) == DOWN]
        if down:
            with cluster.dir.lock():
                ensure_ports_free(down)
                cluster.start(down, find_java(), kafka_dist(cluster.spec.kafka_version), DEFAULT_READY_TIMEOUT_S)
    return restart


def apply_node_fault(cluster: Cluster, fault: str, nodes: list[NodeSpec], role: str) -> ProcessFault:
    """kill (SIGKILL), terminate (SIGTERM, controlled shutdown), pause (SIGSTOP) or restart (SIGTERM then start)."""
    target = "broker" if all(n.is_broker for n in nodes) else "controller"
    ids = [n.node_id for n in nodes]
    if fault in ("kill", "terminate", "restart"):
        action = "kill" if fault == "kill" else "stop"
        for node in nodes:
            cluster.signal_node(node, action, SIGNAL_TIMEOUT_S)
        applied = ProcessFault(fault, target, ids, role, _restarter(cluster, nodes))
        if fault == "restart":
            applied.undo()
        return applied
    if fault == "pause":
        for node in nodes:
            cluster.signal_node(node, "pause", SIGNAL_TIMEOUT_S)

        def resume() -> None:
            for node in nodes:
                if cluster.node_state(node) == PAUSED:
                    cluster.signal_node(node, "resume", SIGNAL_TIMEOUT_S)
        return ProcessFault(fault, target, ids, role, resume)
    raise FaultError(f"unknown process fault {fault!r}")


def lose_quorum(cluster: Cluster) -> ProcessFault:
    """Stop every controller (SIGTERM); the undo starts them all and waits until brokers are registered again."""
    controllers = [n for n in cluster.spec.controller_nodes() if not n.is_broker]
    if not controllers:
        raise FaultError("quorum-loss needs separate controllers: this cluster runs in combined mode")
    for node in controllers:
        if cluster.node_state(node) != DOWN:
            cluster.signal_node(node, "stop", SIGNAL_TIMEOUT_S)

    def restore() -> None:
        down = [n for n in controllers if cluster.node_state(n) == DOWN]
        if down:
            with cluster.dir.lock():
                cluster.start(down, find_java(), kafka_dist(cluster.spec.kafka_version), DEFAULT_READY_TIMEOUT_S)
    return ProcessFault("quorum-loss", "quorum", [n.node_id for n in controllers], "all controllers", restore)
