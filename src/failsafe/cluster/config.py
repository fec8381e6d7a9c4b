"""Rendering each node's server-N.properties: its kind's properties (cluster/properties.py), as the cluster's mode
chooses them."""

from __future__ import annotations

from pathlib import Path

from failsafe.cluster.modes.mode import mode_of
from failsafe.cluster.properties import (
    kraft_properties,
    render_properties,
    zookeeper_broker_properties,
    zookeeper_properties,
)
from failsafe.cluster.spec import ClusterSpec, NodeSpec

# The builders of each kind of node, importable from here as before they moved to properties.py.
__all__ = [
    "kraft_properties",
    "node_properties",
    "render_properties",
    "render_server_properties",
    "zookeeper_broker_properties",
    "zookeeper_properties",
]


def node_properties(spec: ClusterSpec, node: NodeSpec, cluster_dir: Path) -> dict[str, str]:
    if node.is_zookeeper:
        return zookeeper_properties(spec, node, cluster_dir)
    return mode_of(spec).kafka_node_properties(spec, node, cluster_dir)


def render_server_properties(spec: ClusterSpec, node: NodeSpec, cluster_dir: Path) -> str:
    header = [
        f"# {node.name}.properties: {node.role} {node.node_id} of the failsafe cluster in {cluster_dir}",
        "# Written by 'failsafe up'; every property not listed keeps Kafka's default.",
    ]
    return render_properties(node_properties(spec, node, cluster_dir), header)
