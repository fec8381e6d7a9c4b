"""The properties of each kind of node: a KRaft node, a ZooKeeper-mode broker, a ZooKeeper node.

Seed style: one properties file per node with its own id, port and ``log.dirs``, started as
``kafka.Kafka server-N.properties``. Everything listens on loopback addresses only: clients on
127.0.0.1, replication and controllers (KRaft) on each node's own 127.0.0.x. Which kind a node
is follows from its role and the cluster's mode (cluster/modes/mode.py); cluster/config.py renders it.
"""

from __future__ import annotations

from pathlib import Path

from failsafe.cluster import tiered
from failsafe.cluster.profiles import broker_settings
from failsafe.cluster.security import secured as security
from failsafe.cluster.spec import ClusterSpec, NodeSpec


def kraft_properties(spec: ClusterSpec, node: NodeSpec, cluster_dir: Path) -> dict[str, str]:
    props: dict[str, str] = {
        "process.roles": ",".join(node.roles),
        "node.id": str(node.node_id),
        **(
            {"controller.quorum.bootstrap.servers": spec.quorum_bootstrap_servers()}
            if spec.dynamic_quorum
            else {"controller.quorum.voters": spec.quorum_voters()}
        ),
        "controller.listener.names": "CONTROLLER",
        # Each listener's protocol, and in a secured mode what it needs (cluster/security/secured.py).
        **security.node_properties(spec, node, cluster_dir),
    }
    # Clients on 127.0.0.1 (the seeds' ports); replication and the controller on the node's own
    # address, so a network fault can cut one without the other (docs/cluster.md).
    # With a protocol proxy the client listener is behind it: clients are told the proxy's port
    # (docs/protocol-faults.md).
    broker_listeners, advertised = [], []
    if node.is_broker:
        broker_listeners.append(f"PLAINTEXT://{node.client_address}:{spec.listener_port(node)}")
        advertised.append(f"PLAINTEXT://{node.client_address}:{node.port}")
        if spec.direct_port(node):
            broker_listeners.append(f"DIRECT://{node.client_address}:{spec.direct_port(node)}")
            advertised.append(broker_listeners[-1])
        if node.replication_port:
            broker_listeners.append(f"REPLICATION://{node.address}:{node.replication_port}")
            advertised.append(broker_listeners[-1])
    controller_listeners = [f"CONTROLLER://{node.address}:{node.controller_port}"] if node.is_controller else []
    props["listeners"] = ",".join(broker_listeners + controller_listeners)
    if node.is_broker:
        props["advertised.listeners"] = ",".join(advertised)
        props["inter.broker.listener.name"] = "REPLICATION" if node.replication_port else "PLAINTEXT"
    props["log.dirs"] = str(cluster_dir / f"kafka-{node.node_id}")
    if node.is_broker:
        props.update(_rack(spec, node))
        props.update(_broker_defaults(spec))
    if spec.tiered_storage:
        props.update(tiered.node_properties(spec, node, cluster_dir))
    # The cluster's profile, then the user's --override: both over failsafe's defaults above.
    props.update(broker_settings(spec))
    return props


def zookeeper_broker_properties(spec: ClusterSpec, node: NodeSpec, cluster_dir: Path) -> dict[str, str]:
    """A ZooKeeper-mode broker as seeds 000, 001 and 004 write it: broker.id, listeners, log.dirs, zookeeper.connect.

    The seeds' ``port=909N`` was removed in Kafka 3.0; ``listeners`` says the same.
    """
    props = {
        "broker.id": str(node.node_id),
        "listeners": f"PLAINTEXT://127.0.0.1:{node.port}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{node.port}",
        "log.dirs": str(cluster_dir / f"kafka-{node.node_id}"),
        "zookeeper.connect": spec.zookeeper_connect(),
        **_rack(spec, node),
        **_broker_defaults(spec),
    }
    props.update(broker_settings(spec))
    return props


def zookeeper_properties(spec: ClusterSpec, node: NodeSpec, cluster_dir: Path) -> dict[str, str]:
    """Kafka's own config/zookeeper.properties, on 127.0.0.1, plus the ensemble's server.N lines when there are
    several."""
    props = {
        "dataDir": str(cluster_dir / node.name),
        "clientPort": str(node.port),
        "clientPortAddress": "127.0.0.1",
        "maxClientCnxns": "0",
        "admin.enableServer": "false",
        # failsafe reads a node's role (leader, follower, standalone) with the 'srvr' command.
        "4lw.commands.whitelist": "srvr,ruok",
    }
    ensemble = spec.zookeeper_nodes()
    if len(ensemble) > 1:
        # ZooKeeper's own conf/zoo_sample.cfg: ticks of 2 s, 10 to join, 5 to stay in sync.
        props.update({"tickTime": "2000", "initLimit": "10", "syncLimit": "5"})
        for peer in ensemble:
            props[f"server.{peer.node_id}"] = f"127.0.0.1:{peer.peer_port}:{peer.election_port}"
    return props


def _rack(spec: ClusterSpec, node: NodeSpec) -> dict[str, str]:
    rack = spec.rack_of(node)
    return {"broker.rack": rack} if rack else {}


def _broker_defaults(spec: ClusterSpec) -> dict[str, str]:
    # Internal topics as replicated as the cluster allows, like a production cluster and
    # unlike Kafka's single-node sample config (replication factor 1).
    internal_rf = str(min(3, spec.brokers))
    internal_min_isr = str(min(2, spec.brokers))
    props = {
        "offsets.topic.replication.factor": internal_rf,
        "transaction.state.log.replication.factor": internal_rf,
        "transaction.state.log.min.isr": internal_min_isr,
        # As Kafka's own config/server.properties ships it, which every seed copies to
        # server-N.properties: the group coordinator does not hold a new group's first join
        # for 3 s ("a better out-of-the-box experience for development and testing").
        "group.initial.rebalance.delay.ms": "0",
    }
    if int(spec.kafka_version.split(".")[0]) >= 4:
        props["share.coordinator.state.topic.replication.factor"] = internal_rf
        props["share.coordinator.state.topic.min.isr"] = internal_min_isr
    return props


def render_properties(props: dict[str, str], header: list[str]) -> str:
    return "\n".join(header + [f"{k}={v}" for k, v in props.items()]) + "\n"
