"""Bringing a cluster's nodes up and down, and acting on one node at a time."""

from __future__ import annotations

import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from failsafe.cluster import netfilter, zookeeper
from failsafe.cluster.config import render_server_properties
from failsafe.cluster.readiness import port_accepts, port_is_free, quorum_leader, registered_brokers
from failsafe.cluster.spec import KRAFT_MODE, LOOPBACK, ZOOKEEPER_HEAP, ZOOKEEPER_MODE, ClusterSpec, NodeSpec
from failsafe.cluster.state import LOCK_FILE, ClusterDir, ClusterState, new_cluster_id, utc_now
from failsafe.cluster.watchdog import Leash
from failsafe.dist.cds import share_options
from failsafe.dist.java import Java, find_java
from failsafe.dist.jvm import server_command, tool_command, zookeeper_command
from failsafe.dist.kafka import KafkaDist, kafka_dist
from failsafe.dist.logging_config import write_logging_configs
from failsafe.errors import (
    ClusterAlreadyRunning,
    ClusterNotRunning,
    ClusterStartError,
    PortInUse,
    UnknownNode,
    UserError,
)
from failsafe.supervisor import DOWN, PAUSED, UP, ProcessState, TrackedProcess, read_pidfile, spawn
from failsafe.waiting import WaitTimeout, wait_until

DEFAULT_READY_TIMEOUT_S = 120.0
DEFAULT_STOP_TIMEOUT_S = 60.0
KILL_TIMEOUT_S = 15.0
FORMAT_TIMEOUT_S = 120.0
READY_POLL_S = 0.25
# How long a start waits for a node's ports to be free before it says they are in use.
PORT_FREE_TIMEOUT_S = 5.0

Progress = Callable[[str], None]


def _quiet(_: str) -> None:
    pass


@dataclass(frozen=True)
class NodeStatus:
    node: NodeSpec
    state: ProcessState
    pid: int | None
    active_controller: bool
    # A ZooKeeper node's role as it says itself: leader, follower, standalone (None: not serving).
    zookeeper_mode: str | None = None


