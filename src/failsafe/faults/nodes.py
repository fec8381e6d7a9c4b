"""Process faults on brokers and controllers: kill -9, SIGTERM, SIGSTOP/SIGCONT, restart, loss of the quorum, loss of a
region.

In ZooKeeper mode the controller is a broker (role ``controller`` picks the one ZooKeeper elected)
and the quorum is the ZooKeeper ensemble: quorum-loss stops every ZooKeeper node, seed 004's
"ZooKeeper down" experiment.
"""

from __future__ import annotations

import signal
import time
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from failsafe.cluster.observe.coordinators import (
    CONSUMER_OFFSETS_TOPIC,
    SHARE_GROUP_STATE_TOPIC,
    TRANSACTION_STATE_TOPIC,
    coordinator_partition_name,
    share_state_key,
)
from failsafe.cluster.site import RunSite
from failsafe.cluster.spec import NodeSpec
from failsafe.errors import KafkaClientError
from failsafe.faults.base import (
    AppliedFault,
    FaultContext,
    FaultError,
    FaultSpec,
    FaultTargets,
    FaultType,
    Need,
    Target,
)
from failsafe.faults.draw import Arena, Draw, node_by_role
from failsafe.faults.registry import register
from failsafe.history.ops import Family
from failsafe.supervisor import DOWN, PAUSED
from failsafe.tools.admin import topic_id

SIGNAL_TIMEOUT_S = 60.0

KILL = "kill"
TERMINATE = "terminate"
PAUSE = "pause"
RESTART = "restart"
QUORUM_LOSS = "quorum-loss"
CLUSTER_LOSS = "cluster-loss"


class Role(StrEnum):
    """How a node fault picks its nodes when it starts."""

    LEADER = "leader"
    FOLLOWER = "follower"
    REPLICAS = "replicas"
    CONTROLLER = "controller"
    ANY = "any"
    # The leader of the __transaction_state partition of ``transactional_id``, of the __consumer_offsets partition of
    # ``group`` (a consumer group's or a share group's), of the __share_group_state partition of ``group``'s state of
    # ``partition``.
    TXN_COORDINATOR = "txn-coordinator"
    GROUP_COORDINATOR = "group-coordinator"
    SHARE_COORDINATOR = "share-coordinator"


PARTITION_ROLES = (Role.LEADER, Role.FOLLOWER, Role.REPLICAS)
# The names a scenario's transactional clients use (FaultContext.clients): what a txn-coordinator fault may name.
TRANSACTIONAL_IDS = "transactional-ids"
CONSUMER_GROUPS = (
    "consumer-groups"  # a kind's consumer groups, in its fault context's clients (absent: not known at parse time)
)


@dataclass(frozen=True)
class NodeChoice:
    """Which nodes: ``node`` by id, else by ``role`` (of ``partition`` for leader, follower and replicas)."""

    role: str = Role.ANY
    partition: str | None = None
    node: int | None = None
    transactional_id: str | None = None
    group: str | None = None


def check_every_or_chosen(params: NodeChoice, ctx: FaultContext, every: str) -> None:
    """A fault that takes every node by default (``role = every``; with ``node``, that one) or nodes as node faults
    choose them: the fields that name a node by its role need a role."""
    if params.role != every:
        check_node_choice(params, ctx)
        return
    if params.node is not None:
        check_node_choice(NodeChoice(role=Role.ANY, node=params.node), ctx)
    for name in ("partition", "transactional_id", "group"):
        if getattr(params, name) is not None:
            raise ctx.fail(name, f"names a node by its role: set role too (role {every!r} takes every node)")


def check_node_choice(params: NodeChoice, ctx: FaultContext) -> None:
    if params.role not in tuple(Role):
        raise ctx.fail("role", f"{params.role!r} is not one of {', '.join(Role)}")
    if params.node is not None and not 0 <= params.node < ctx.brokers:
        raise ctx.fail("node", f"{params.node} is not a broker of the scenario's cluster (0-{ctx.brokers - 1})")
    if params.role in PARTITION_ROLES and params.node is None:
        ctx.require_partition("partition", params.partition)
    if params.role == Role.TXN_COORDINATOR:
        known = ctx.clients.get(TRANSACTIONAL_IDS, ())
        if params.transactional_id not in known:
            raise ctx.fail(
                "transactional_id",
                f"{params.transactional_id!r} must name one of the scenario's transactional ids: "
                f"{', '.join(known) or 'it has no transactional client'}",
            )
    if params.role in (Role.GROUP_COORDINATOR, Role.SHARE_COORDINATOR) and not params.group:
        raise ctx.fail("group", f"role {params.role} needs the group whose coordinator to act on")
    if params.role == Role.SHARE_COORDINATOR:
        ctx.require_partition("partition", params.partition)
    groups = ctx.clients.get(CONSUMER_GROUPS)
    if (
        params.role in (Role.GROUP_COORDINATOR, Role.SHARE_COORDINATOR)
        and groups is not None
        and params.group not in groups
    ):
        raise ctx.fail(
            "group",
            f"{params.group!r} must name one of the scenario's consumer groups: {', '.join(groups) or 'it has none'}",
        )


