"""What a topology reports about its clusters: their status, the facts a run records, what ``down`` stopped.

Shared by the lone cluster and the DR pair (cluster/topology/directory.py, cluster/topology/pair.py), so both say it in
the same words and the same JSON."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from failsafe import disk
from failsafe.cluster import tiered
from failsafe.cluster.observe import journal
from failsafe.cluster.observe.journal import OperatorAction
from failsafe.cluster.observe.metrics import endpoint
from failsafe.cluster.spec import ClusterSpec
from failsafe.cluster.topology.lifecycle import Cluster, NodeStatus
from failsafe.cluster.topology.mirror import MirrorFlow
from failsafe.jvm.java import find_java
from failsafe.supervisor import UP, ProcessState

# The lone cluster's alias among a topology's clusters (a DR pair's are MirrorMaker's: primary, backup).
LONE = "cluster"
# How many of the operator's last actions a cluster's status holds.
RECENT_ACTIONS = 5


@dataclass(frozen=True)
class MirrorStatus:
    """A DR pair's MirrorMaker of one flow, as its pidfile and directory show it."""

    flow: MirrorFlow
    pid: int | None
    state: ProcessState
    properties: Path


@dataclass(frozen=True)
class ClusterStatus:
    """One cluster as 'failsafe status' shows it; also the status of a topology that is one cluster."""

    root: Path
    spec: ClusterSpec
    cluster_id: str
    bootstrap_servers: str
    nodes: list[NodeStatus]
    operator_actions: list[OperatorAction]
    # Why no active controller is shown although a node that could be it is up (None: one is shown, or none could be).
    note: str | None = None

    @property
    def active_controller(self) -> int | None:
        return next((r.node.node_id for r in self.nodes if r.active_controller), None)

    @property
    def clusters(self) -> dict[str, ClusterStatus]:
        return {LONE: self}

    @property
    def mirrors(self) -> list[MirrorStatus]:
        return []

    def to_json(self) -> dict[str, Any]:
        spec = self.spec
        return {
            "dir": str(self.root),
            "mode": spec.mode,
            "kafka_version": spec.kafka_version,
            "profile": {"name": spec.profile, "version": spec.profile_version},
            "cluster_id": self.cluster_id,
            "bootstrap_servers": self.bootstrap_servers,
            "active_controller": self.active_controller,
            **({"zookeeper_connect": spec.zookeeper_connect()} if spec.zookeepers else {}),
            "nodes": [
                {
                    "id": r.node.node_id,
                    "role": r.node.role,
                    "pid": r.pid,
                    "port": r.node.port,
                    "rack": spec.rack_of(r.node),
                    "controller_port": r.node.controller_port,
                    "state": r.state,
                    "active_controller": r.active_controller,
                    **({"host": r.node.address} if spec.on_hosts else {}),
                    **({"zookeeper_mode": r.zookeeper_mode} if r.node.is_zookeeper else {}),
                    **({"disk": _disk_json(r.disk)} if spec.volatile_disks else {}),
                    **({"metrics": endpoint(spec, r.node)} if spec.metrics else {}),
                }
                for r in self.nodes
            ],
            "operator_actions": [a.to_json() for a in self.operator_actions],
            **({"remote_store": self.remote_store()} if spec.tiered_storage else {}),
        }

    def remote_store(self) -> dict[str, Any]:
        """A tiered cluster's remote store: where it is, whether its layer is mounted, what it holds per partition."""
        layer = tiered.store_layer(self.root)
        return {
            "dir": str(tiered.remote_dir(self.root)),
            "mounted": layer is not None and disk.is_mounted(tiered.remote_dir(self.root)),
            "partitions": tiered.remote_segments(self.root),
        }


def _disk_json(disk: dict | None) -> dict[str, Any] | None:
    """A node's disk layer as status shows it: unsynced bytes, files and directory changes, and what is injected."""
    if disk is None:
        return None
    return {
        "unsynced_bytes": disk["unsynced"]["bytes"],
        "unsynced_files": disk["unsynced"]["files"],
        "unsynced_dir_changes": disk["unsynced_dir_changes"],
        "injection": disk.get("injection"),
    }