class Cluster:
    def __init__(self, cdir: ClusterDir, state: ClusterState) -> None:
        self.dir = cdir
        self.state = state

    # -- opening and creating -------------------------------------------------------------
    @classmethod
    def open(cls, root: Path) -> Cluster:
        cdir = ClusterDir(Path(root))
        return cls(cdir, cdir.load())

    @classmethod
    def create(cls, root: Path, spec: ClusterSpec, java: Java, dist: KafkaDist, progress: Progress = _quiet) -> Cluster:
        """Write every node's config and format its storage; starts nothing that outlives this call."""
        cdir = ClusterDir(Path(root))
        # In ZooKeeper mode the first broker generates the cluster id; failsafe reads it once the cluster is ready.
        state = ClusterState(spec=spec, cluster_id="" if spec.mode == ZOOKEEPER_MODE else new_cluster_id(), created_at=utc_now())
        cluster = cls(cdir, state)
        write_logging_configs(cdir.root)
        for node in spec.nodes():
            # No state file means no failsafe cluster owns these dirs: a failed earlier create.
            shutil.rmtree(cdir.data_dir(node), ignore_errors=True)
            cdir.config_file(node).write_text(render_server_properties(spec, node, cdir.root.resolve()))
            if node.is_zookeeper:
                cdir.data_dir(node).mkdir(parents=True)
                (cdir.data_dir(node) / "myid").write_text(f"{node.node_id}\n")
        if spec.mode == KRAFT_MODE:
            progress(f"formatting storage of {len(spec.nodes())} nodes (cluster id {state.cluster_id})")
            cluster.format_storage([n for n in spec.nodes() if not n.is_zookeeper], java, dist)
        cdir.save(state)
        return cluster

    def format_storage(self, nodes: list[NodeSpec], java: Java, dist: KafkaDist) -> None:
        """kafka-storage format of each KRaft node's log dirs with the cluster id, all at once."""
        procs = []
        for node in nodes:
            # --cluster-id=ID, not "-t ID": an id ZooKeeper-mode Kafka generated may begin with '-'.
            args = ["format", f"--cluster-id={self.state.cluster_id}", "-c", str(self.dir.config_file(node).resolve())]
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

    # -- its Java and Kafka --------------------------------------------------------------------
    @cached_property
    def java(self) -> Java:
        return find_java()

    @cached_property
    def dist(self) -> KafkaDist:
        """The Kafka distribution the cluster was made with (its jars, resolved once)."""
        return kafka_dist(self.spec.kafka_version)

    # -- looking ----------------------------------------------------------------------------
    @property
    def spec(self) -> ClusterSpec:
        return self.state.spec

    @property
    def bootstrap_servers(self) -> str:
        return self.spec.bootstrap_servers()

    def node(self, node_id: int, role: str | None = None) -> NodeSpec:
        for node in self.spec.nodes():
            if node.node_id == node_id and (role is None or role in node.roles):
                return node
        ids = [n.node_id for n in self.spec.nodes() if role is None or role in n.roles]
        kind = role or "node"
        raise UnknownNode(f"no {kind} with id {node_id} in the cluster at {self.dir.root}: its {kind}s are {', '.join(map(str, ids))}")

    def tracked(self, node: NodeSpec) -> TrackedProcess | None:
        return read_pidfile(self.dir.pidfile(node))

    def node_state(self, node: NodeSpec) -> ProcessState:
        tracked = self.tracked(node)
        return DOWN if tracked is None else tracked.state()

    def running_nodes(self) -> list[NodeSpec]:
        return [n for n in self.spec.nodes() if self.node_state(n) != DOWN]

    def active_controller(self) -> int | None:
        """The active controller's node id: the KRaft quorum's leader, or in ZooKeeper mode the broker in /controller."""
        if self.spec.mode == ZOOKEEPER_MODE:
            seen = zookeeper.view(self.spec.zookeeper_connect())
            return seen[1] if seen else None
        live = [n for n in self.spec.controller_nodes() if self.node_state(n) == UP]
        leader = quorum_leader([self.dir.data_dir(n) for n in live])
        return leader if leader in {n.node_id for n in live} else None

    def active_controller_node(self) -> NodeSpec | None:
        active = self.active_controller()
        if active is None:
            return None
        return self.node(active, "broker" if self.spec.mode == ZOOKEEPER_MODE else "controller")

    def status(self) -> list[NodeStatus]:
        active = self.active_controller_node()
        out = []
        for node in self.spec.nodes():
            tracked = self.tracked(node)
            state = DOWN if tracked is None else tracked.state()
            zk_mode = zookeeper.server_mode(node.port) if node.is_zookeeper and state == UP else None
            out.append(NodeStatus(node, state, tracked.pid if tracked and state != DOWN else None, node == active, zk_mode))
        return out

    # -- starting ---------------------------------------------------------------------------
    def start(self, nodes: list[NodeSpec], java: Java, dist: KafkaDist, timeout_s: float = DEFAULT_READY_TIMEOUT_S, progress: Progress = _quiet) -> None:
        """Start ``nodes`` (all down, their ports checked free) and wait until the cluster is ready; on any failure or
        interruption, stop what was started. The leash covers a SIGKILL of this command."""
        pidfiles = [self.dir.pidfile(n) for n in nodes]
        with Leash(self.dir.root, pidfiles, self.dir.logs_dir / "watchdog.log") as leash:
            try:
                jvm_options = [*self.spec.jvm_options] or share_options(java, dist)
                deadline = time.monotonic() + timeout_s
                # ZooKeeper serves before any broker starts: a broker that cannot reach it within
                # zookeeper.connection.timeout.ms (18 s) exits, which several JVMs starting at once on
                # two cores can make happen (seen in CI).
                zookeepers = [n for n in nodes if n.is_zookeeper]
                for batch in (zookeepers, [n for n in nodes if not n.is_zookeeper]):
                    if not batch:
                        continue
                    for node in batch:
                        self._spawn(node, java, dist, jvm_options)
                    progress(f"started {', '.join(n.name for n in batch)}")
                    self.wait_ready(batch, max(0.0, deadline - time.monotonic()), progress, timeout_s)
            except BaseException:
                self.stop_nodes(nodes, signal.SIGKILL, KILL_TIMEOUT_S)
                raise
            leash.release()

    def _spawn(self, node: NodeSpec, java: Java, dist: KafkaDist, jvm_options: list[str]) -> None:
        config = self.dir.config_file(node).resolve()
        if node.is_zookeeper:
            cmd = zookeeper_command(java, dist, config, self.dir.root.resolve(), ZOOKEEPER_HEAP, jvm_options)
        else:
            cmd = server_command(java, dist, config, self.dir.root.resolve(), self.spec.heap, jvm_options)
        if netfilter.can_set_gids():
            # Its own group id: network faults match the node's packets by it (cluster/netfilter.py).
            cmd = netfilter.with_gid(cmd, netfilter.node_gid(self.dir.root, self.spec.nodes().index(node)))
        # Nodes outlive this command (other terminals act on them): the leash guards the start instead.
        spawn(cmd, name=node.name, log_path=self.dir.log_file(node), pidfile=self.dir.pidfile(node), cwd=self.dir.root,
              dies_with_parent=False)

    def wait_ready(self, started: list[NodeSpec], timeout_s: float, progress: Progress = _quiet,
                   reported_timeout_s: float | None = None) -> None:
        deadline = time.monotonic() + timeout_s
        timeout_s = timeout_s if reported_timeout_s is None else reported_timeout_s

        def remaining() -> float:
            return max(0.0, deadline - time.monotonic())

        def none_died() -> None:
            for node in started:
                if self.node_state(node) == DOWN:
                    log = self.dir.log_file(node)
                    raise ClusterStartError(f"{node.name} ({node.role}) exited during start-up: {_log_reason(log)} (log: {log})")

        zookeepers = [n for n in started if n.is_zookeeper]
        if zookeepers:
            progress(f"waiting for ZooKeeper ({', '.join(str(n.port) for n in zookeepers)}) to serve")
            self._wait(lambda: none_died() or all(zookeeper.server_mode(n.port) for n in zookeepers),
                       remaining(), f"ZooKeeper nodes {_ids(zookeepers)} did not serve requests within {timeout_s:g}s")

        controllers = [n for n in started if n.is_controller]
        if controllers:
            progress(f"waiting for controller listeners ({', '.join(str(n.controller_port) for n in controllers)})")
            self._wait(lambda: none_died() or all(port_accepts(n.controller_port, n.address) for n in controllers),
                       remaining(), f"controllers {_ids(controllers)} did not open their ports within {timeout_s:g}s")

        def brokers_ready() -> bool:
            none_died()
            up = [n for n in self.spec.brokers_nodes() if self.node_state(n) == UP]
            want = {n.node_id for n in up}
            seen = [registered_brokers(n.port) for n in up]
            progress(f"brokers registered{'' if self.spec.uses_zookeeper else ' and unfenced'}: "
                     f"{len(set.intersection(*seen) if seen else set())}/{len(want)}")
            return all(s >= want for s in seen) and self._controller_elected()

        if any(n.is_broker for n in started):
            self._wait(brokers_ready, remaining(),
                       f"brokers {_ids([n for n in started if n.is_broker])} did not register with "
                       f"{'ZooKeeper' if self.spec.mode == ZOOKEEPER_MODE else 'the controller quorum'} within {timeout_s:g}s: "
                       f"see the logs in {self.dir.logs_dir}")
        if self.spec.mode == ZOOKEEPER_MODE and not self.state.cluster_id:
            self._save_zookeeper_cluster_id()

    def _controller_elected(self) -> bool:
        """KRaft: brokers register only with an active controller. ZooKeeper mode: a broker holds /controller."""
        if self.spec.mode != ZOOKEEPER_MODE:
            return True
        seen = zookeeper.view(self.spec.zookeeper_connect())
        return seen is not None and seen[1] is not None

    def _save_zookeeper_cluster_id(self) -> None:
        try:
            with zookeeper.connected(self.spec.zookeeper_connect()) as client:
                found = zookeeper.cluster_id(client)
        except zookeeper.ZooKeeperUnavailable:
            return
        if found:
            self.state = ClusterState(self.spec, found, self.state.created_at)
            self.dir.save(self.state)

    @staticmethod
    def _wait(condition: Callable[[], object], timeout_s: float, message: str) -> None:
        try:
            wait_until(condition, timeout_s, message, poll_interval_s=READY_POLL_S)
        except WaitTimeout as e:
            raise ClusterStartError(str(e)) from e

    def restart(self, nodes: list[NodeSpec], timeout_s: float = DEFAULT_READY_TIMEOUT_S, progress: Progress = _quiet) -> list[NodeSpec]:
        """Start those of ``nodes`` that are down, all at once, and wait until the cluster is ready; returns them.

        All at once and one wait: two brokers restarted one after the other would double a heal.
        """
        with self.dir.lock():
            down = [n for n in nodes if self.node_state(n) == DOWN]
            if down:
                ensure_ports_free(down)
                self.start(down, self.java, self.dist, timeout_s, progress)
            return down

    def not_whole(self) -> list[str]:
        """Why the cluster is not whole (a node down or paused, a broker not registered); empty when it is."""
        problems = [f"{n.role} {n.node_id} is {state}" for n in self.spec.nodes() if (state := self.node_state(n)) != UP]
        if problems:
            return problems
        brokers = self.spec.brokers_nodes()
        want = {n.node_id for n in brokers}
        for node in brokers:
            missing = sorted(want - registered_brokers(node.port))
            if missing:
                problems.append(f"broker {node.node_id} does not see broker{'s' if len(missing) > 1 else ''} "
                                f"{', '.join(map(str, missing))} registered and unfenced")
        return problems

    # -- stopping ---------------------------------------------------------------------------
    def stop_nodes(self, nodes: list[NodeSpec], sig: signal.Signals, timeout_s: float) -> None:
        """Signal all first, then wait for each: stopping in parallel, not one after another."""
        tracked = [t for t in (self.tracked(n) for n in nodes) if t is not None]
        for t in tracked:
            t.begin_stop(sig)
        for t in tracked:
            t.finish_stop(timeout_s if sig != signal.SIGKILL else KILL_TIMEOUT_S)
        for node in nodes:
            self.dir.pidfile(node).unlink(missing_ok=True)

    def down(self, timeout_s: float = DEFAULT_STOP_TIMEOUT_S) -> list[NodeSpec]:
        """Controlled shutdown of brokers first (they need the quorum for it), then controllers."""
        running = self.running_nodes()
        brokers_only = [n for n in running if n.is_broker and not n.is_controller]
        zookeepers = [n for n in running if n.is_zookeeper]
        controllers = [n for n in running if n not in brokers_only and n not in zookeepers]
        # ZooKeeper last: a ZooKeeper-mode broker's controlled shutdown goes through it.
        for group in (brokers_only, controllers, zookeepers):
            self.stop_nodes(group, signal.SIGTERM, timeout_s)
        # Network faults die with the cluster: no rule of failsafe's outlives it.
        netfilter.delete_table(self.dir.root)
        return running

    def signal_node(self, node: NodeSpec, action: str, timeout_s: float) -> None:
        tracked = self.tracked(node)
        state = DOWN if tracked is None else tracked.state()
        if state == DOWN or tracked is None:
            raise UserError(f"{node.role} {node.node_id} is not running: start it with 'failsafe {_role_word(node)} start {node.node_id}'")
        if action == "kill":
            self.stop_nodes([node], signal.SIGKILL, timeout_s)
        elif action == "stop":
            self.stop_nodes([node], signal.SIGTERM, timeout_s)
        elif action == "pause":
            tracked.signal_group(signal.SIGSTOP)
            wait_until(lambda: tracked.state() == PAUSED, timeout_s, f"{node.name} did not stop on SIGSTOP")
        elif action == "resume":
            if state != PAUSED:
                raise UserError(f"{node.role} {node.node_id} is not paused: nothing to resume")
            tracked.signal_group(signal.SIGCONT)
            wait_until(lambda: tracked.state() == UP, timeout_s, f"{node.name} did not continue on SIGCONT")
        else:
            raise ValueError(action)


