"""A cluster: opening and creating it, looking at its nodes, acting on one node at a time, and up, down and clean.

Starting nodes and the waits until the cluster is ready are in cluster/nodes/startup.py; what differs between
KRaft and ZooKeeper is its mode's (cluster/modes/mode.py); a lone cluster and a DR pair alike are topologies
(cluster/topology/directory.py).
"""

from __future__ import annotations

import shutil
import signal
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from failsafe.cluster import clocks
from failsafe.cluster.modes import zookeeper
from failsafe.cluster.modes.mode import ClusterMode, mode_of
from failsafe.cluster.net import netfilter
from failsafe.cluster.net.leash import Leashes, NetworkLeash
from failsafe.cluster.nodes import disks, startup
from failsafe.cluster.nodes.control import LocalNodes, NodeControl, stop_in_parallel
from failsafe.cluster.nodes.startup import (  # noqa: F401  (re-exported: callers import them from here)
    DEFAULT_READY_TIMEOUT_S,
    KILL_TIMEOUT_S,
    PORT_FREE_TIMEOUT_S,
    Progress,
    ensure_ports_free,
)
from failsafe.cluster.nodes.startup import quiet as _quiet
from failsafe.cluster.observe.readiness import registered_brokers
from failsafe.cluster.security import secured as security
from failsafe.cluster.site import ClientHost, Leash, NeutralSite, NodeLogs
from failsafe.cluster.spec import ClusterSpec, NodeSpec
from failsafe.cluster.state import LOCK_FILE, ClusterDir, ClusterState, UnreadableState, utc_now
from failsafe.errors import ClusterAlreadyRunning, ClusterNotRunning, FailsafeError, UnknownNode, UserError
from failsafe.jvm.java import Java, find_java
from failsafe.jvm.kafka import KafkaDist, kafka_dist
from failsafe.supervisor import DOWN, PAUSED, UP, ProcessState, TrackedProcess, read_pidfile
from failsafe.tools.admin import new_admin

DEFAULT_STOP_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class NodeStatus:
    node: NodeSpec
    state: ProcessState
    pid: int | None
    active_controller: bool
    # A ZooKeeper node's role as it says itself: leader, follower, standalone (None: not serving).
    zookeeper_mode: str | None = None
    # On a cluster with disk layers: what the node's layer holds unsynced now (bytes, files, directory changes) and
    # what is injected; None: no layer mounted (a plain cluster, or a power cut not yet undone).
    disk: dict | None = None


def node_control(cdir: ClusterDir, spec: ClusterSpec) -> NodeControl:
    """This machine's nodes, or the hosts' when the spec places its nodes on hosts (cluster/nodes/hosts.py, imported
    only then: SSH's library is not loaded by commands on a local cluster)."""
    if not spec.on_hosts:
        return LocalNodes(cdir)
    from failsafe.cluster.nodes.hosts import HostNodes, load_inventory

    return HostNodes(cdir, spec, load_inventory(cdir))


