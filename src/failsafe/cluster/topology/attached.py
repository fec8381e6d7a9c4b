"""A cluster failsafe did not start, reached at its bootstrap servers (``failsafe run --attach``, docs/hosts.md).

failsafe changes nothing on it but the scenario's own topics. What it knows of the nodes it reads from
the cluster's metadata: the brokers (id, host, port) and the active controller; a broker listed there is
up, one missing is down. A scenario's node faults on it are the inventory's commands (``[host.commands]``
of the host whose address the broker advertises: kill, stop, pause, resume, start), run over SSH and
recorded like any fault; without them a node fault is refused at validation, in one line.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from failsafe.cluster.net.netfilter import NetworkFaultsUnavailable
from failsafe.cluster.site import NeutralSite
from failsafe.cluster.spec import ClusterSpec, NodeSpec
from failsafe.cluster.state import ClusterDir
from failsafe.errors import UnknownNode, UserError
from failsafe.hosts.inventory import Host, Inventory
from failsafe.hosts.ssh import RemoteCommandFailed, SshHost
from failsafe.supervisor import DOWN, PAUSED, UP, ProcessState
from failsafe.tools.admin import fetch_metadata, new_admin
from failsafe.waiting import WaitTimeout, wait_until

METADATA_TIMEOUT_S = 10.0
RESTART_TIMEOUT_S = 120.0
# The commands a host of the inventory may give, by the action failsafe takes on a node.
COMMANDS = ("kill", "stop", "pause", "resume", "start")


@dataclass(frozen=True)
class Broker:
    node_id: int
    host: str
    port: int


class AttachedCluster(NeutralSite):
    """The run site of a cluster failsafe did not start (cluster/site.py): no log, metric or rule of it is failsafe's,
    and its clients run where failsafe runs."""

    def __init__(self, bootstrap: str, work_dir: Path, inventory: Inventory | None = None) -> None:
        self.bootstrap_servers = bootstrap
        self.dir = ClusterDir(work_dir)
        self.inventory = inventory
        self._paused: set[int] = set()
        self._ssh: dict[str, SshHost] = {}
        self.brokers = self._read_brokers()
        ids = sorted(self.brokers)
        if ids != list(range(ids[0], ids[0] + len(ids))):
            raise UserError(
                f"--attach {bootstrap}: broker ids {ids} are not consecutive, which failsafe's scenarios assume"
            )
        first = self.brokers[ids[0]]
        # The cluster's shape, as scenarios and reports read it: its brokers; no metrics, logs or node addresses of
        # failsafe's.
        self.spec = ClusterSpec(
            brokers=len(ids), first_broker_id=ids[0], base_port=first.port, metrics=False, node_addresses=False
        )
        self.nodes = _Unmanaged(self)

    # -- looking --------------------------------------------------------------------------------
    def _read_brokers(self) -> dict[int, Broker]:
        metadata = fetch_metadata(new_admin(self.bootstrap_servers), self.bootstrap_servers, METADATA_TIMEOUT_S)
        if not metadata.brokers:
            raise UserError(f"--attach {self.bootstrap_servers}: the cluster lists no broker")
        return {b.id: Broker(b.id, b.host, b.port) for b in metadata.brokers.values()}

    def topics(self) -> set[str]:
        return set(fetch_metadata(new_admin(self.bootstrap_servers), self.bootstrap_servers, METADATA_TIMEOUT_S).topics)

    def listed(self) -> set[int]:
        try:
            return set(
                fetch_metadata(new_admin(self.bootstrap_servers), self.bootstrap_servers, METADATA_TIMEOUT_S).brokers
            )
        except Exception:  # noqa: BLE001 - nobody answering lists no broker
            return set()

    @property
    def mode(self) -> Any:
        return _AttachedMode()

    def node(self, node_id: int, role: str | None = None) -> NodeSpec:
        for n in self.spec.brokers_nodes():
            if n.node_id == node_id:
                return n
        raise UnknownNode(
            f"no broker with id {node_id} in the cluster at {self.bootstrap_servers}: its brokers are "
            f"{', '.join(map(str, sorted(self.brokers)))}"
        )

    def tracked(self, node: NodeSpec) -> None:
        return None

    def node_state(self, node: NodeSpec) -> ProcessState:
        if node.node_id in self._paused:
            return PAUSED
        return UP if node.node_id in self.listed() else DOWN

    def not_whole(self) -> list[str]:
        missing = sorted(set(self.brokers) - self.listed())
        return [f"broker {i} is not in the cluster's metadata" for i in missing] + [
            f"broker {i} is paused" for i in sorted(self._paused)
        ]

    def active_controller(self) -> int | None:
        return None  # not something a client of the cluster can see of a KRaft quorum

    def net_ready(self) -> None:
        self.nodes.net_ready(self.spec)

    def check_client_host(self, host: str) -> None:
        raise UserError(f"a client runs on host {host!r}: with --attach, clients run where failsafe runs")

    def active_controller_node(self) -> NodeSpec | None:
        return None

    # -- the inventory's commands -----------------------------------------------------------------
    def host_of(self, node: NodeSpec) -> Host:
        broker = self.brokers[node.node_id]
        for host in self.inventory.hosts if self.inventory else ():
            if host.address == broker.host or host.name == broker.host:
                return host
        raise UserError(
            f"broker {node.node_id} advertises {broker.host}, and no host of the inventory has that address: "
            "failsafe cannot act on it"
        )

    def command(self, node: NodeSpec, action: str) -> str:
        host = self.host_of(node)
        cmd = host.commands.get(action)
        if not cmd:
            raise UserError(
                f"host {host.name} has no '{action}' command in [host.commands]: failsafe did not start this cluster "
                f"and acts on its nodes only through the inventory's commands"
            )
        return cmd.replace("{node}", str(node.node_id))

    def _run(self, node: NodeSpec, action: str, timeout_s: float) -> None:
        host = self.host_of(node)
        ssh = self._ssh.setdefault(host.name, SshHost(host))
        result = ssh.run(self.command(node, action), timeout_s=timeout_s)
        if not result.ok():
            raise RemoteCommandFailed(f"host {host.name}: '{action}' of broker {node.node_id} failed: {result.why()}")

    def signal_node(self, node: NodeSpec, action: str, timeout_s: float) -> None:
        self._run(node, action, timeout_s)
        if action == "pause":
            self._paused.add(node.node_id)
        elif action == "resume":
            self._paused.discard(node.node_id)
        elif action in ("kill", "stop"):
            self._wait(
                lambda: node.node_id not in self.listed(),
                timeout_s,
                f"broker {node.node_id} still listed after '{action}'",
            )

    def stop_nodes(self, nodes: list[NodeSpec], sig: signal.Signals, timeout_s: float) -> None:
        for node in nodes:
            self.signal_node(node, "kill" if sig == signal.SIGKILL else "stop", timeout_s)

    def restart(
        self, nodes: list[NodeSpec], timeout_s: float = RESTART_TIMEOUT_S, progress: Any = None
    ) -> list[NodeSpec]:
        down = [n for n in nodes if n.node_id not in self.listed()]
        for node in down:
            self._run(node, "start", timeout_s)
        self._wait(
            lambda: {n.node_id for n in down} <= self.listed(),
            timeout_s,
            f"brokers {', '.join(str(n.node_id) for n in down)} not back in the metadata",
        )
        return down

    @staticmethod
    def _wait(condition: Any, timeout_s: float, message: str) -> None:
        try:
            wait_until(condition, timeout_s, f"{message} within {timeout_s:g}s")
        except WaitTimeout as e:
            raise RemoteCommandFailed(str(e)) from e

    def close(self) -> None:
        for ssh in self._ssh.values():
            ssh.close()


class _AttachedMode:
    """What the engine asks of a cluster's mode, for a cluster whose quorum failsafe cannot see."""

    name = "attached"
    controller_role = "controller"

    def active_controller(self, cluster: object) -> int | None:
        return None


