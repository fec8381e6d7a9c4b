"""Rendering each node's server-N.properties and the logging configuration.

Seed style: one properties file per node with its own id, port and ``log.dirs``, started as
``kafka.Kafka server-N.properties``. Everything listens on 127.0.0.1 only.
"""

from __future__ import annotations

from pathlib import Path

from failsafe.cluster.spec import ClusterSpec, NodeSpec


def node_properties(spec: ClusterSpec, node: NodeSpec, cluster_dir: Path) -> dict[str, str]:
    props: dict[str, str] = {
        "process.roles": ",".join(node.roles),
        "node.id": str(node.node_id),
        "controller.quorum.voters": spec.quorum_voters(),
        "controller.listener.names": "CONTROLLER",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
    }
    listeners = []
    if node.is_broker:
        listeners.append(f"PLAINTEXT://127.0.0.1:{node.port}")
    if node.is_controller:
        listeners.append(f"CONTROLLER://127.0.0.1:{node.controller_port}")
    props["listeners"] = ",".join(listeners)
    if node.is_broker:
        props["advertised.listeners"] = f"PLAINTEXT://127.0.0.1:{node.port}"
        props["inter.broker.listener.name"] = "PLAINTEXT"
    props["log.dirs"] = str(cluster_dir / f"kafka-{node.node_id}")
    if node.is_broker:
        # Internal topics as replicated as the cluster allows, like a production cluster and
        # unlike Kafka's single-node sample config (replication factor 1).
        internal_rf = str(min(3, spec.brokers))
        internal_min_isr = str(min(2, spec.brokers))
        props["offsets.topic.replication.factor"] = internal_rf
        props["transaction.state.log.replication.factor"] = internal_rf
        props["transaction.state.log.min.isr"] = internal_min_isr
        # As Kafka's own config/server.properties ships it, which every seed copies to
        # server-N.properties: the group coordinator does not hold a new group's first join
        # for 3 s ("a better out-of-the-box experience for development and testing").
        props["group.initial.rebalance.delay.ms"] = "0"
        if int(spec.kafka_version.split(".")[0]) >= 4:
            props["share.coordinator.state.topic.replication.factor"] = internal_rf
            props["share.coordinator.state.topic.min.isr"] = internal_min_isr
    props.update(spec.overrides)
    return props


def render_server_properties(spec: ClusterSpec, node: NodeSpec, cluster_dir: Path) -> str:
    header = [
        f"# {node.name}.properties: {node.role} {node.node_id} of the failsafe cluster in {cluster_dir}",
        "# Written by 'failsafe up'; every property not listed keeps Kafka's default.",
    ]
    body = [f"{k}={v}" for k, v in node_properties(spec, node, cluster_dir).items()]
    return "\n".join(header + body) + "\n"