# The cluster is failsafe.cluster.topology.lifecycle.Cluster: node, node_state, signal_node, restart,
# active_controller_node, spec.
def choose_brokers(cluster: RunSite, role: str, partition: dict | None, node: int | None) -> tuple[list[NodeSpec], str]:
    """The brokers a fault acts on and how they were chosen. ``partition`` is the latest topology sample of it."""
    if node is not None:
        return [cluster.node(node, "broker")], f"broker {node}"
    running = [n for n in cluster.spec.brokers_nodes() if cluster.node_state(n) != DOWN]
    if role == Role.CONTROLLER:
        active = cluster.active_controller_node()
        if active is None:
            raise FaultError(
                "no active controller to act on: the quorum has no leader (in ZooKeeper mode: no broker holds "
                "/controller)"
            )
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


def chosen(params: NodeChoice, targets: FaultTargets) -> tuple[Any, list[NodeSpec], str]:
    """The cluster, the nodes ``params`` names now, and how they were chosen."""
    cluster: RunSite = targets.cluster
    if params.role in (Role.TXN_COORDINATOR, Role.GROUP_COORDINATOR, Role.SHARE_COORDINATOR) and params.node is None:
        return cluster, *_coordinator(cluster, params, targets)
    partition = targets.partition(params.partition) if params.partition else None
    nodes, role = choose_brokers(cluster, params.role, partition, params.node)
    return cluster, nodes, role


def _coordinator(cluster: RunSite, params: NodeChoice, targets: FaultTargets) -> tuple[list[NodeSpec], str]:
    """The coordinator now: the leader of the internal partition that holds the transactional id's (or group's)
    state."""
    if params.role == Role.TXN_COORDINATOR:
        topic, key, what = (
            TRANSACTION_STATE_TOPIC,
            str(params.transactional_id),
            f"transaction coordinator of {params.transactional_id}",
        )
    elif params.role == Role.SHARE_COORDINATOR:
        name, _, number = str(params.partition).rpartition("-")
        try:
            key = share_state_key(str(params.group), topic_id(cluster.bootstrap_servers, name), int(number))
        except KafkaClientError as e:
            raise FaultError(f"no share coordinator of {params.group}'s {params.partition}: {e}") from e
        topic, what = SHARE_GROUP_STATE_TOPIC, f"share coordinator of {params.group}'s {params.partition}"
    else:
        topic, key, what = CONSUMER_OFFSETS_TOPIC, str(params.group), f"group coordinator of {params.group}"
    name = coordinator_partition_name(topic, key, cluster.spec.overrides)
    partition = targets.partition(name)
    if partition is None:
        raise FaultError(
            f"no {what}: {name} does not exist yet (Kafka creates it when the first client asks for its coordinator)"
        )
    if partition["leader"] < 0:
        raise FaultError(f"no {what}: {name} has no leader")
    return [cluster.node(partition["leader"], "broker")], f"{what} ({name})"


def target_of(nodes: list[NodeSpec]) -> Target:
    return Target.BROKER if all(n.is_broker for n in nodes) else Target.CONTROLLER


def _all_running(cluster: RunSite, nodes: list, name: str) -> None:
    """A node fault acts on running nodes: one that another fault has down (a broker named by id) cannot take it."""
    down = [n for n in nodes if cluster.node_state(n) == DOWN]
    if down:
        raise FaultError(
            f"{name}: {', '.join(f'{n.role} {n.node_id}' for n in down)} is not running (another fault has it down)"
        )


def _stopping(name: str, action: str, heals_at_once: bool = False):
    def start(spec: FaultSpec, targets: FaultTargets) -> AppliedFault:
        cluster, nodes, role = chosen(spec.params, targets)
        _all_running(cluster, nodes, name)
        acted_ns = time.time_ns()
        for node in nodes:
            cluster.signal_node(node, action, SIGNAL_TIMEOUT_S)
        return AppliedFault(
            name,
            target_of(nodes),
            [n.node_id for n in nodes],
            role,
            lambda: cluster.restart(nodes),
            heals_at_once,
            acted_ns=acted_ns,
        )

    return start


def pause(spec: FaultSpec, targets: FaultTargets) -> AppliedFault:
    cluster, nodes, role = chosen(spec.params, targets)
    _all_running(cluster, nodes, PAUSE)
    acted_ns = time.time_ns()
    for node in nodes:
        cluster.signal_node(node, "pause", SIGNAL_TIMEOUT_S)

    def resume() -> None:
        for node in nodes:
            if cluster.node_state(node) == PAUSED:
                cluster.signal_node(node, "resume", SIGNAL_TIMEOUT_S)

    return AppliedFault(PAUSE, target_of(nodes), [n.node_id for n in nodes], role, resume, acted_ns=acted_ns)