class Cluster(NeutralSite):
    """A cluster failsafe made, on this machine or on hosts (its NodeControl says which): a run site
    (cluster/site.py)."""

    def __init__(self, cdir: ClusterDir, state: ClusterState) -> None:
        self.dir = cdir
        self.state = state
        # Where the nodes run: this machine, or hosts over SSH (cluster/nodes/control.py).
        self.nodes: NodeControl = node_control(cdir, state.spec)
        # From here on every client failsafe runs against these brokers uses this cluster's security settings.
        security.register_clients(cdir.root, state.spec, self.bootstrap_servers.split(","))

    # -- opening and creating -------------------------------------------------------------
    @classmethod
    def open(cls, root: Path) -> Cluster:
        cdir = ClusterDir(Path(root))
        return cls(cdir, cdir.load())

    @classmethod
    def create(cls, root: Path, spec: ClusterSpec, java: Java, dist: KafkaDist, progress: Progress = _quiet) -> Cluster:
        """Write every node's config and format its storage; starts nothing that outlives this call."""
        cdir = ClusterDir(Path(root))
        mode = mode_of(spec)
        state = ClusterState(spec=spec, cluster_id=mode.new_cluster_id(), created_at=utc_now())
        cluster = cls(cdir, state)
        cluster.nodes.prepare(spec, java, dist)
        formatted = mode.formatted_nodes(spec)
        if formatted:
            progress(f"formatting storage of {len(formatted)} nodes (cluster id {state.cluster_id})")
            cluster.format_storage(formatted, java, dist)
        cdir.save(state)
        return cluster

    def format_storage(self, nodes: list[NodeSpec], java: Java, dist: KafkaDist) -> None:
        """kafka-storage format of each KRaft node's log dirs with the cluster id, all at once."""
        startup.format_storage(self, nodes, java, dist)

    # -- its Java and Kafka --------------------------------------------------------------------
    @cached_property
    def java(self) -> Java:
        return find_java()

    @cached_property
    def dist(self) -> KafkaDist:
        """The Kafka distribution the cluster was made with (its jars, resolved once)."""
        return kafka_dist(self.spec.kafka_version)

    def dist_of(self, node: NodeSpec) -> KafkaDist:
        """The Kafka release ``node`` runs: the cluster's, or another while a rolling upgrade is under way."""
        version = self.state.version_of(node)
        return self.dist if version == self.spec.kafka_version else kafka_dist(version)

    # -- looking ----------------------------------------------------------------------------
    @property
    def spec(self) -> ClusterSpec:
        return self.state.spec

    @property
    def mode(self) -> ClusterMode:
        """KRaft, ZooKeeper or migrating, as an object (cluster/modes/mode.py); a migration changes it as it goes."""
        return mode_of(self.spec)

    @property
    def bootstrap_servers(self) -> str:
        return self.spec.bootstrap_servers()

    def node(self, node_id: int, role: str | None = None) -> NodeSpec:
        for node in self.spec.nodes():
            if node.node_id == node_id and (role is None or role in node.roles):
                return node
        ids = [n.node_id for n in self.spec.nodes() if role is None or role in n.roles]
        kind = role or "node"
        raise UnknownNode(
            f"no {kind} with id {node_id} in the cluster at {self.dir.root}: its {kind}s are {', '.join(map(str, ids))}"
        )

    def tracked(self, node: NodeSpec) -> TrackedProcess | None:
        """The node's process on this machine (None on hosts: cluster/nodes/hosts.py knows those)."""
        return self.nodes.tracked(node) if isinstance(self.nodes, LocalNodes) else None

    def node_state(self, node: NodeSpec) -> ProcessState:
        return self.nodes.state(node)

    def running_nodes(self) -> list[NodeSpec]:
        return [n for n in self.spec.nodes() if self.node_state(n) != DOWN]

    def active_controller(self) -> int | None:
        """The active controller's node id: the KRaft quorum's leader, or in ZooKeeper mode the broker in
        /controller."""
        return self.mode.active_controller(self)

    def active_controller_node(self) -> NodeSpec | None:
        active = self.active_controller()
        if active is None:
            return None
        return self.node(active, self.mode.controller_role)

    # -- where it runs (cluster/site.py: what the engine, the faults and the CLI ask of a run's site) -----------
    def net_ready(self) -> None:
        self.nodes.net_ready(self.spec)

    def net_leash(self, log_file: Path) -> Leash:
        here = NetworkLeash(self.dir.root, log_file)
        try:
            # On hosts, a leash on each host holds the rules there too (cluster/net/hosts.py); here, a watchdog holds
            # the clients'.
            there = self.nodes.net_leash(log_file.with_name("network-leash-hosts.log"))
        except BaseException:
            here.close()
            raise
        return here if there is None else Leashes(here, there)

    def clock_offsets_ns(self) -> dict[int, int]:
        return {node_id: round(offset_s * 1e9) for node_id, (offset_s, _) in self.nodes.clock_offsets().items()}

    def node_logs(self) -> NodeLogs | None:
        self.nodes.fetch_logs()  # on hosts: their logs copied into DIR/logs/ for reading
        return (
            {n.node_id: self.dir.log_file(n) for n in self.spec.nodes() if not n.is_zookeeper},
            {n.node_id: self.dir.log_file(n) for n in self.spec.zookeeper_nodes()},
        )

    def check_client_host(self, host: str) -> None:
        self.nodes.check_client_host(host)

    @property
    def client_host(self) -> ClientHost | None:
        return self.nodes.client_host

    def status(self) -> list[NodeStatus]:
        active = self.active_controller_node()
        out = []
        for node in self.spec.nodes():
            state = self.node_state(node)
            zk_mode = zookeeper.server_mode(node.port) if node.is_zookeeper and state == UP else None
            disk = self.disk_status(node) if self.spec.volatile_disks else None
            out.append(
                NodeStatus(node, state, self.nodes.pid(node) if state != DOWN else None, node == active, zk_mode, disk)
            )
        return out

    # -- starting (cluster/nodes/startup.py) ------------------------------------------------------
    def start(
        self,
        nodes: list[NodeSpec],
        java: Java,
        dist: KafkaDist,
        timeout_s: float = DEFAULT_READY_TIMEOUT_S,
        progress: Progress = _quiet,
    ) -> None:
        """Start ``nodes`` (all down, their ports checked free) and wait until the cluster is ready; on any failure or
        interruption, stop what was started."""
        startup.start(self, nodes, java, dist, timeout_s, progress)

    def wait_ready(
        self,
        started: list[NodeSpec],
        timeout_s: float,
        progress: Progress = _quiet,
        reported_timeout_s: float | None = None,
    ) -> None:
        startup.wait_ready(self, started, timeout_s, progress, reported_timeout_s)

    def restart(
        self, nodes: list[NodeSpec], timeout_s: float = DEFAULT_READY_TIMEOUT_S, progress: Progress = _quiet
    ) -> list[NodeSpec]:
        """Start those of ``nodes`` that are down, all at once, and wait until the cluster is ready; returns them.

        All at once and one wait: two brokers restarted one after the other would double a heal.
        """
        with self.dir.lock():
            down = [n for n in nodes if self.node_state(n) == DOWN]
            if down:
                self.nodes.ensure_ports_free(down, self.spec)
                self.start(down, self.java, self.dist, timeout_s, progress)
            return down

    def not_whole(self) -> list[str]:
        """Why the cluster is not whole (a node down or paused, a broker not registered); empty when it is."""
        problems = [
            f"{n.role} {n.node_id} is {state}" for n in self.spec.nodes() if (state := self.node_state(n)) != UP
        ]
        if problems:
            return problems
        brokers = self.spec.brokers_nodes()
        want = {n.node_id for n in brokers}
        for node in brokers:
            missing = sorted(want - registered_brokers(node.port, host=node.client_address))
            if missing:
                problems.append(
                    f"broker {node.node_id} does not see broker{'s' if len(missing) > 1 else ''} "
                    f"{', '.join(map(str, missing))} registered and unfenced"
                )
        return problems

    # -- stopping ---------------------------------------------------------------------------
    def stop_nodes(self, nodes: list[NodeSpec], sig: signal.Signals, timeout_s: float) -> None:
        """Signal all first, then wait for each: stopping in parallel, not one after another."""
        self.nodes.stop(nodes, sig, timeout_s)

    def down(self, timeout_s: float = DEFAULT_STOP_TIMEOUT_S) -> list[NodeSpec]:
        """Controlled shutdown of brokers first (they need the quorum for it), then controllers."""
        running = self.running_nodes()
        brokers_only = [n for n in running if n.is_broker and not n.is_controller]
        zookeepers = [n for n in running if n.is_zookeeper]
        controllers = [n for n in running if n not in brokers_only and n not in zookeepers]
        # ZooKeeper last: a ZooKeeper-mode broker's controlled shutdown goes through it.
        for group in (brokers_only, controllers, zookeepers):
            self.stop_nodes(group, signal.SIGTERM, timeout_s)
        # Network faults die with the cluster: no rule of failsafe's outlives it; nor does a disk layer.
        self.nodes.release()
        return running

    def power_off(self, node: NodeSpec, *, torn: bool = False, seed: int = 0) -> dict:
        """A power cut of ``node``, which must be down (killed): its disk layer forgets what was not synced; returns
        what was lost."""
        if self.node_state(node) != DOWN:
            raise UserError(f"{node.role} {node.node_id} is running: kill it before its power cut")
        return disks.power_off(self.nodes.disk_layer(node), node, torn=torn, seed=seed)

    def disk_inject(self, node: NodeSpec, kind: str, *, ops: str = "both", glob: str | None = None, **fields) -> dict:
        """``node``'s disk full (``kind`` "full"), failing ("error", EIO for ``ops`` of the files matching ``glob``),
        slow ("slow": delay_ms, rate_mb_s) or reading back wrong bytes ("corrupt": bits, seed)."""
        return disks.inject(self.nodes.disk_layer(node), node, kind, ops=ops, glob=glob, **fields)

    def disk_clear(self, node: NodeSpec, kind: str) -> dict | None:
        """``node``'s disk back (space freed, or the failing disk replaced); None when a power cut since took the
        layer."""
        return disks.clear(self.nodes.disk_layer(node), kind)

    def protocol_proxy(self, node: NodeSpec) -> Any:
        """``node``'s protocol proxy when it runs (the cluster made with --protocol-proxy), else None."""
        return self.nodes.proxy(node)

    def clock_file(self, node: NodeSpec) -> Path | None:
        """``node``'s clock file (the cluster made with --clock-faults), else None."""
        if not self.spec.clock_faults or node.is_zookeeper:
            return None
        return clocks.clock_file(self.dir.root.resolve(), node.name)

    def data_dir(self, node: NodeSpec) -> Path | None:
        """``node``'s log.dirs here (the disk layer's mountpoint when it has one); None for a node on a host."""
        return self.nodes.data_here(node)

    def disk_status(self, node: NodeSpec) -> dict | None:
        """What ``node``'s disk layer holds unsynced now and which durability calls it saw; None when it has no layer
        mounted."""
        return disks.unsynced(self.nodes.disk_layer(node))

    def signal_node(self, node: NodeSpec, action: str, timeout_s: float) -> None:
        state = self.node_state(node)
        if state == DOWN:
            raise UserError(
                f"{node.role} {node.node_id} is not running: start it with 'failsafe {_role_word(node)} start "
                f"{node.node_id}'"
            )
        if action == "kill":
            self.stop_nodes([node], signal.SIGKILL, timeout_s)
        elif action == "stop":
            self.stop_nodes([node], signal.SIGTERM, timeout_s)
        elif action == "pause":
            self.nodes.freeze(node, True, timeout_s)
        elif action == "resume":
            if state != PAUSED:
                raise UserError(f"{node.role} {node.node_id} is not paused: nothing to resume")
            self.nodes.freeze(node, False, timeout_s)
        else:
            raise ValueError(action)


