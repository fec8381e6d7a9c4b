"""A cluster's mode as one object: what KRaft, ZooKeeper and a migration between them do differently, each in one place.

    KRaft       brokers register with a quorum of KRaft controllers; failsafe makes the cluster id and
                formats every node's storage with it; the active controller is the quorum's leader.
    ZooKeeper   (Kafka 3.9.x) brokers register in ZooKeeper; the first broker makes the cluster id,
                read back from /cluster/id once the cluster is ready; the controller is the broker in
                /controller.
    migrating   a live migration to KRaft (cluster/modes/migration.py) under way or stopped half-way:
                ZooKeeper, a KRaft controller in migration mode, and brokers that register in
                ZooKeeper until they are rolled into KRaft. Only 'failsafe migrate' makes one.

``ClusterSpec.mode`` stays the mode's name, as the state file keeps it; ``mode_of(spec)`` is its object.
Code that starts, waits on or describes a cluster asks the mode, never compares names.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from failsafe.cluster.modes import zookeeper
from failsafe.cluster.observe.readiness import quorum_leader
from failsafe.cluster.properties import kraft_properties, zookeeper_broker_properties
from failsafe.cluster.spec import (
    BROKER,
    CONTROLLER,
    DEFAULT_CONTROLLERS,
    DEFAULT_ZOOKEEPER_PORT,
    KRAFT_MODE,
    MIGRATING_MODE,
    ZOOKEEPER_MODE,
    ClusterSpec,
    NodeSpec,
)
from failsafe.cluster.state import ClusterDir, new_cluster_id
from failsafe.errors import UserError
from failsafe.jvm.kafka import DEFAULT_KAFKA_VERSION, DEFAULT_ZOOKEEPER_KAFKA_VERSION
from failsafe.supervisor import UP, ProcessState


class Cluster(Protocol):
    """What a mode reads of a cluster (cluster/topology/lifecycle.py's Cluster is one): typed here, so this module
    imports none of it."""

    spec: ClusterSpec
    dir: ClusterDir
    nodes: Any  # cluster/nodes/control.py's NodeControl: its quorum_state

    def node_state(self, node: NodeSpec) -> ProcessState: ...


class NodeStatus(Protocol):
    """A row of a cluster's status (lifecycle.NodeStatus)."""

    node: NodeSpec
    state: ProcessState


class ClusterMode(Protocol):
    """What differs between the modes; one object per mode."""

    name: str
    # Where brokers register, and what a ready broker is, in the words of start-up's messages.
    registry: str
    registered: str
    # The role of the node that can be the active controller.
    controller_role: str
    # Whether its brokers describe eligible leader replicas (KIP-966): ZooKeeper-mode brokers cannot.
    describes_elr: bool

    def spec_from_options(
        self,
        *,
        controllers: int | None,
        combined: bool,
        zookeepers: int | None,
        zookeeper_port: int | None,
        kafka_version: str | None,
        **fields,
    ) -> ClusterSpec:
        """The spec 'failsafe up' asks for; an option of another mode is one clear line, not ignored."""
        ...

    def quorum(self, spec: ClusterSpec) -> str:
        """What decides who controls the cluster, in a few words ("1 controllers", "1 ZooKeeper node
        (127.0.0.1:2181)")."""
        ...

    def new_cluster_id(self) -> str:
        """The id a new cluster is made with ("" when Kafka makes it itself)."""
        ...

    def formatted_nodes(self, spec: ClusterSpec) -> list[NodeSpec]:
        """The nodes whose storage a new cluster formats with its id before they start."""
        ...

    def kafka_node_properties(self, spec: ClusterSpec, node: NodeSpec, cluster_dir: Path) -> dict[str, str]:
        """A broker's or controller's server-N.properties (a ZooKeeper node's are the same in every mode)."""
        ...

    def active_controller(self, cluster: Cluster) -> int | None:
        """The active controller's node id, as far as failsafe can tell without asking a client API."""
        ...

    def controller_elected(self, spec: ClusterSpec) -> bool:
        """Start-up's last condition once every broker is registered."""
        ...

    def found_cluster_id(self, spec: ClusterSpec) -> str | None:
        """A cluster id Kafka made, readable once the cluster is ready (None: nothing to read)."""
        ...

    def no_controller_note(self, nodes: Sequence[NodeStatus]) -> str | None:
        """Why 'status' shows no active controller although a node that could be it is up (None: no such node)."""
        ...

    def check_can_migrate(self, root: Path) -> None:
        """UserError unless a migration to KRaft can start from this mode."""
        ...

    def check_can_pair(self) -> None:
        """UserError unless a DR pair (MirrorMaker 2 of Kafka 4.x) can be made of clusters in this mode."""
        ...


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'s' if count > 1 else ''}"