def quorum_loss(spec: FaultSpec, targets: FaultTargets) -> AppliedFault:
    """Stop every controller, or every ZooKeeper node (SIGTERM); the undo starts them all again."""
    cluster: RunSite = targets.cluster
    zookeepers = cluster.spec.zookeeper_nodes()
    if zookeepers:
        quorum, role = zookeepers, "all ZooKeeper nodes"
    else:
        quorum, role = [n for n in cluster.spec.controller_nodes() if not n.is_broker], "all controllers"
    if not quorum:
        raise FaultError("quorum-loss needs separate controllers: this cluster runs in combined mode")
    running = [n for n in quorum if cluster.node_state(n) != DOWN]
    acted_ns = time.time_ns()
    for node in running:
        cluster.signal_node(node, "stop", SIGNAL_TIMEOUT_S)
    return AppliedFault(
        QUORUM_LOSS,
        Target.QUORUM,
        [n.node_id for n in quorum],
        role,
        lambda: cluster.restart(quorum),
        acted_ns=acted_ns,
    )


def _separate_controllers(params: object, ctx: FaultContext) -> None:
    if ctx.combined:
        raise ctx.fail("fault", "quorum-loss needs separate controllers (cluster.combined = false)")


def _not_combined(spec: Any) -> str | None:
    return (
        "it runs in combined mode and the scenario stops the controller quorum"
        if getattr(spec, "combined", False)
        else None
    )


def cluster_loss(spec: FaultSpec, targets: FaultTargets) -> AppliedFault:
    """kill -9 of every running node, brokers and controllers alike; the undo starts them all and waits until ready."""
    cluster: RunSite = targets.cluster
    nodes = [n for n in cluster.spec.nodes() if cluster.node_state(n) != DOWN]
    if not nodes:
        raise FaultError("cluster-loss: no node of the cluster is running")
    acted_ns = time.time_ns()
    cluster.stop_nodes(nodes, signal.SIGKILL, SIGNAL_TIMEOUT_S)
    return AppliedFault(
        CLUSTER_LOSS,
        Target.CLUSTER,
        [n.node_id for n in nodes],
        "every node",
        lambda: cluster.restart(nodes),
        acted_ns=acted_ns,
    )


# The roles a campaign aims node faults at; ``replicas`` takes every replica of a partition at once.
CAMPAIGN_ROLES = (Role.LEADER, Role.FOLLOWER, Role.ANY, Role.CONTROLLER, Role.REPLICAS)
# How long the envelope counts a restart (SIGTERM, then started again at once) as a broker away.
RESTART_OCCUPIES_S = 15.0


def draw_node(rng, arena: Arena) -> Draw:
    """A node by one of the campaign's roles; with transactional clients, their transaction coordinator is one more
    role."""
    roles = CAMPAIGN_ROLES + ((Role.TXN_COORDINATOR,) if arena.txn_clients else ())
    fields, brokers, controllers = node_by_role(rng, arena, roles)
    return Draw(fields, brokers, controllers)


def draw_restart(rng, arena: Arena) -> Draw:
    return Draw(**{**vars(draw_node(rng, arena)), "occupies_s": RESTART_OCCUPIES_S})


def draw_quorum_loss(rng, arena: Arena) -> Draw:
    return Draw({}, 0, arena.controllers)


register(
    FaultType(
        KILL,
        Family.PROCESS,
        "SIGKILL (kill -9) of brokers or controllers chosen by role, id or partition",
        frozenset({Need.NODES}),
        _stopping(KILL, "kill"),
        "started again, and the cluster waited on until ready",
        NodeChoice,
        check_node_choice,
        draw=draw_node,
    )
)
register(
    FaultType(
        TERMINATE,
        Family.PROCESS,
        "SIGTERM: Kafka's controlled shutdown",
        frozenset({Need.NODES}),
        _stopping(TERMINATE, "stop"),
        "started again",
        NodeChoice,
        check_node_choice,
        draw=draw_node,
    )
)
register(
    FaultType(
        PAUSE,
        Family.PROCESS,
        "SIGSTOP: frozen, still holding its sockets",
        frozenset({Need.NODES}),
        pause,
        "SIGCONT",
        NodeChoice,
        check_node_choice,
        draw=draw_node,
    )
)
# SIGTERM, then the engine undoes it at once: the fault's window is the broker's whole absence.
register(
    FaultType(
        RESTART,
        Family.PROCESS,
        "SIGTERM, then started again at once",
        frozenset({Need.NODES}),
        _stopping(RESTART, "stop", heals_at_once=True),
        "part of the fault: started again at once",
        NodeChoice,
        check_node_choice,
        draw=draw_restart,
    )
)
register(
    FaultType(
        QUORUM_LOSS,
        Family.PROCESS,
        "every controller stopped (in ZooKeeper mode: every ZooKeeper node)",
        frozenset({Need.QUORUM}),
        quorum_loss,
        "every one started again",
        validate=_separate_controllers,
        fits=_not_combined,
        draw=draw_quorum_loss,
    )
)
register(
    FaultType(
        CLUSTER_LOSS,
        Family.PROCESS,
        "kill -9 of every node of the cluster at once: a region lost",
        frozenset({Need.REGION}),
        cluster_loss,
        "every node started again",
    )
)
