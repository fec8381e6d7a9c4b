"""Starting a cluster's nodes and waiting until it is ready; formatting KRaft storage; checking ports first.

Ready means (docs/cluster.md, "Ready means"): ZooKeeper nodes serve, controllers' listeners accept
connections, then every running broker's metadata lists every running broker, and the cluster's
mode (cluster/modes.py) says a controller is elected. Every wait is on one of those conditions.
"""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol

from failsafe.cluster import disks, metrics, netfilter, zookeeper
from failsafe.cluster.readiness import port_accepts, port_is_free, registered_brokers
from failsafe.cluster.spec import LOOPBACK, ZOOKEEPER_HEAP, ClusterSpec, NodeSpec
from failsafe.cluster.state import ClusterDir, ClusterState
from failsafe.cluster.watchdog import Leash
from failsafe.dist.cds import share_options
from failsafe.dist.java import Java
from failsafe.dist.jvm import server_command, tool_command, zookeeper_command
from failsafe.dist.kafka import KafkaDist
from failsafe.errors import ClusterStartError, PortInUse
from failsafe.supervisor import DOWN, UP, ProcessState, spawn
from failsafe.waiting import WaitTimeout, wait_until


class Cluster(Protocol):
    """What starting nodes needs of a cluster (cluster/lifecycle.py's Cluster): typed here, so this module imports none of it."""

    spec: ClusterSpec
    dir: ClusterDir
    state: ClusterState
    mode: Any

    def node_state(self, node: NodeSpec) -> ProcessState: ...

    def stop_nodes(self, nodes: list[NodeSpec], sig: signal.Signals, timeout_s: float) -> None: ...

DEFAULT_READY_TIMEOUT_S = 120.0
KILL_TIMEOUT_S = 15.0
FORMAT_TIMEOUT_S = 120.0
READY_POLL_S = 0.25
# How long a start waits for a node's ports to be free before it says they are in use.
PORT_FREE_TIMEOUT_S = 5.0

Progress = Callable[[str], None]


def quiet(_: str) -> None:
    """Progress nobody watches."""


def start(cluster: Cluster, nodes: list[NodeSpec], java: Java, dist: KafkaDist, timeout_s: float = DEFAULT_READY_TIMEOUT_S,
          progress: Progress = quiet) -> None:
    """Start ``nodes`` (all down, their ports checked free) and wait until the cluster is ready; on any failure or
    interruption, stop what was started. The leash covers a SIGKILL of this command."""
    pidfiles = [cluster.dir.pidfile(n) for n in nodes]
    with Leash(cluster.dir.root, pidfiles, cluster.dir.logs_dir / "watchdog.log") as leash:
        try:
            jvm_options = [*cluster.spec.jvm_options] or share_options(java, dist)
            deadline = time.monotonic() + timeout_s
            # ZooKeeper serves before any broker starts: a broker that cannot reach it within
            # zookeeper.connection.timeout.ms (18 s) exits, which several JVMs starting at once on
            # two cores can make happen (seen in CI).
            zookeepers = [n for n in nodes if n.is_zookeeper]
            for batch in (zookeepers, [n for n in nodes if not n.is_zookeeper]):
                if not batch:
                    continue
                for node in batch:
                    _spawn(cluster, node, java, dist, jvm_options)
                progress(f"started {', '.join(n.name for n in batch)}")
                wait_ready(cluster, batch, max(0.0, deadline - time.monotonic()), progress, timeout_s)
        except BaseException:
            cluster.stop_nodes(nodes, signal.SIGKILL, KILL_TIMEOUT_S)
            if cluster.spec.volatile_disks:
                disks.unmount_nodes(cluster.dir, nodes)
            raise
        leash.release()


def _spawn(cluster: Cluster, node: NodeSpec, java: Java, dist: KafkaDist, jvm_options: list[str]) -> None:
    config = cluster.dir.config_file(node).resolve()
    root = cluster.dir.root.resolve()
    if node.is_zookeeper:
        cmd = zookeeper_command(java, dist, config, root, ZOOKEEPER_HEAP, jvm_options)
    else:
        cmd = server_command(java, dist, config, root, cluster.spec.heap, jvm_options)
    if cluster.spec.metrics:
        # The agent's option goes before the main class, after the node's own (a command ends with CLASS PROPERTIES).
        cmd = [*cmd[:-2], metrics.jvm_option(root, cluster.spec, node), *cmd[-2:]]
    if cluster.spec.volatile_disks:
        disks.ensure_mounted(cluster.dir, node)
    if netfilter.can_set_gids():
        # Its own group id: network faults match the node's packets by it (cluster/netfilter.py).
        cmd = netfilter.with_gid(cmd, netfilter.node_gid(cluster.dir.root, cluster.spec.nodes().index(node)))
    # Nodes outlive this command (other terminals act on them): the leash guards the start instead.
    spawn(cmd, name=node.name, log_path=cluster.dir.log_file(node), pidfile=cluster.dir.pidfile(node), cwd=cluster.dir.root,
          dies_with_parent=False)