def _role_word(node: NodeSpec) -> str:
    return "broker" if node.is_broker else "zookeeper" if node.is_zookeeper else "controller"


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
        target = cluster.spec if cluster else spec
        places = cluster.nodes if cluster else node_control(cdir, spec)
        places.ensure_ports_free(target.nodes(), target)
        # Rules a crashed failsafe left for this directory would cut the new cluster's links.
        places.net_delete_all()
        if cluster is None:
            cluster = Cluster.create(cdir.root, spec, java, dist, progress)
        cluster.start(cluster.spec.nodes(), java, dist, timeout_s, progress)
        granted = security.grant_client_acls(new_admin(cluster.bootstrap_servers), cluster.spec, timeout_s)
        if granted:
            progress(f"{granted} ACLs of failsafe's client principal in force")
        return cluster


def start_node(cluster: Cluster, node: NodeSpec, timeout_s: float, progress: Progress = _quiet) -> None:
    with cluster.dir.lock():
        if cluster.node_state(node) != DOWN:
            raise UserError(f"{node.role} {node.node_id} is already running (pid {cluster.nodes.pid(node)})")
        cluster.nodes.ensure_ports_free([node], cluster.spec)
        cluster.start([node], cluster.java, cluster.dist, timeout_s, progress)


def down(root: Path, timeout_s: float = DEFAULT_STOP_TIMEOUT_S) -> list[NodeSpec]:
    cluster = Cluster.open(root)
    with cluster.dir.lock():
        return cluster.down(timeout_s)