def disk_words(disk: dict | None) -> str:
    """The disk column of ``failsafe status``."""
    if disk is None:
        return "no layer mounted"
    shown = _disk_json(disk) or {}
    injected = [k for k, v in (shown.get("injection") or {}).items() if v]
    return f"{shown['unsynced_bytes']:,} B unsynced in {shown['unsynced_files']} files" + (
        f"; {', '.join(injected)} injected" if injected else ""
    )


def cluster_status(cluster: Cluster, recent_actions: int = RECENT_ACTIONS) -> ClusterStatus:
    rows = cluster.status()
    active = any(r.active_controller for r in rows)
    return ClusterStatus(
        cluster.dir.root,
        cluster.spec,
        cluster.state.cluster_id,
        cluster.bootstrap_servers,
        rows,
        journal.last(cluster.dir.journal, recent_actions),
        None if active else cluster.mode.no_controller_note(rows),
    )


def not_up(cluster: Cluster) -> list[str]:
    """Each node that is not up, with its state ("broker 1 is down"); the processes only, asking Kafka nothing."""
    return [f"{n.role} {n.node_id} is {state}" for n in cluster.spec.nodes() if (state := cluster.node_state(n)) != UP]


def cluster_facts(cluster: Cluster) -> dict[str, Any]:
    """The cluster's part of a run's manifest.json."""
    java = find_java()
    spec = cluster.spec
    return {
        "kafka_version": spec.kafka_version,
        "java": {"executable": str(java.executable), "major": java.major},
        "cluster_dir": str(cluster.dir.root.resolve()),
        "bootstrap_servers": cluster.bootstrap_servers,
        "cluster": spec.to_json(),
        "nodes": [
            {
                "id": n.node_id,
                "roles": list(n.roles),
                "port": n.port,
                "controller_port": n.controller_port,
                **({"host": n.address} if spec.on_hosts else {}),
                **({"metrics": endpoint(spec, n)} if spec.metrics else {}),
            }
            for n in spec.nodes()
        ],
        **({"hosts": host_facts(cluster)} if spec.on_hosts else {}),
    }


def host_facts(cluster: Cluster) -> list[dict[str, Any]]:
    """Each host's kernel, Java, disk and clock offset with its error bound, read now (hosts/probe.py): the checkers
    compare timestamps taken there with failsafe's, and the manifest says how far apart the clocks were."""
    from failsafe.hosts import probe  # SSH's library: loaded for clusters on hosts only

    out = []
    for host in cluster.nodes.hosts():
        facts = probe.probe(cluster.nodes.ssh(host)).to_json()
        out.append(
            {
                "name": host.name,
                "address": host.address,
                "user": host.user,
                **{
                    k: facts[k]
                    for k in (
                        "kernel",
                        "arch",
                        "cpus",
                        "mem_kib",
                        "java",
                        "java_version",
                        "fs_type",
                        "disk_free_kib",
                        "clock_offset_s",
                        "clock_error_s",
                        "ssh_round_trip_s",
                        "root",
                        "boot_id",
                    )
                },
            }
        )
    return out


@dataclass(frozen=True)
class Stopped:
    """What ``down`` stopped: how many nodes of each cluster (by alias), and the MirrorMakers."""

    nodes: dict[str, int]
    mirrors: list[MirrorFlow] = field(default_factory=list)

    def summary(self) -> str:
        """One line: "stopped 3 nodes", or per cluster "backup: stopped 1 nodes; primary: nothing was running"."""
        said = {alias: f"stopped {n} nodes" if n else "nothing was running" for alias, n in self.nodes.items()}
        if len(said) <= 1:
            return next(iter(said.values()), "nothing was running")
        return "; ".join(f"{alias}: {text}" for alias, text in said.items())
