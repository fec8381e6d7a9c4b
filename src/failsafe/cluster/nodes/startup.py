"""Starting a cluster's nodes and waiting until it is ready; formatting KRaft storage; checking ports first.

Ready means (docs/cluster.md, "Ready means"): ZooKeeper nodes serve, controllers' listeners accept
connections, then every running broker's metadata lists every running broker, and the cluster's
mode (cluster/modes/mode.py) says a controller is elected. Every wait is on one of those conditions.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any, Protocol

from failsafe.cluster.modes import zookeeper
from failsafe.cluster.nodes.control import KILL_TIMEOUT_S, PORT_FREE_TIMEOUT_S, NodeControl, ensure_ports_free
from failsafe.cluster.observe.readiness import port_accepts, registered_brokers
from failsafe.cluster.spec import ClusterSpec, NodeSpec
from failsafe.cluster.state import ClusterDir, ClusterState
from failsafe.errors import ClusterStartError
from failsafe.jvm.java import Java
from failsafe.jvm.kafka import KafkaDist
from failsafe.supervisor import DOWN, UP, ProcessState
from failsafe.waiting import WaitTimeout, wait_until

__all__ = [
    "DEFAULT_READY_TIMEOUT_S",
    "KILL_TIMEOUT_S",
    "PORT_FREE_TIMEOUT_S",
    "Progress",
    "ensure_ports_free",
    "format_storage",
    "quiet",
    "start",
    "wait_ready",
]


class Cluster(Protocol):
    """What starting nodes needs of a cluster (cluster/topology/lifecycle.py's Cluster): typed here, so this module
    imports none of it."""

    spec: ClusterSpec
    dir: ClusterDir
    state: ClusterState
    mode: Any
    nodes: NodeControl

    def node_state(self, node: NodeSpec) -> ProcessState: ...

    def dist_of(self, node: NodeSpec) -> KafkaDist: ...

    def stop_nodes(self, nodes: list[NodeSpec], sig: signal.Signals, timeout_s: float) -> None: ...


DEFAULT_READY_TIMEOUT_S = 120.0
READY_POLL_S = 0.25

Progress = Callable[[str], None]


def quiet(_: str) -> None:
    """Progress nobody watches."""


def start(
    cluster: Cluster,
    nodes: list[NodeSpec],
    java: Java,
    dist: KafkaDist,
    timeout_s: float = DEFAULT_READY_TIMEOUT_S,
    progress: Progress = quiet,
) -> None:
    """Start ``nodes`` (all down, their ports checked free) and wait until the cluster is ready; on any failure or
    interruption, stop what was started. The guard (on this machine, the leash) covers a SIGKILL of this command."""
    with cluster.nodes.guard(nodes) as guard:
        try:
            deadline = time.monotonic() + timeout_s
            # ZooKeeper serves before any broker starts: a broker that cannot reach it within
            # zookeeper.connection.timeout.ms (18 s) exits, which several JVMs starting at once on
            # two cores can make happen (seen in CI).
            zookeepers = [n for n in nodes if n.is_zookeeper]
            for batch in (zookeepers, [n for n in nodes if not n.is_zookeeper]):
                if not batch:
                    continue
                for node in batch:
                    # A node a rolling upgrade (or its rollback) moved to another release starts on that one's jars.
                    node_dist = dist if cluster.state.version_of(node) == dist.version else cluster.dist_of(node)
                    cluster.nodes.launch(cluster.spec, node, java, node_dist)
                progress(f"started {', '.join(n.name for n in batch)}")
                wait_ready(cluster, batch, max(0.0, deadline - time.monotonic()), progress, timeout_s)
        except BaseException:
            cluster.stop_nodes(nodes, signal.SIGKILL, KILL_TIMEOUT_S)
            if cluster.spec.volatile_disks:
                cluster.nodes.disk_unmount(nodes)
            raise
        cluster.nodes.release_guard(guard)


def wait_ready(
    cluster: Cluster,
    started: list[NodeSpec],
    timeout_s: float,
    progress: Progress = quiet,
    reported_timeout_s: float | None = None,
) -> None:
    deadline = time.monotonic() + timeout_s
    timeout_s = timeout_s if reported_timeout_s is None else reported_timeout_s
    mode = cluster.mode

    def remaining() -> float:
        return max(0.0, deadline - time.monotonic())

    def none_died() -> None:
        for node in started:
            if cluster.node_state(node) == DOWN:
                raise ClusterStartError(
                    f"{node.name} ({node.role}) exited during start-up: {cluster.nodes.log_reason(node)} "
                    f"(log: {cluster.nodes.log_where(node)})"
                )

    zookeepers = [n for n in started if n.is_zookeeper]
    if zookeepers:
        progress(f"waiting for ZooKeeper ({', '.join(str(n.port) for n in zookeepers)}) to serve")
        _wait(
            lambda: none_died() or all(zookeeper.server_mode(n.port) for n in zookeepers),
            remaining(),
            f"ZooKeeper nodes {_ids(zookeepers)} did not serve requests within {timeout_s:g}s",
        )

    controllers = [n for n in started if n.is_controller]
    if controllers:
        progress(f"waiting for controller listeners ({', '.join(str(n.controller_port) for n in controllers)})")
        _wait(
            lambda: none_died() or all(port_accepts(n.controller_port, n.address) for n in controllers),
            remaining(),
            f"controllers {_ids(controllers)} did not open their ports within {timeout_s:g}s",
        )

    def brokers_ready() -> bool:
        none_died()
        up = [n for n in cluster.spec.brokers_nodes() if cluster.node_state(n) == UP]
        want = {n.node_id for n in up}
        seen = [registered_brokers(n.port, host=n.client_address) for n in up]
        progress(f"brokers {mode.registered}: {len(set.intersection(*seen) if seen else set())}/{len(want)}")
        return all(s >= want for s in seen) and mode.controller_elected(cluster.spec)

    if any(n.is_broker for n in started):
        _wait(
            brokers_ready,
            remaining(),
            f"brokers {_ids([n for n in started if n.is_broker])} did not register with {mode.registry} within "
            f"{timeout_s:g}s: see the logs in {cluster.dir.logs_dir}",
        )
    if not cluster.state.cluster_id:
        found = mode.found_cluster_id(cluster.spec)
        if found:
            cluster.state = replace(cluster.state, cluster_id=found)
            cluster.dir.save(cluster.state)


def _wait(condition: Callable[[], object], timeout_s: float, message: str) -> None:
    try:
        wait_until(condition, timeout_s, message, poll_interval_s=READY_POLL_S)
    except WaitTimeout as e:
        raise ClusterStartError(str(e)) from e


def format_storage(cluster: Cluster, nodes: list[NodeSpec], java: Java, dist: KafkaDist) -> None:
    """kafka-storage format of each KRaft node's log dirs with the cluster id, all at once."""
    cluster.nodes.format_storage(cluster.spec, cluster.state.cluster_id, nodes, java, dist)


def _ids(nodes: list[NodeSpec]) -> str:
    return ",".join(str(n.node_id) for n in nodes)
