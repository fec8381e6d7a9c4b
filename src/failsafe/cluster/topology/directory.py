"""One interface for what runs at a directory: a lone cluster or a DR pair (cluster/topology/pair.py).

    Topology        what both offer: the clusters by alias, their bootstrap servers, the cluster a
                    scenario's faults act on, status, nodes, whether every node is up (and what is not
                    whole), down, clean, and the facts a run records in its manifest
    TopologyKind    what makes or opens one: its noun in messages, ``up``, ``open``, and ``clean_at``
                    (which reads no state, so an unreadable one is no obstacle)

``open_topology(root)`` opens the one at ``root`` (dr.json: a pair; failsafe-state.json: a lone
cluster) or says there is none; ``topology_kind(root, dr)`` is the one place that chooses.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Protocol

from failsafe.cluster.nodes.startup import quiet
from failsafe.cluster.observe.status import LONE, ClusterStatus, Stopped, cluster_facts, cluster_status, not_up
from failsafe.cluster.security.secured import client_file
from failsafe.cluster.security.store import CLIENT_USER
from failsafe.cluster.spec import ClusterSpec, NodeSpec
from failsafe.cluster.state import ClusterDir
from failsafe.cluster.topology import lifecycle
from failsafe.cluster.topology.lifecycle import DEFAULT_READY_TIMEOUT_S, DEFAULT_STOP_TIMEOUT_S, Cluster, Progress
from failsafe.cluster.topology.pair import MirrorStatus, Pair, is_pair


class TopologyStatus(Protocol):
    """Each cluster's status by alias and the MirrorMakers between them; ``to_json`` is what 'status --json' prints."""

    @property
    def clusters(self) -> dict[str, ClusterStatus]: ...

    @property
    def mirrors(self) -> list[MirrorStatus]: ...

    def to_json(self) -> dict[str, Any]: ...


class Topology(Protocol):
    root: Path
    noun: ClassVar[str]

    def clusters(self) -> dict[str, Cluster]:
        """Every cluster by alias: ``cluster`` for a lone one, ``primary`` and ``backup`` for a pair."""
        ...

    @property
    def fault_target(self) -> Cluster:
        """The cluster a scenario's faults act on: the lone cluster, or the pair's primary."""
        ...

    def bootstraps(self) -> dict[str, str]:
        """Each cluster's bootstrap servers by alias."""
        ...

    def nodes(self) -> dict[str, list[NodeSpec]]: ...

    def status(self) -> TopologyStatus: ...

    def running(self) -> bool:
        """Whether any node runs (up or paused)."""
        ...

    def not_up(self) -> list[str]:
        """Each node not up, with its state, from the processes alone; empty when every node is up."""
        ...

    def not_whole(self) -> list[str]:
        """As ``not_up``, and then every broker not seen registered by every other: empty when whole."""
        ...

    def down(self, timeout_s: float = DEFAULT_STOP_TIMEOUT_S) -> Stopped: ...

    def clean(self, timeout_s: float = DEFAULT_STOP_TIMEOUT_S) -> None:
        """Stop everything and delete the directory."""
        ...

    def facts(self) -> dict[str, Any]:
        """Its part of a run's manifest.json."""
        ...

    def describe(self) -> str:
        """What 'up' says is ready, after "<noun> ready in <root>: "."""
        ...

    def bootstrap_lines(self) -> list[str]:
        """What 'up' prints on stdout for scripts to read."""
        ...


class TopologyKind(Protocol):
    noun: ClassVar[str]

    def open(self, root: Path) -> Topology:
        """The one at ``root``; ClusterNotRunning (saying how to start one) where there is none, UserError if
        unreadable."""
        ...

    def up(
        self,
        root: Path,
        spec: ClusterSpec,
        explicit: set[str],
        timeout_s: float = DEFAULT_READY_TIMEOUT_S,
        progress: Progress | None = None,
    ) -> Topology:
        """Make it (or restart it, with its saved specs) and wait until it is ready."""
        ...

    def clean_at(self, root: Path, timeout_s: float = DEFAULT_STOP_TIMEOUT_S) -> None: ...