def wait_ready(cluster: Cluster, started: list[NodeSpec], timeout_s: float, progress: Progress = quiet,
               reported_timeout_s: float | None = None) -> None:
    deadline = time.monotonic() + timeout_s
    timeout_s = timeout_s if reported_timeout_s is None else reported_timeout_s
    mode = cluster.mode

    def remaining() -> float:
        return max(0.0, deadline - time.monotonic())

    def none_died() -> None:
        for node in started:
            if cluster.node_state(node) == DOWN:
                log = cluster.dir.log_file(node)
                raise ClusterStartError(f"{node.name} ({node.role}) exited during start-up: {_log_reason(log)} (log: {log})")

    zookeepers = [n for n in started if n.is_zookeeper]
    if zookeepers:
        progress(f"waiting for ZooKeeper ({', '.join(str(n.port) for n in zookeepers)}) to serve")
        _wait(lambda: none_died() or all(zookeeper.server_mode(n.port) for n in zookeepers),
              remaining(), f"ZooKeeper nodes {_ids(zookeepers)} did not serve requests within {timeout_s:g}s")

    controllers = [n for n in started if n.is_controller]
    if controllers:
        progress(f"waiting for controller listeners ({', '.join(str(n.controller_port) for n in controllers)})")
        _wait(lambda: none_died() or all(port_accepts(n.controller_port, n.address) for n in controllers),
              remaining(), f"controllers {_ids(controllers)} did not open their ports within {timeout_s:g}s")

    def brokers_ready() -> bool:
        none_died()
        up = [n for n in cluster.spec.brokers_nodes() if cluster.node_state(n) == UP]
        want = {n.node_id for n in up}
        seen = [registered_brokers(n.port) for n in up]
        progress(f"brokers {mode.registered}: {len(set.intersection(*seen) if seen else set())}/{len(want)}")
        return all(s >= want for s in seen) and mode.controller_elected(cluster.spec)

    if any(n.is_broker for n in started):
        _wait(brokers_ready, remaining(),
              f"brokers {_ids([n for n in started if n.is_broker])} did not register with {mode.registry} within {timeout_s:g}s: "
              f"see the logs in {cluster.dir.logs_dir}")
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
    procs = []
    for node in nodes:
        # --cluster-id=ID, not "-t ID": an id ZooKeeper-mode Kafka generated may begin with '-'.
        args = ["format", f"--cluster-id={cluster.state.cluster_id}", "-c", str(cluster.dir.config_file(node).resolve()),
                *(f"--feature={k}={v}" for k, v in cluster.spec.features.items())]
        cmd = tool_command(java, dist, "kafka.tools.StorageTool", args)
        procs.append((node, spawn(cmd, name=f"format {node.name}", stdout=subprocess.PIPE, stderr=subprocess.STDOUT)))
    failures = []
    for node, child in procs:
        try:
            out, _ = child.popen.communicate(timeout=FORMAT_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            child.kill()
            out, _ = child.popen.communicate()
        if child.popen.returncode != 0:
            failures.append(f"{node.name}: {_last_meaningful_line(out.decode(errors='replace'))}")
    if failures:
        raise ClusterStartError(f"kafka-storage format failed for {'; '.join(failures)}")


def ensure_ports_free(nodes: list[NodeSpec], timeout_s: float = PORT_FREE_TIMEOUT_S, spec: ClusterSpec | None = None) -> None:
    """Every listener port of ``nodes`` can be bound, within ``timeout_s``: the sockets of a node killed a moment ago
    (connections still closing) can hold its address for a little while after the process is gone."""
    wanted = [(node, address, port) for node in nodes
              for address, port in [(node.address, node.controller_port), (node.address, node.replication_port),
                                    *((LOOPBACK, p) for p in (node.port, node.peer_port, node.election_port))]
              if port is not None]
    if spec is not None and spec.metrics:
        wanted += [(node, LOOPBACK, spec.metrics_port(node)) for node in nodes]

    def taken() -> list[tuple[NodeSpec, str, int]]:
        return [(node, address, port) for node, address, port in wanted if not port_is_free(port, address)]
    try:
        wait_until(lambda: not taken(), timeout_s, "")
    except WaitTimeout:
        still = taken()
        if not still:
            return
        node, address, port = still[0]
        raise PortInUse(f"port {port} on {address} ({node.role} {node.node_id}) is already in use: "
                        "stop what listens there or choose another --base-port") from None


def _ids(nodes: list[NodeSpec]) -> str:
    return ",".join(str(n.node_id) for n in nodes)


def _last_meaningful_line(text: str) -> str:
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
    for line in reversed(lines):
        if "ERROR" in line or "Exception" in line or "error" in line.lower():
            return line[:300]
    return lines[-1][:300] if lines else "no output"


def _log_reason(log: Path) -> str:
    try:
        text = log.read_text(errors="replace")[-20000:]
    except OSError:
        return "no log"
    return _last_meaningful_line(text)
