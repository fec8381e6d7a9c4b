"""Where a run takes place, as the engine, the faults and the CLI see it: one typed interface.

    RunSite     bootstrap servers, the nodes and their control, fault targets (a node by id, its state, its
                signals, the active controller, disks, protocol proxies), whether it is whole, network readiness
                and the leash on its rules, clock offsets, where a client may run, the nodes' logs, the operator's
                journal and the profile

A local cluster (lifecycle.Cluster, on this machine or on hosts: its NodeControl says which), a DR pair's fault target
(the same class) and a cluster failsafe did not start (attached.AttachedCluster) implement it. What differs between this
machine and hosts is answered by the NodeControl (nodes/control.py LocalNodes, nodes/hosts.py HostNodes), so nothing
above cluster/ asks where the nodes run. ``NeutralSite`` holds the answers of a site with nothing of its own to say (no
logs of failsafe's, one clock, clients only here): the attached cluster and tests' small fakes take them."""

from __future__ import annotations

import signal
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from failsafe.cluster.net.leash import NetworkLeash
from failsafe.cluster.nodes.control import NodeControl
from failsafe.cluster.profiles import Profile, profile_of
from failsafe.cluster.spec import ClusterSpec, NodeSpec
from failsafe.cluster.state import ClusterDir
from failsafe.errors import UserError
from failsafe.supervisor import ProcessState, TrackedProcess

# The Kafka nodes' and the ZooKeeper nodes' log files, by node id.
NodeLogs = tuple[dict[int, Path], dict[int, Path]]
# What a client needs to run on a host (cluster/nodes/hosts.py client_host), from (host name, Kafka version).
ClientHost = Callable[[str, str], dict]


@dataclass(frozen=True)
class SiteOptions:
    """How a run, a campaign or a shrink starts its own cluster when --dir holds none that fits (cli/options.py
    site_options: --base-port, --heap, and for a run --mode and --zookeeper-port); None: the default. The atlas gives
    the ``spec`` of each group's cluster, started in an empty directory, and has it deleted after (``clean``)."""

    base_port: int | None = None
    heap: str | None = None
    mode: str | None = None
    zookeeper_port: int | None = None
    spec: ClusterSpec | None = None
    clean: bool = False


class Leash(Protocol):
    """Holds a network fault's chain from before its rules are in force until its heal (cluster/net/leash.py)."""

    def hold(self, chain: str) -> None: ...

    def release(self, chain: str) -> None: ...

    def close(self) -> None: ...


class RunSite(Protocol):
    dir: ClusterDir
    nodes: NodeControl

    @property
    def bootstrap_servers(self) -> str: ...

    @property
    def spec(self) -> ClusterSpec: ...

    @property
    def mode(self) -> Any:
        """What the engine asks of the cluster's mode (cluster/modes/mode.py): its name, its controllers' role."""

    # -- fault targets ------------------------------------------------------------------------
    def node(self, node_id: int, role: str | None = None) -> NodeSpec: ...

    def tracked(self, node: NodeSpec) -> TrackedProcess | None: ...

    def node_state(self, node: NodeSpec) -> ProcessState: ...

    def active_controller(self) -> int | None: ...

    def active_controller_node(self) -> NodeSpec | None: ...

    def signal_node(self, node: NodeSpec, action: str, timeout_s: float) -> None: ...

    def stop_nodes(self, nodes: list[NodeSpec], sig: signal.Signals, timeout_s: float) -> None: ...

    def restart(self, nodes: list[NodeSpec]) -> list[NodeSpec]: ...

    def protocol_proxy(self, node: NodeSpec) -> Any:
        """``node``'s protocol proxy when it runs (proxy/proxies.py ProxyHandle: status, add, clear); None without one
        (a cluster made without --protocol-proxy, a cluster failsafe did not start)."""

    def clock_file(self, node: NodeSpec) -> Path | None:
        """The file ``node``'s clock offset is read from (cluster/clocks.py); None when its clock cannot be set apart
        (a cluster made without --clock-faults, a ZooKeeper node, a cluster failsafe did not start)."""

    def data_dir(self, node: NodeSpec) -> Path | None:
        """``node``'s data directory (its log.dirs; through its disk layer when it has one) on this machine; None when
        failsafe cannot reach its files here (a node on a host, a cluster failsafe did not start)."""

    def not_whole(self) -> list[str]:
        """Why the cluster is not whole (a node down or paused), one line each; empty when it is."""

    # -- where it runs ------------------------------------------------------------------------
    def net_ready(self) -> None:
        """Network faults can be made on it now (root, nft, each running node under its own group id); else one clear
        UserError."""

    def net_leash(self, log_file: Path) -> Leash:
        """A watchdog that deletes the run's network rules (here, and on its hosts) if failsafe dies before the heal."""

    def clock_offsets_ns(self) -> dict[int, int]:
        """Each node's clock minus failsafe's, in ns (empty: one clock)."""

    def node_logs(self) -> NodeLogs | None:
        """The nodes' log files, on this machine (a host's copied here first); None: no log is failsafe's to read."""

    def check_client_host(self, host: str) -> None:
        """A client may run on ``host``; else one clear UserError."""

    @property
    def client_host(self) -> ClientHost | None:
        """What a client needs to run on a host; None when clients run only where failsafe runs."""

    @property
    def journal(self) -> Path | None:
        """Where kills and pauses done by hand during a run are written (cluster/observe/journal.py); None: nobody's."""

    @property
    def profile(self) -> Profile | None:
        """The cluster's profile (cluster/profiles.py): its topic and client settings; None: Kafka's defaults."""


class NeutralSite:
    """The answers of a site with nothing of its own to say: no logs of failsafe's, one clock, clients run only here,
    network rules only on this machine; the operator's journal in its directory and the profile its spec names."""

    dir: ClusterDir
    spec: ClusterSpec

    def clock_offsets_ns(self) -> dict[int, int]:
        return {}

    def node_logs(self) -> NodeLogs | None:
        return None

    def net_leash(self, log_file: Path) -> Leash:
        return NetworkLeash(self.dir.root, log_file)

    def check_client_host(self, host: str) -> None:
        raise UserError(
            f"a client runs on host {host!r}, and the cluster at {self.dir.root} is not on hosts: start it with "
            "'failsafe up --inventory' (or --hosts)"
        )

    @property
    def client_host(self) -> ClientHost | None:
        return None

    @property
    def journal(self) -> Path | None:
        return self.dir.journal

    @property
    def profile(self) -> Profile | None:
        return profile_of(self.spec)

    def active_controller(self) -> int | None:
        return None

    def protocol_proxy(self, node: NodeSpec) -> Any:
        return None

    def clock_file(self, node: NodeSpec) -> Path | None:
        return None

    def data_dir(self, node: NodeSpec) -> Path | None:
        return None