def ensure_ports_free(nodes: list[NodeSpec], timeout_s: float = PORT_FREE_TIMEOUT_S) -> None:
    """Every listener port of ``nodes`` can be bound, within ``timeout_s``: the sockets of a node killed a moment ago
    (connections still closing) can hold its address for a little while after the process is gone."""
    wanted = [(node, address, port) for node in nodes
              for address, port in [(node.address, node.controller_port), (node.address, node.replication_port),
                                    *((LOOPBACK, p) for p in (node.port, node.peer_port, node.election_port))]
              if port is not None]

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


def _role_word(node: NodeSpec) -> str:
    return "broker" if node.is_broker else "zookeeper" if node.is_zookeeper else "controller"


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


# -- the commands, composed ----------------------------------------------------------------
def up(root: Path, spec: ClusterSpec, explicit: set[str], timeout_s: float, progress: Progress = _quiet) -> Cluster:
    """Create (or restart, with its saved spec) the cluster at ``root`` and wait until ready.

    ``explicit`` names the spec fields the user set: on an existing cluster they must match.
    """
    spec.validate()
    cdir = ClusterDir(Path(root))
    with cdir.lock():
        if cdir.has_state():
            cluster = Cluster(cdir, cdir.load())
            running = cluster.running_nodes()
            if running:
                raise ClusterAlreadyRunning(
                    f"a cluster is already running at {cdir.root} (bootstrap {cluster.bootstrap_servers}): "
                    f"use it, or stop it first with 'failsafe down --dir {cdir.root}'"
                )
            saved = cluster.spec.to_json()
            wanted = spec.to_json()
            differ = sorted(f for f in explicit if saved.get(f) != wanted.get(f))
            if differ:
                raise UserError(
                    f"the stopped cluster at {cdir.root} was made with other {', '.join(differ)}: "
                    f"run 'failsafe up' without them to restart it, or 'failsafe clean --dir {cdir.root}' to start over"
                )
            progress(f"restarting the stopped cluster at {cdir.root} (data kept)")
        else:
            cluster = None
        java = find_java()
        dist = kafka_dist((cluster.spec if cluster else spec).kafka_version)
        ensure_ports_free((cluster.spec if cluster else spec).nodes())
        # Rules a crashed failsafe left for this directory would cut the new cluster's links.
        netfilter.delete_table(cdir.root)
        if cluster is None:
            cluster = Cluster.create(cdir.root, spec, java, dist, progress)
        cluster.start(cluster.spec.nodes(), java, dist, timeout_s, progress)
        return cluster


def start_node(cluster: Cluster, node: NodeSpec, timeout_s: float, progress: Progress = _quiet) -> None:
    with cluster.dir.lock():
        if cluster.node_state(node) != DOWN:
            raise UserError(f"{node.role} {node.node_id} is already running (pid {cluster.tracked(node).pid})")
        ensure_ports_free([node])
        cluster.start([node], cluster.java, cluster.dist, timeout_s, progress)


def down(root: Path, timeout_s: float = DEFAULT_STOP_TIMEOUT_S) -> list[NodeSpec]:
    cluster = Cluster.open(root)
    with cluster.dir.lock():
        return cluster.down(timeout_s)


def clean(root: Path, timeout_s: float = DEFAULT_STOP_TIMEOUT_S) -> None:
    cdir = ClusterDir(Path(root))
    if not (cdir.has_state() or (cdir.root / LOCK_FILE).exists()):
        raise ClusterNotRunning(f"no failsafe cluster at {cdir.root}: nothing to clean (failsafe only deletes directories it made)")
    if cdir.has_state():
        down(root, timeout_s)
    netfilter.delete_table(cdir.root)
    shutil.rmtree(cdir.root)