def _clean_hosts(cdir: ClusterDir, state: ClusterState, timeout_s: float) -> None:
    """Stop the nodes on their hosts and delete the cluster's files there; if that fails, the directory here is kept (it
    is what says which hosts run what): one line saying so."""
    try:
        cluster = Cluster(cdir, state)
        cluster.down(timeout_s)
        cluster.nodes.remove()
    except FailsafeError as e:
        hosts = ", ".join(sorted(set(state.spec.placement.values())))
        raise UserError(
            f"the cluster at {cdir.root} runs on hosts ({hosts}) and stopping it there failed ({e}): its "
            f"directory is kept so "
            f"that 'failsafe clean' can try again; to give up, stop what runs there yourself and delete {cdir.root}"
        ) from e


def clean(root: Path, timeout_s: float = DEFAULT_STOP_TIMEOUT_S, keep: tuple[str, ...] = ()) -> None:
    """Stop the cluster at ``root`` and delete the directory, also when its state file is unreadable; with ``keep``,
    everything in it but the entries of those names (a run's directory, runs/, beside the cluster it deletes)."""
    cdir = ClusterDir(Path(root))
    if not (cdir.has_state() or (cdir.root / LOCK_FILE).exists()):
        raise ClusterNotRunning(
            f"no failsafe cluster at {cdir.root}: nothing to clean (failsafe only deletes directories it made)"
        )
    with cdir.lock():
        try:
            state = cdir.load() if cdir.has_state() else None
        except UnreadableState:
            state = None
        if state is not None and state.spec.on_hosts:
            _clean_hosts(cdir, state, timeout_s)
        elif state is not None:
            cluster = Cluster(cdir, state)
            cluster.down(timeout_s)
        else:
            # Which nodes it has is unknown (no state, or none readable); what its pidfiles track is not.
            stop_in_parallel(
                [t for t in map(read_pidfile, sorted(cdir.pids_dir.glob("*.pid"))) if t is not None],
                signal.SIGTERM,
                timeout_s,
            )
        netfilter.delete_table(cdir.root)
        disks.unmount(cdir)  # before the tree goes: a layer's mountpoint is in it
    if not keep:
        shutil.rmtree(cdir.root)
        return
    for entry in cdir.root.iterdir():
        if entry.name in keep:
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()