class _Unmanaged:
    """The node control of a cluster failsafe did not start: it reads no log and makes no network rule."""

    def __init__(self, cluster: AttachedCluster) -> None:
        self.cluster = cluster

    def fetch_logs(self) -> dict[str, int]:
        return {}

    def net_ready(self, spec: ClusterSpec | None = None) -> None:
        raise NetworkFaultsUnavailable("failsafe did not start this cluster: it makes no network rule on it (--attach)")

    def net_leash(self, log_file: Path) -> None:
        return None

    def clock_offsets(self) -> dict[int, tuple[float, float]]:
        return {}

    client_host = None

    def release(self) -> None:
        """Nothing of failsafe's is on the cluster."""

    def net_delete(self, chain: str) -> bool:
        return False

    def net_delete_all(self) -> bool:
        return False

    def net_chains(self) -> list:
        return []


# What each process fault needs of the inventory's commands on a cluster failsafe did not start (its undo included).
FAULT_COMMANDS = {
    "kill": ("kill", "start"),
    "terminate": ("stop", "start"),
    "pause": ("pause", "resume"),
    "restart": ("stop", "start"),
}


def refusal(faults: list[tuple[str, str, str]], inventory: Inventory | None, bootstrap: str) -> str | None:
    """Why a run on the attached cluster at ``bootstrap`` cannot make one of ``faults`` ((scenario, fault type,
    family)): one line, or None. Checked before the run starts."""
    for scenario, fault, family in faults:
        if family in ("network", "disk", "migration"):
            return (
                f"{scenario}: its {fault} fault needs a cluster failsafe started (--attach {bootstrap} makes no "
                f"{family} fault); run it without --attach"
            )
        if family != "process":
            continue
        needed = FAULT_COMMANDS.get(fault)
        if needed is None:
            return (
                f"{scenario}: its {fault} fault acts on controllers or on every node, which failsafe cannot see of "
                f"an attached cluster"
            )
        hosts = [h for h in inventory.hosts if "broker" in h.roles] if inventory else []
        if not hosts:
            return (
                f"{scenario}: its {fault} fault needs an inventory whose hosts say how ({', '.join(needed)}) in "
                f"[host.commands]"
            )
        for host in hosts:
            missing = [c for c in needed if c not in host.commands]
            if missing:
                return f"{scenario}: its {fault} fault needs [host.commands] {', '.join(missing)} on host {host.name}"
    return None
