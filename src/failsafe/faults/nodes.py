"""Process faults on brokers and controllers: kill -9, SIGTERM, SIGSTOP/SIGCONT, restart, loss of the quorum.

In ZooKeeper mode the controller is a broker (role ``controller`` picks the one ZooKeeper elected)
and the quorum is the ZooKeeper ensemble: quorum-loss stops every ZooKeeper node, seed 004's
"ZooKeeper down" experiment.
"""

from __future__ import annotations

import signal
from typing import Any

from failsafe.cluster.spec import NodeSpec
from failsafe.faults.base import AppliedFault, FaultError, FaultKind, FaultSpec, FaultTargets, Role, Target
from failsafe.supervisor import DOWN, PAUSED

SIGNAL_TIMEOUT_S = 60.0


# The cluster is failsafe.cluster.lifecycle.Cluster: node, node_state, signal_node, restart, active_controller_node, spec.
def choose_brokers(cluster: Any, role: str, partition: dict | None, node: int | None) -> tuple[list[NodeSpec], str]:
    """The brokers a fault acts on and how they were chosen. ``partition`` is the latest topology sample of it."""
    if node is not None:
        return [cluster.node(node, "broker")], f"broker {node}"
    running = [n for n in cluster.spec.brokers_nodes() if cluster.node_state(n) != DOWN]
    if role == Role.CONTROLLER:
        active = cluster.active_controller_node()
        if active is None:
            raise FaultError("no active controller to act on: the quorum has no leader (in ZooKeeper mode: no broker holds /controller)")
        return [active], "active controller"
    if role == Role.ANY:
        if not running:
            raise FaultError("no running broker to act on")
        return [running[-1]], "any"
    if partition is None:
        raise FaultError(f"role {role!r} needs a partition, and no topology sample shows it")
    name = f"{partition['topic']}-{partition['partition']}"
    leader, replicas = partition["leader"], partition["replicas"]
    if role == Role.LEADER:
        if leader < 0:
            raise FaultError(f"{name} has no leader to kill")
        return [cluster.node(leader, "broker")], f"leader of {name}"
    if role == Role.FOLLOWER:
        followers = [r for r in replicas if r != leader and r in partition["isr"]]
        if not followers:
            raise FaultError(f"{name} has no in-sync follower (replicas {replicas}, ISR {partition['isr']})")
        return [cluster.node(followers[0], "broker")], f"follower of {name}"
    if role == Role.REPLICAS:
        return [cluster.node(r, "broker") for r in replicas], f"replicas of {name}"
    raise FaultError(f"unknown role {role!r}")


def _chosen(spec: FaultSpec, targets: FaultTargets) -> tuple[Any, list[NodeSpec], str, Target]:
    cluster: Any = targets.cluster
    partition = targets.partition(spec.partition) if spec.partition else None
    nodes, role = choose_brokers(cluster, spec.role, partition, spec.node)
    return cluster, nodes, role, Target.BROKER if all(n.is_broker for n in nodes) else Target.CONTROLLER


def _stopping(action: str, kind: FaultKind, heals_at_once: bool = False):
    def start(spec: FaultSpec, targets: FaultTargets) -> AppliedFault:
        cluster, nodes, role, target = _chosen(spec, targets)
        for node in nodes:
            cluster.signal_node(node, action, SIGNAL_TIMEOUT_S)
        return AppliedFault(kind, target, [n.node_id for n in nodes], role, lambda: cluster.restart(nodes), heals_at_once)
    return start


kill = _stopping("kill", FaultKind.KILL)
terminate = _stopping("stop", FaultKind.TERMINATE)
# SIGTERM, then the engine undoes it at once: the fault's window is the broker's whole absence.
restart = _stopping("stop", FaultKind.RESTART, heals_at_once=True)


def pause(spec: FaultSpec, targets: FaultTargets) -> AppliedFault:
    cluster, nodes, role, target = _chosen(spec, targets)
    for node in nodes:
        cluster.signal_node(node, "pause", SIGNAL_TIMEOUT_S)

    def resume() -> None:
        for node in nodes:
            if cluster.node_state(node) == PAUSED:
                cluster.signal_node(node, "resume", SIGNAL_TIMEOUT_S)
    return AppliedFault(FaultKind.PAUSE, target, [n.node_id for n in nodes], role, resume)


def quorum_loss(spec: FaultSpec, targets: FaultTargets) -> AppliedFault:
    """Stop every controller, or every ZooKeeper node (SIGTERM); the undo starts them all again."""
    cluster: Any = targets.cluster
    zookeepers = cluster.spec.zookeeper_nodes()
    if zookeepers:
        quorum, role = zookeepers, "all ZooKeeper nodes"
    else:
        quorum, role = [n for n in cluster.spec.controller_nodes() if not n.is_broker], "all controllers"
    if not quorum:
        raise FaultError("quorum-loss needs separate controllers: this cluster runs in combined mode")
    for node in quorum:
        if cluster.node_state(node) != DOWN:
            cluster.signal_node(node, "stop", SIGNAL_TIMEOUT_S)
    return AppliedFault(FaultKind.QUORUM_LOSS, Target.QUORUM, [n.node_id for n in quorum], role, lambda: cluster.restart(quorum))


def cluster_loss(spec: FaultSpec, targets: FaultTargets) -> AppliedFault:
    """kill -9 of every running node, brokers and controllers alike; the undo starts them all and waits until ready."""
    cluster: Any = targets.cluster
    nodes = [n for n in cluster.spec.nodes() if cluster.node_state(n) != DOWN]
    if not nodes:
        raise FaultError("cluster-loss: no node of the cluster is running")
    cluster.stop_nodes(nodes, signal.SIGKILL, SIGNAL_TIMEOUT_S)
    return AppliedFault(FaultKind.CLUSTER_LOSS, Target.CLUSTER, [n.node_id for n in nodes], "every node",
                        lambda: cluster.restart(nodes))
