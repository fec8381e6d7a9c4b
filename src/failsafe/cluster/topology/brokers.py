"""A broker added to a running KRaft cluster (``failsafe broker add``, the add-broker action).

As Kafka's operations guide adds one: the next broker id, its storage formatted with the cluster's id, the node
started and waited on until every broker sees it registered and unfenced. It holds no partition until some are moved
to it (cluster/topology/reassign.py). The grown spec goes to the state file first, so a crash of failsafe mid-way
leaves a node that ``failsafe down`` stops; a start that fails takes the slot back.
"""

from __future__ import annotations

import dataclasses
import shutil
import signal
from collections.abc import Callable

from failsafe.cluster.config import render_server_properties
from failsafe.cluster.nodes.control import LocalNodes
from failsafe.cluster.spec import KRAFT_MODE, ClusterSpec, NodeSpec
from failsafe.cluster.topology.lifecycle import DEFAULT_STOP_TIMEOUT_S, Cluster
from failsafe.errors import UserError

STEP_TIMEOUT_S = 120.0


def next_broker_id(cluster: Cluster) -> int:
    spec = cluster.spec
    return spec.first_broker_id + spec.brokers


def add_broker(
    cluster: Cluster, progress: Callable[[str], None] = lambda _: None, timeout_s: float = STEP_TIMEOUT_S
) -> NodeSpec:
    """Add a broker (the next id) to the running cluster and wait until it is registered; returns its node."""
    spec = cluster.spec
    if spec.mode != KRAFT_MODE:
        raise UserError(f"adding a broker to a {spec.mode}-mode cluster is not supported: only KRaft clusters grow")
    if not isinstance(cluster.nodes, LocalNodes):
        raise UserError("adding a broker to a cluster on hosts is not supported yet")
    if spec.combined:
        raise UserError("adding a broker to a combined-mode cluster is not supported: its brokers are controllers too")
    if spec.racks:
        # broker.rack is spread over the brokers by index: a new one would move the others' racks.
        raise UserError(f"adding a broker to a cluster with racks (--racks {spec.racks}) is not supported yet")
    not_up = cluster.not_whole()
    if not_up:
        raise UserError(
            f"the cluster at {cluster.dir.root} is not whole ({'; '.join(not_up)}): a broker joins a whole one"
        )
    grown = dataclasses.replace(spec, brokers=spec.brokers + 1).validate()
    node_id = next_broker_id(cluster)
    node = next(n for n in grown.brokers_nodes() if n.node_id == node_id)
    cluster.nodes.ensure_ports_free([node], grown)
    _save(cluster, grown, node)
    try:
        shutil.rmtree(cluster.dir.data_dir(node), ignore_errors=True)
        progress(f"formatting broker {node_id}'s storage with the cluster's id")
        cluster.format_storage([node], cluster.java, cluster.dist)
        cluster.start([node], cluster.java, cluster.dist, timeout_s, progress)
    except BaseException:
        cluster.stop_nodes([node], signal.SIGKILL, DEFAULT_STOP_TIMEOUT_S)
        cluster.state = dataclasses.replace(cluster.state, spec=spec)
        cluster.dir.save(cluster.state)
        raise
    return node


def _save(cluster: Cluster, spec: ClusterSpec, node: NodeSpec) -> None:
    cluster.state = dataclasses.replace(cluster.state, spec=spec)
    cluster.dir.save(cluster.state)
    cluster.dir.write_config(node, render_server_properties(spec, node, cluster.dir.root.resolve()))
