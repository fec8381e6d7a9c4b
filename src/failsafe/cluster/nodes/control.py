"""Where a cluster's nodes run and how failsafe acts on them: one interface, two places.

    NodeControl     what lifecycle.py and startup.py ask of the place: write the nodes' files, format their
                    storage, launch a node, read its state, stop, pause and resume it, read its log and quorum
                    state, and remove what the cluster left
    LocalNodes      this machine: processes through the supervisor, files under the cluster directory
    HostNodes       hosts reached over SSH (cluster/nodes/hosts.py, docs/hosts.md)

Faults, the engine and the CLI act on nodes through lifecycle.Cluster, which holds one of these.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol

from failsafe.cluster import clocks, tiered
from failsafe.cluster.config import render_server_properties
from failsafe.cluster.net import netfilter
from failsafe.cluster.nodes import disks
from failsafe.cluster.nodes.watchdog import Leash
from failsafe.cluster.observe import metrics
from failsafe.cluster.observe.readiness import QUORUM_STATE, port_is_free
from failsafe.cluster.security import secured as security
from failsafe.cluster.spec import LOOPBACK, ZOOKEEPER_HEAP, ZOOKEEPER_MODE, ClusterSpec, NodeSpec
from failsafe.cluster.state import ClusterDir, new_cluster_id
from failsafe.errors import ClusterStartError, PortInUse, UserError
from failsafe.jvm.cds import share_options
from failsafe.jvm.java import Java
from failsafe.jvm.jvm import server_command, tool_command, zookeeper_command
from failsafe.jvm.kafka import KafkaDist
from failsafe.jvm.logging_config import write_logging_configs
from failsafe.proxy import proxies
from failsafe.supervisor import DOWN, PAUSED, UP, ProcessState, TrackedProcess, read_pidfile, spawn
from failsafe.waiting import WaitTimeout, wait_until

KILL_TIMEOUT_S = 15.0
FORMAT_TIMEOUT_S = 120.0
# How long a start waits for a node's ports to be free before it says they are in use.
PORT_FREE_TIMEOUT_S = 5.0


class NodeControl(Protocol):
    def prepare(self, spec: ClusterSpec, java: Java, dist: KafkaDist) -> None:
        """Write every node's config (and a ZooKeeper node's myid), its data directory emptied: ``create``."""

    def format_storage(
        self, spec: ClusterSpec, cluster_id: str, nodes: list[NodeSpec], java: Java, dist: KafkaDist
    ) -> None:
        """kafka-storage format of each node's log dirs with the cluster id, all at once."""

    def ensure_ports_free(
        self, nodes: list[NodeSpec], spec: ClusterSpec, timeout_s: float = PORT_FREE_TIMEOUT_S
    ) -> None: ...

    def guard(self, nodes: list[NodeSpec]) -> AbstractContextManager:
        """Around a start: what stops the nodes being started if failsafe dies before they are ready."""

    def release_guard(self, guard: object) -> None: ...

    def launch(self, spec: ClusterSpec, node: NodeSpec, java: Java, dist: KafkaDist) -> None:
        """Start ``node`` (not waiting until it is ready)."""

    def state(self, node: NodeSpec) -> ProcessState: ...

    def pid(self, node: NodeSpec) -> int | None: ...

    def stop(self, nodes: list[NodeSpec], sig: signal.Signals, timeout_s: float) -> None:
        """Signal all first, then wait for each (SIGKILL after ``timeout_s``)."""

    def freeze(self, node: NodeSpec, paused: bool, timeout_s: float) -> None:
        """SIGSTOP (``paused``) or SIGCONT to the node's process group, then wait until it is so."""

    def log_reason(self, node: NodeSpec) -> str:
        """The line of the node's log that says why it stopped (for an error message)."""

    def log_where(self, node: NodeSpec) -> str:
        """Where the node's log is, for a person to read."""

    def quorum_state(self, node: NodeSpec) -> str | None:
        """The text of a controller's ``__cluster_metadata-0/quorum-state`` (None: none, or unreadable)."""

    def fetch_logs(self) -> dict[str, int]:
        """Each node's log where DIR/logs/ has it (on hosts: copied here, what is new); the size of each."""

    def net_ready(self, spec: ClusterSpec) -> None:
        """Network faults can be made now: root and nft (here, and on each host), every running node under its own group
        id; else one clear NetworkFaultsUnavailable."""

    def net_leash(self, log_file: Path) -> Any:
        """The hosts' leash on their network rules (cluster/net/hosts.py); None: all rules are on this machine."""

    def clock_offsets(self) -> dict[int, tuple[float, float]]:
        """Each node's host clock against failsafe's: (offset, error bound) in seconds; empty on this machine."""

    def check_client_host(self, host: str) -> None:
        """A client may run on ``host`` (a host of the inventory); else one clear UserError."""

    client_host: Any
    """What a client needs to run on a host, from (host name, Kafka version); None: clients run only here."""

    def net_place(self, node: NodeSpec) -> str:
        """Where rules dropping ``node``'s packets go: netfilter.LOCAL, or its host's address."""

    def net_control_address(self, where: str) -> str:
        """failsafe's (the clients') address as seen from ``where``."""

    def net_chains(self) -> list[netfilter.FaultChain]:
        """The network faults in force (each chain once, wherever it has rules)."""

    def net_add(self, chain: str, comment: str, rules: dict[str, list[str]]) -> None:
        """``chain`` with each place's rules, at each place (all or nothing at each)."""

    def net_delete(self, chain: str) -> bool:
        """``chain`` removed everywhere; False if it was nowhere."""

    def net_delete_all(self) -> bool:
        """Every rule of this cluster removed everywhere."""

    def disk_layer(self, node: NodeSpec) -> Any:
        """``node``'s disk layer when it is mounted (status, lose_unsynced, inject, clear_injection), else None."""

    def disk_unmount(self, nodes: list[NodeSpec]) -> None:
        """Unmount these nodes' disk layers (the nodes stopped first): a failed start leaves none behind."""

    def data_here(self, node: NodeSpec) -> Path | None:
        """Where ``node``'s data directory (log.dirs) is on this machine now (its disk layer's mountpoint, or the
        layer's backing directory while the layer is not mounted); None when it is on a host."""

    def proxy(self, node: NodeSpec) -> Any:
        """``node``'s protocol proxy when it runs (status, add, clear: proxy/proxies.py ProxyHandle), else None."""

    def release(self) -> None:
        """What must not outlive the cluster once it is down: network rules, disk layers, protocol proxies."""

    def remove(self) -> None:
        """Delete what the cluster keeps outside its directory (``clean``)."""