def _leader_of_quorum(cluster: Cluster) -> int | None:
    """The KRaft quorum's leader as the running controllers last persisted it, if it is one of them."""
    live = [n for n in cluster.spec.controller_nodes() if cluster.node_state(n) == UP]
    leader = quorum_leader([cluster.nodes.quorum_state(n) for n in live])
    return leader if leader in {n.node_id for n in live} else None


def _zookeeper_controller(cluster: Cluster) -> int | None:
    seen = zookeeper.view(cluster.spec.zookeeper_connect())
    return seen[1] if seen else None


def _zookeeper_style(spec: ClusterSpec, node: NodeSpec, cluster_dir: Path) -> dict[str, str]:
    """Brokers registered in ZooKeeper (broker.id, zookeeper.connect); controllers (a migration's) are KRaft nodes."""
    return (
        zookeeper_broker_properties(spec, node, cluster_dir)
        if node.is_broker
        else kraft_properties(spec, node, cluster_dir)
    )


def _no_quorum_leader(nodes: Sequence[NodeStatus]) -> str | None:
    if any(r.node.is_controller and r.state == UP for r in nodes):
        return "no active controller known yet (the quorum is electing or has not persisted a leader)"
    return None


class KRaftMode:
    name = KRAFT_MODE
    registry = "the controller quorum"
    registered = "registered and unfenced"
    controller_role = CONTROLLER
    describes_elr = True

    def spec_from_options(
        self,
        *,
        controllers: int | None,
        combined: bool,
        zookeepers: int | None,
        zookeeper_port: int | None,
        kafka_version: str | None,
        **fields,
    ) -> ClusterSpec:
        if zookeepers is not None or zookeeper_port is not None:
            raise UserError(
                "--zookeepers and --zookeeper-port need --mode zookeeper (a KRaft cluster has controllers instead)"
            )
        if controllers is None:
            controllers = fields["brokers"] if combined else DEFAULT_CONTROLLERS
        return ClusterSpec(
            controllers=controllers, combined=combined, kafka_version=kafka_version or DEFAULT_KAFKA_VERSION, **fields
        )

    def quorum(self, spec: ClusterSpec) -> str:
        kind = " (combined)" if spec.combined else " (dynamic quorum)" if spec.dynamic_quorum else ""
        return f"{len(spec.controller_nodes())} controllers{kind}"

    def new_cluster_id(self) -> str:
        return new_cluster_id()

    def formatted_nodes(self, spec: ClusterSpec) -> list[NodeSpec]:
        return [n for n in spec.nodes() if not n.is_zookeeper]

    def kafka_node_properties(self, spec: ClusterSpec, node: NodeSpec, cluster_dir: Path) -> dict[str, str]:
        return kraft_properties(spec, node, cluster_dir)

    def active_controller(self, cluster: Cluster) -> int | None:
        return _leader_of_quorum(cluster)

    def controller_elected(self, spec: ClusterSpec) -> bool:
        # A KRaft broker registers only with an active controller: registered brokers say one is elected.
        return True

    def found_cluster_id(self, spec: ClusterSpec) -> str | None:
        return None

    def no_controller_note(self, nodes: Sequence[NodeStatus]) -> str | None:
        return _no_quorum_leader(nodes)

    def check_can_migrate(self, root: Path) -> None:
        raise UserError(f"the cluster at {root} already runs in KRaft mode: nothing to migrate")

    def check_can_pair(self) -> None:
        pass