@dataclass(frozen=True)
class SingleCluster:
    """A lone cluster as a topology; its one alias is ``cluster``."""

    cluster: Cluster
    noun: ClassVar[str] = "cluster"

    @classmethod
    def open(cls, root: Path) -> SingleCluster:
        return cls(Cluster.open(root))

    @classmethod
    def up(
        cls,
        root: Path,
        spec: ClusterSpec,
        explicit: set[str],
        timeout_s: float = DEFAULT_READY_TIMEOUT_S,
        progress: Progress | None = None,
    ) -> SingleCluster:
        return cls(lifecycle.up(root, spec, explicit, timeout_s, progress or quiet))

    @classmethod
    def clean_at(cls, root: Path, timeout_s: float = DEFAULT_STOP_TIMEOUT_S) -> None:
        lifecycle.clean(root, timeout_s)

    @property
    def root(self) -> Path:
        return self.cluster.dir.root

    def clusters(self) -> dict[str, Cluster]:
        return {LONE: self.cluster}

    @property
    def fault_target(self) -> Cluster:
        return self.cluster

    def bootstraps(self) -> dict[str, str]:
        return {LONE: self.cluster.bootstrap_servers}

    def nodes(self) -> dict[str, list[NodeSpec]]:
        return {LONE: self.cluster.spec.nodes()}

    def status(self) -> ClusterStatus:
        return cluster_status(self.cluster)

    def running(self) -> bool:
        return bool(self.cluster.running_nodes())

    def not_up(self) -> list[str]:
        return not_up(self.cluster)

    def not_whole(self) -> list[str]:
        return self.cluster.not_whole()

    def down(self, timeout_s: float = DEFAULT_STOP_TIMEOUT_S) -> Stopped:
        with self.cluster.dir.lock():
            return Stopped({LONE: len(self.cluster.down(timeout_s))})

    def clean(self, timeout_s: float = DEFAULT_STOP_TIMEOUT_S) -> None:
        self.clean_at(self.root, timeout_s)

    def facts(self) -> dict[str, Any]:
        return cluster_facts(self.cluster)

    def describe(self) -> str:
        spec = self.cluster.spec
        racked = f" in {spec.racks} racks" if spec.racks else ""
        secured = (
            f", {spec.security} (clients: {client_file(self.cluster.dir.root, CLIENT_USER)})"
            if spec.security != "plaintext"
            else ""
        )
        return (
            f"{spec.brokers} brokers{racked}, {self.cluster.mode.quorum(spec)}, Kafka {spec.kafka_version}, "
            f"profile {spec.profile}{secured}"
        )

    def bootstrap_lines(self) -> list[str]:
        return [self.cluster.bootstrap_servers]


def topology_kind(root: Path, dr: bool = False) -> TopologyKind:
    """A DR pair where ``dr.json`` is, or where one is asked for; a lone cluster otherwise."""
    return Pair if dr or is_pair(Path(root)) else SingleCluster  # type: ignore[return-value]


def find_topology(root: Path) -> Topology | None:
    """The topology at ``root``, or None where failsafe has made none (no dr.json, no state file)."""
    root = Path(root)
    if not (is_pair(root) or ClusterDir(root).has_state()):
        return None
    return open_topology(root)


def open_topology(root: Path) -> Topology:
    """The topology at ``root``; ClusterNotRunning (one line: how to start one) where there is none, UserError if
    unreadable."""
    return topology_kind(root).open(Path(root))


def clean(root: Path, timeout_s: float = DEFAULT_STOP_TIMEOUT_S) -> None:
    """Stop everything at ``root`` and delete it, even when a state file or dr.json is unreadable; ClusterNotRunning
    where
    failsafe made nothing (it deletes only directories it made)."""
    topology_kind(root).clean_at(Path(root), timeout_s)