class LocalNodes:
    """The nodes as processes of this machine (the supervisor's), their files in the cluster directory."""

    def __init__(self, cdir: ClusterDir) -> None:
        self.dir = cdir

    # -- files ------------------------------------------------------------------------------
    def prepare(self, spec: ClusterSpec, java: Java, dist: KafkaDist) -> None:
        if spec.clock_faults:
            clocks.library()  # missing: one line before anything starts
        write_logging_configs(self.dir.root)
        security.ensure_secrets(self.dir.root, spec)
        for node in spec.nodes():
            # No state file means no failsafe cluster owns these dirs: a failed earlier create.
            shutil.rmtree(self.dir.data_dir(node), ignore_errors=True)
            self.dir.write_config(node, render_server_properties(spec, node, self.dir.root.resolve()))
            if node.is_zookeeper:
                self.dir.data_dir(node).mkdir(parents=True)
                (self.dir.data_dir(node) / "myid").write_text(f"{node.node_id}\n")

    def format_storage(
        self, spec: ClusterSpec, cluster_id: str, nodes: list[NodeSpec], java: Java, dist: KafkaDist
    ) -> None:
        procs = []
        quorum = initial_controllers(spec, nodes)
        for node in nodes:
            cmd = tool_command(
                java,
                dist,
                "kafka.tools.StorageTool",
                format_args(cluster_id, str(self.dir.config_file(node).resolve()), spec, quorum)
                + security.format_args(self.dir.root, spec),
            )
            procs.append(
                (node, spawn(cmd, name=f"format {node.name}", stdout=subprocess.PIPE, stderr=subprocess.STDOUT))
            )
        failures = []
        for node, child in procs:
            try:
                out, _ = child.popen.communicate(timeout=FORMAT_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                child.kill()
                out, _ = child.popen.communicate()
            if child.popen.returncode != 0:
                failures.append(f"{node.name}: {last_meaningful_line(out.decode(errors='replace'))}")
        if failures:
            raise ClusterStartError(f"kafka-storage format failed for {'; '.join(failures)}")

    def ensure_ports_free(
        self, nodes: list[NodeSpec], spec: ClusterSpec, timeout_s: float = PORT_FREE_TIMEOUT_S
    ) -> None:
        ensure_ports_free(nodes, timeout_s, spec)

    # -- processes --------------------------------------------------------------------------
    def guard(self, nodes: list[NodeSpec]) -> AbstractContextManager:
        return Leash(self.dir.root, [self.dir.pidfile(n) for n in nodes], self.dir.logs_dir / "watchdog.log")

    def release_guard(self, guard: object) -> None:
        assert isinstance(guard, Leash)
        guard.release()

    def launch(self, spec: ClusterSpec, node: NodeSpec, java: Java, dist: KafkaDist) -> None:
        jvm_options = [*spec.jvm_options] or share_options(java, dist)
        config = self.dir.config_file(node).resolve()
        root = self.dir.root.resolve()
        if node.is_zookeeper:
            cmd = zookeeper_command(java, dist, config, root, ZOOKEEPER_HEAP, jvm_options)
        else:
            # A tiered cluster's brokers: LocalTieredStorage after Kafka's own jars.
            node_dist = tiered.broker_dist(dist)[0] if spec.tiered_storage and node.is_broker else dist
            cmd = server_command(java, node_dist, config, root, spec.heap, jvm_options)
        if spec.metrics:
            # The agent's option goes before the main class, after the node's own (a command ends with CLASS
            # PROPERTIES).
            cmd = [*cmd[:-2], metrics.jvm_option(root, spec, node), *cmd[-2:]]
        if spec.volatile_disks:
            disks.ensure_mounted(self.dir, node)
        if spec.tiered_storage and node.is_broker:
            tiered.ensure_mounted(self.dir)
        if spec.protocol_proxy and node.is_broker:
            # Before its broker: clients told of the proxy's port find it serving (it closes them while the broker is
            # down). It outlives the broker's restarts and stops with the cluster (release).
            proxies.start(
                self.dir.root,
                node.name,
                (node.client_address, node.port),
                (node.client_address, spec.listener_port(node)),
                log_path=self.dir.logs_dir / f"proxy-{node.name}.log",
            )
        if netfilter.can_set_gids():
            # Its own group id: network faults match the node's packets by it (cluster/net/netfilter.py).
            cmd = netfilter.with_gid(cmd, netfilter.node_gid(self.dir.root, spec.nodes().index(node)))
        # Nodes outlive this command (other terminals act on them): the leash guards the start instead.
        spawn(
            cmd,
            # With clock faults: libfaketime preloaded, reading the node's clock file (cluster/clocks.py).
            env=clocks.node_env(self.dir.root, node.name) if spec.clock_faults and not node.is_zookeeper else None,
            name=node.name,
            log_path=self.dir.log_file(node),
            pidfile=self.dir.pidfile(node),
            cwd=self.dir.root,
            dies_with_parent=False,
        )

    def tracked(self, node: NodeSpec) -> TrackedProcess | None:
        return read_pidfile(self.dir.pidfile(node))

    def state(self, node: NodeSpec) -> ProcessState:
        tracked = self.tracked(node)
        return DOWN if tracked is None else tracked.state()

    def pid(self, node: NodeSpec) -> int | None:
        tracked = self.tracked(node)
        return tracked.pid if tracked is not None and tracked.state() != DOWN else None

    def stop(self, nodes: list[NodeSpec], sig: signal.Signals, timeout_s: float) -> None:
        stop_in_parallel([t for t in (self.tracked(n) for n in nodes) if t is not None], sig, timeout_s)
        for node in nodes:
            self.dir.pidfile(node).unlink(missing_ok=True)

    def freeze(self, node: NodeSpec, paused: bool, timeout_s: float) -> None:
        tracked = self.tracked(node)
        if tracked is None:
            return
        tracked.signal_group(signal.SIGSTOP if paused else signal.SIGCONT)
        wanted = PAUSED if paused else UP
        wait_until(
            lambda: tracked.state() == wanted,
            timeout_s,
            f"{node.name} did not {'stop on SIGSTOP' if paused else 'continue on SIGCONT'}",
        )

    # -- reading ----------------------------------------------------------------------------
    def log_reason(self, node: NodeSpec) -> str:
        try:
            text = self.dir.log_file(node).read_text(errors="replace")[-20000:]
        except OSError:
            return "no log"
        return last_meaningful_line(text)

    def log_where(self, node: NodeSpec) -> str:
        return str(self.dir.log_file(node))

    def quorum_state(self, node: NodeSpec) -> str | None:
        try:
            return (self.dir.data_dir(node) / QUORUM_STATE).read_text()
        except OSError:
            return None

    def fetch_logs(self) -> dict[str, int]:
        """The logs are in DIR/logs/ already."""
        return {}

    # -- network rules (faults/network.py; cluster/net/netfilter.py) ---------------------------------
    def net_ready(self, spec: ClusterSpec) -> None:
        netfilter.require_available()
        if not spec.node_addresses and spec.mode != ZOOKEEPER_MODE:
            raise netfilter.NetworkFaultsUnavailable(
                f"the cluster at {self.dir.root} was made before nodes had their own replication addresses: "
                "recreate it (failsafe clean, failsafe up) to inject network faults"
            )
        for slot, node in enumerate(spec.nodes()):
            tracked = self.tracked(node)
            if tracked is None or self.state(node) == DOWN:
                continue
            if netfilter.process_gid(tracked.pid) != netfilter.node_gid(self.dir.root, slot):
                raise netfilter.NetworkFaultsUnavailable(
                    f"{node.name} (pid {tracked.pid}) does not run under its own group id, so its packets cannot be "
                    "told apart: restart it as root (failsafe broker/controller stop and start, or down and up)"
                )

    def net_leash(self, log_file: Path) -> None:
        return None  # the rules are here: the run's own leash (cluster/net/leash.py) holds them

    def clock_offsets(self) -> dict[int, tuple[float, float]]:
        return {}

    # Clients run where failsafe runs.
    client_host = None

    def check_client_host(self, host: str) -> None:
        raise UserError(
            f"a client runs on host {host!r}, and the cluster at {self.dir.root} is not on hosts: start it with "
            "'failsafe up --inventory' (or --hosts)"
        )

    def net_place(self, node: NodeSpec) -> str:
        return netfilter.LOCAL

    def net_control_address(self, where: str) -> str:
        return LOOPBACK

    def net_chains(self) -> list[netfilter.FaultChain]:
        return netfilter.list_chains(self.dir.root)

    def net_add(self, chain: str, comment: str, rules: dict[str, list[str]]) -> None:
        netfilter.add_chain(self.dir.root, chain, comment, [r for rs in rules.values() for r in rs])

    def net_delete(self, chain: str) -> bool:
        return netfilter.delete_chain(self.dir.root, chain)

    def net_delete_all(self) -> bool:
        return netfilter.delete_table(self.dir.root)

    def disk_layer(self, node: NodeSpec) -> Any:
        return disks.mounted_layer(self.dir, node)

    def data_here(self, node: NodeSpec) -> Path | None:
        backing = disks.backing_dir(self.dir, node)
        # A layer not mounted (a failed start unmounts it): the files are in its backing directory.
        if backing.is_dir() and disks.mounted_layer(self.dir, node) is None:
            return backing
        return self.dir.data_dir(node)

    def disk_unmount(self, nodes: list[NodeSpec]) -> None:
        disks.unmount_nodes(self.dir, nodes)

    def proxy(self, node: NodeSpec) -> Any:
        return proxies.running(self.dir.root, node.name)

    # -- after --------------------------------------------------------------------------------
    def release(self) -> None:
        netfilter.delete_table(self.dir.root)
        disks.unmount(self.dir)
        proxies.stop_all(self.dir.root)
        clocks.reset_all(self.dir.root)

    def remove(self) -> None:
        """Everything of a local cluster is in its directory, which ``clean`` deletes."""


def format_args(cluster_id: str, config: str, spec: ClusterSpec, quorum: str | None = None) -> list[str]:
    """``kafka-storage format``'s arguments; ``quorum``: a dynamic quorum's --initial-controllers (its first voters,
    ID@HOST:PORT:DIRECTORY-ID each), or None for a node that joins one already running (--no-initial-controllers)."""
    # --cluster-id=ID, not "-t ID": an id ZooKeeper-mode Kafka generated may begin with '-'.
    dynamic = (
        ([f"--initial-controllers={quorum}"] if quorum else ["--no-initial-controllers"]) if spec.dynamic_quorum else []
    )
    return [
        "format",
        f"--cluster-id={cluster_id}",
        "-c",
        config,
        *dynamic,
        *(f"--feature={k}={v}" for k, v in spec.features.items()),
    ]


def initial_controllers(spec: ClusterSpec, nodes: list[NodeSpec]) -> str | None:
    """A dynamic quorum's --initial-controllers when ``nodes`` are the cluster's first (every controller of the spec
    among them), each with a new directory id; None otherwise (a node joining a running quorum)."""
    controllers = spec.controller_nodes()
    if not spec.dynamic_quorum or not controllers or not all(c in nodes for c in controllers):
        return None
    return ",".join(f"{n.node_id}@{n.address}:{n.controller_port}:{new_cluster_id()}" for n in controllers)


def stop_in_parallel(tracked: list[TrackedProcess], sig: signal.Signals, timeout_s: float) -> None:
    for t in tracked:
        t.begin_stop(sig)
    for t in tracked:
        t.finish_stop(timeout_s if sig != signal.SIGKILL else KILL_TIMEOUT_S)


def ensure_ports_free(
    nodes: list[NodeSpec], timeout_s: float = PORT_FREE_TIMEOUT_S, spec: ClusterSpec | None = None
) -> None:
    """Every listener port of ``nodes`` can be bound, within ``timeout_s``: the sockets of a node killed a moment ago
    (connections still closing) can hold its address for a little while after the process is gone."""
    wanted = [
        (node, address, port)
        for node in nodes
        for address, port in [
            (node.address, node.controller_port),
            (node.address, node.replication_port),
            (LOOPBACK, spec.direct_port(node) if spec else None),
            # Behind a protocol proxy, the broker's own listener: the proxy's port is the proxy's to hold.
            *(
                (LOOPBACK, p)
                for p in (spec.listener_port(node) if spec else node.port, node.peer_port, node.election_port)
            ),
        ]
        if port is not None
    ]
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
        raise PortInUse(
            f"port {port} on {address} ({node.role} {node.node_id}) is already in use: "
            "stop what listens there or choose another --base-port"
        ) from None


def last_meaningful_line(text: str) -> str:
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
    for line in reversed(lines):
        if "ERROR" in line or "Exception" in line or "error" in line.lower():
            return line[:300]
    return lines[-1][:300] if lines else "no output"