class ZooKeeperMode:
    name = ZOOKEEPER_MODE
    registry = "ZooKeeper"
    registered = "registered"
    controller_role = BROKER
    describes_elr = False

    def spec_from_options(
        self,
        *,
        controllers: int | None,
        combined: bool,
        zookeepers: int | None,
        zookeeper_port: int | None,
        kafka_version: str | None,
        **fields,
    ) -> ClusterSpec:
        if controllers is not None or combined:
            raise UserError(
                "--controllers and --combined are KRaft options: in ZooKeeper mode the controller is a broker "
                "(drop them, or use --zookeepers N for a ZooKeeper quorum)"
            )
        return ClusterSpec.zookeeper_mode(
            zookeepers or 1,
            kafka_version or DEFAULT_ZOOKEEPER_KAFKA_VERSION,
            zookeeper_base_port=zookeeper_port or DEFAULT_ZOOKEEPER_PORT,
            **fields,
        )

    def quorum(self, spec: ClusterSpec) -> str:
        return f"{_plural(spec.zookeepers, 'ZooKeeper node')} ({spec.zookeeper_connect()})"

    def new_cluster_id(self) -> str:
        # The first broker to register makes it in /cluster/id; found_cluster_id reads it back.
        return ""

    def formatted_nodes(self, spec: ClusterSpec) -> list[NodeSpec]:
        return []

    def kafka_node_properties(self, spec: ClusterSpec, node: NodeSpec, cluster_dir: Path) -> dict[str, str]:
        return _zookeeper_style(spec, node, cluster_dir)

    def active_controller(self, cluster: Cluster) -> int | None:
        return _zookeeper_controller(cluster)

    def controller_elected(self, spec: ClusterSpec) -> bool:
        seen = zookeeper.view(spec.zookeeper_connect())
        return seen is not None and seen[1] is not None

    def found_cluster_id(self, spec: ClusterSpec) -> str | None:
        try:
            with zookeeper.connected(spec.zookeeper_connect()) as client:
                return zookeeper.cluster_id(client)
        except zookeeper.ZooKeeperUnavailable:
            return None

    def no_controller_note(self, nodes: Sequence[NodeStatus]) -> str | None:
        if any(r.node.is_broker and r.state == UP for r in nodes):
            return "no controller broker known (ZooKeeper does not answer, or no broker holds /controller yet)"
        return None

    def check_can_migrate(self, root: Path) -> None:
        pass

    def check_can_pair(self) -> None:
        raise UserError("a DR pair runs in KRaft mode (MirrorMaker 2 of Kafka 4.x): drop --mode zookeeper")


class MigratingMode(KRaftMode):
    """ZooKeeper's brokers and registry, KRaft's controller: the controller leads its quorum from the migration's first
    step (which is what it shares with KRaft: the active controller, its election, no cluster id to read, the note when
    none leads)."""

    name = MIGRATING_MODE
    registry = "the controller quorum"
    registered = "registered"
    controller_role = CONTROLLER
    describes_elr = False

    def spec_from_options(
        self,
        *,
        controllers: int | None,
        combined: bool,
        zookeepers: int | None,
        zookeeper_port: int | None,
        kafka_version: str | None,
        **fields,
    ) -> ClusterSpec:
        raise UserError(
            "a cluster in the middle of a migration is made by 'failsafe migrate' from a ZooKeeper-mode one"
        )

    def quorum(self, spec: ClusterSpec) -> str:
        return (
            f"{_plural(spec.controllers, 'controller')} in migration mode and "
            f"{_plural(spec.zookeepers, 'ZooKeeper node')} ({spec.zookeeper_connect()})"
        )

    def new_cluster_id(self) -> str:
        raise UserError(
            "a cluster in the middle of a migration keeps its ZooKeeper-mode cluster id: 'failsafe migrate' makes one"
        )

    def formatted_nodes(self, spec: ClusterSpec) -> list[NodeSpec]:
        raise UserError(
            "a cluster in the middle of a migration is never formatted whole: 'failsafe migrate' formats its controller"
        )

    def kafka_node_properties(self, spec: ClusterSpec, node: NodeSpec, cluster_dir: Path) -> dict[str, str]:
        return _zookeeper_style(spec, node, cluster_dir)

    def check_can_migrate(self, root: Path) -> None:
        raise UserError(
            f"a migration of the cluster at {root} stopped half-way: finish it by hand or roll back "
            f"(docs/zookeeper.md, 'When a step fails')"
        )

    def check_can_pair(self) -> None:
        raise UserError("a DR pair runs in KRaft mode (MirrorMaker 2 of Kafka 4.x): drop --mode zookeeper")


KRAFT: ClusterMode = KRaftMode()
ZOOKEEPER: ClusterMode = ZooKeeperMode()
MIGRATING: ClusterMode = MigratingMode()
BY_NAME: dict[str, ClusterMode] = {m.name: m for m in (KRAFT, ZOOKEEPER, MIGRATING)}


def mode_named(name: str) -> ClusterMode:
    try:
        return BY_NAME[name]
    except KeyError:
        raise ValueError(f"no cluster mode {name!r}: one of {', '.join(BY_NAME)}") from None


def mode_of(spec: ClusterSpec) -> ClusterMode:
    return mode_named(spec.mode)
