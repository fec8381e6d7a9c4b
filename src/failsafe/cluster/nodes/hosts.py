"""A cluster's nodes on hosts reached over SSH (docs/hosts.md): the NodeControl of cluster/nodes/control.py, over SSH.

    on each host H:  H.dir/dist/kafka-V/libs/             Kafka's jars, copied from failsafe's cache (only what changed)
                     H.dir/dist/jmx-exporter-V/AGENT.jar  the metrics agent
                     H.dir/clusters/TAG/                  this cluster's files there: server-N.properties, logging and
                                                          exporter configs, kafka-N/ (log.dirs), logs/, pids/
    here:            DIR/hosts.json                       the inventory and what each host has (hosts/probe.py)
                     DIR/hosts/H/                          the files written for H, copied to H.dir/clusters/TAG/
                     DIR/logs/server-N.log                 each node's log, fetched for reading (fetch_logs)

TAG is the cluster directory's tag (cluster/net/netfilter.py), so two clusters can share hosts. Nodes are processes
of hosts/processes.py: started in a session of their own, known by pid, start time and boot, stopped by pid.
"""

from __future__ import annotations

import json
import shutil
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from pathlib import Path, PurePosixPath
from typing import Any

from failsafe.cluster.config import render_server_properties
from failsafe.cluster.net import netfilter
from failsafe.cluster.net.hosts import HostNetwork
from failsafe.cluster.net.netfilter import NetworkFaultsUnavailable
from failsafe.cluster.nodes.control import FORMAT_TIMEOUT_S, PORT_FREE_TIMEOUT_S, format_args, last_meaningful_line
from failsafe.cluster.observe import metrics
from failsafe.cluster.observe.readiness import QUORUM_STATE
from failsafe.cluster.spec import ClusterSpec, NodeSpec
from failsafe.cluster.state import ClusterDir
from failsafe.errors import ClusterStartError, PortInUse, ProvisionError, UserError
from failsafe.hosts import inventory, probe, sync
from failsafe.hosts import processes as remote
from failsafe.hosts.inventory import Host, Inventory
from failsafe.hosts.ssh import RemoteCommandFailed, SshHost, quote
from failsafe.jvm.java import Java
from failsafe.jvm.jmx_exporter import agent_option, exporter_agent
from failsafe.jvm.jvm import SERVER_JVM_OPTS, TOOL_HEAP
from failsafe.jvm.kafka import KafkaDist, kafka_dist
from failsafe.jvm.logging_config import logging_jvm_option, write_logging_configs
from failsafe.supervisor import DOWN, PAUSED, UP, ProcessState
from failsafe.waiting import WaitTimeout, wait_until

HOSTS_FILE = "hosts.json"
LOG_TAIL_BYTES = 20000


def save_inventory(cdir: ClusterDir, inv: Inventory, facts: dict[str, Any] | None = None) -> None:
    cdir.root.mkdir(parents=True, exist_ok=True)
    path = cdir.root / HOSTS_FILE
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({**inv.to_json(), "facts": facts or {}}, indent=2) + "\n")
    tmp.replace(path)


def load_inventory(cdir: ClusterDir) -> Inventory:
    path = cdir.root / HOSTS_FILE
    try:
        data = json.loads(path.read_text())
        return inventory.from_mapping(
            {"host": [{k: v for k, v in h.items() if v is not None} for h in data["hosts"]]}, str(path)
        )
    except FileNotFoundError as e:
        raise UserError(
            f"{path} is missing: the cluster at {cdir.root} runs on hosts, and that file says which "
            f"(run 'failsafe clean --dir {cdir.root}' and start again)"
        ) from e
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise UserError(f"{path} is unreadable ({e})") from e


def place(spec: ClusterSpec, inv: Inventory) -> dict[str, str]:
    """Each node of ``spec`` to a host's address: controllers over the hosts with the controller role, brokers over
    those with the broker role, each in turn (so 3 hosts take 3 brokers and a controller on the first)."""
    placement: dict[str, str] = {}
    for role, nodes in (
        ("controller", [n for n in spec.nodes() if n.is_controller and not n.is_broker]),
        ("broker", spec.brokers_nodes()),
    ):
        hosts = inv.with_role(role)
        if nodes and not hosts:
            raise UserError(f"{inv.source}: no host has the {role} role, and the cluster has {len(nodes)} {role}(s)")
        for i, node in enumerate(nodes):
            placement[node.name] = hosts[i % len(hosts)].address
    return placement


class HostNodes(HostNetwork):
    """The nodes of one cluster on the hosts of its inventory (their network faults: cluster/net/hosts.py)."""

    def __init__(self, cdir: ClusterDir, spec: ClusterSpec, inv: Inventory) -> None:
        self.dir = cdir
        self.spec = spec
        self.inventory = inv
        self.tag = netfilter.cluster_tag(cdir.root)
        self._by_address = {h.address: h for h in inv.hosts}
        self._ssh: dict[str, SshHost] = {}
        self._lock = threading.Lock()
        self._facts: dict[str, dict[str, Any]] = self._saved_facts()
        self._staged_disk: tuple[Path, str] | None = None  # the disk layer's modules staged here, and their hash
        self._disk_synced: set[str] = set()

    # -- where things are -----------------------------------------------------------------------
    def host(self, node: NodeSpec) -> Host:
        return self._by_address[self.spec.placement[node.name]]

    def hosts(self) -> list[Host]:
        """The hosts that run a node of this cluster, in inventory order."""
        used = set(self.spec.placement.values())
        return [h for h in self.inventory.hosts if h.address in used]

    def ssh(self, host: Host) -> SshHost:
        with self._lock:
            if host.name not in self._ssh:
                self._ssh[host.name] = SshHost(host)
            return self._ssh[host.name]

    def root(self, host: Host) -> PurePosixPath:
        return host.dir / "clusters" / self.tag

    def _path(self, node: NodeSpec, *parts: str) -> PurePosixPath:
        return self.root(self.host(node)).joinpath(*parts)

    def _pidfile(self, node: NodeSpec) -> PurePosixPath:
        return self._path(node, "pids", f"{node.name}.pid")

    def _log(self, node: NodeSpec) -> PurePosixPath:
        return self._path(node, "logs", f"{node.name}.log")

    def _dist(self, host: Host, version: str) -> PurePosixPath:
        return host.dir / "dist" / f"kafka-{version}" / "libs"

    def _agent(self, host: Host) -> PurePosixPath:
        jar = exporter_agent()
        return host.dir / "dist" / jar.parent.name / jar.name

    def _java(self, host: Host) -> str:
        facts = self._facts.get(host.name)
        if not facts or not facts.get("java"):
            self._facts[host.name] = self._check(host)
        return self._facts[host.name]["java"]

    def _saved_facts(self) -> dict[str, dict[str, Any]]:
        try:
            return json.loads((self.dir.root / HOSTS_FILE).read_text()).get("facts", {})
        except (OSError, ValueError):
            return {}

    def facts(self) -> dict[str, dict[str, Any]]:
        """What each host had when the cluster was made or last started (hosts/probe.py): for the manifest."""
        return dict(self._facts)

    def close(self) -> None:
        for ssh in self._ssh.values():
            ssh.close()

    # -- making the cluster ---------------------------------------------------------------------
    def _check(self, host: Host) -> dict[str, Any]:
        facts = probe.probe(self.ssh(host))
        found = probe.problems(facts, needs_disk_layers=self.spec.volatile_disks)
        if found:
            raise ProvisionError(found[0])
        return facts.to_json()

    def _each_host(self, action: Any) -> list[Any]:
        hosts = self.hosts()
        with ThreadPoolExecutor(max_workers=min(16, len(hosts))) as pool:
            return list(pool.map(action, hosts))

    def prepare(self, spec: ClusterSpec, java: Java, dist: KafkaDist) -> None:
        """Check each host, copy Kafka (and the metrics agent) there, write each node's files and empty its data dir."""
        checked = dict(zip([h.name for h in self.hosts()], self._each_host(self._check), strict=True))
        self._facts = checked
        save_inventory(self.dir, self.inventory, checked)

        def one(host: Host) -> None:
            ssh = self.ssh(host)
            sync.sync_tree(ssh, dist.libs_dir, self._dist(host, dist.version))
            if spec.metrics:
                sync.sync_file(ssh, exporter_agent(), self._agent(host))
            stage = self.dir.root / "hosts" / host.name
            shutil.rmtree(stage, ignore_errors=True)
            write_logging_configs(stage)
            root = self.root(host)
            mine = [n for n in spec.nodes() if self.spec.placement.get(n.name) == host.address]
            for node in mine:
                (stage / f"{node.name}.properties").write_text(render_server_properties(spec, node, Path(str(root))))
            if spec.metrics:
                metrics.write_config(stage)
            sync.sync_tree(ssh, stage, root)
            disks = self._disks(host)
            if (
                disks.any_mounted()
            ):  # an earlier cluster's layers under this directory: their mountpoints are emptied below
                for node in mine:
                    disks.unmount(node.name, self._data(node))
            data = [quote(self._data(n)) for n in mine]
            # Their backing directories too: a layer mounted at the next start would show the old cluster's data.
            backing = [quote(self._data(n).with_name(f"kafka-{n.node_id}.disk")) for n in mine]
            ssh.check(
                f"rm -rf {' '.join(data + backing)} && mkdir -p {' '.join(data)} {quote(root / 'logs')} "
                f"{quote(root / 'pids')}",
                what="emptying the nodes' data directories",
            )

        self._each_host(one)

    def format_storage(
        self, spec: ClusterSpec, cluster_id: str, nodes: list[NodeSpec], java: Java, dist: KafkaDist
    ) -> None:
        def one(node: NodeSpec) -> str | None:
            host = self.host(node)
            cmd = self._java_command(
                host,
                dist,
                TOOL_HEAP,
                "kafka.tools.StorageTool",
                format_args(cluster_id, str(self._path(node, f"{node.name}.properties")), spec),
                tools=True,
            )
            result = self.ssh(host).run(quote(*cmd), timeout_s=FORMAT_TIMEOUT_S)
            return (
                None
                if result.ok()
                else f"{node.name} on {host.name}: {last_meaningful_line(result.stdout + result.stderr)}"
            )

        with ThreadPoolExecutor(max_workers=max(1, len(nodes))) as pool:
            failures = [f for f in pool.map(one, nodes) if f]
        if failures:
            raise ClusterStartError(f"kafka-storage format failed for {'; '.join(failures)}")

    def _java_command(
        self,
        host: Host,
        dist: KafkaDist,
        heap: str,
        main: str,
        args: list[str],
        *,
        tools: bool = False,
        extra: list[str] | None = None,
        logging_dir: PurePosixPath | None = None,
    ) -> list[str]:
        root = Path(str(logging_dir or self.root(host)))
        return [
            self._java(host),
            f"-Xmx{heap}",
            *([f"-Xms{heap}", *SERVER_JVM_OPTS] if not tools else ["-Djava.awt.headless=true"]),
            *(extra or []),
            logging_jvm_option(root, log4j2=dist.uses_log4j2, tools=tools),
            "-cp",
            f"{self._dist(host, dist.version)}/*",
            main,
            *args,
        ]

    def check_client_host(self, host: str) -> None:
        self.inventory.host(host)  # InventoryError: no such host, naming the inventory's

    def client_host(self, name: str, kafka_version: str) -> dict[str, Any]:
        """What a Kafka Java client run on host ``name`` needs (a lab scenario's ``host``,
        workloads/verifiable/on_host.py): the host, its JVM command up to the main class, and the directory to run in.
        Java is checked there, and Kafka's jars and the tools' logging configs are copied first (only what changed)."""
        host = self.inventory.host(name)
        ssh = self.ssh(host)
        dist = kafka_dist(kafka_version)
        sync.sync_tree(ssh, dist.libs_dir, self._dist(host, dist.version))
        stage = self.dir.root / "hosts" / f"{host.name}.clients"
        write_logging_configs(stage)
        where = self.root(host) / "clients"
        sync.sync_tree(ssh, stage, where)
        command = self._java_command(host, dist, TOOL_HEAP, "", [], tools=True, logging_dir=where)[:-1]
        return {"host": host.to_json(), "command": command, "dir": str(where)}

    def ensure_ports_free(
        self, nodes: list[NodeSpec], spec: ClusterSpec, timeout_s: float = PORT_FREE_TIMEOUT_S
    ) -> None:
        """No listener on a host holds a port of its nodes (``ss`` there), within ``timeout_s``."""
        wanted = [
            (n, p)
            for n in nodes
            for p in (n.port, n.controller_port, n.replication_port, spec.metrics_port(n) if spec.metrics else None)
            if p is not None
        ]

        def taken() -> list[tuple[NodeSpec, int]]:
            listening: dict[str, set[int]] = {}
            for host in {self.host(n).name: self.host(n) for n, _ in wanted}.values():
                out = self.ssh(host).run("ss -Hltn").stdout
                listening[host.name] = {
                    int(local.rsplit(":", 1)[1])
                    for line in out.splitlines()
                    if len(cols := line.split()) > 3 and (local := cols[3]).rsplit(":", 1)[-1].isdigit()
                }
            return [(n, p) for n, p in wanted if p in listening[self.host(n).name]]

        try:
            wait_until(lambda: not taken(), timeout_s, "")
        except WaitTimeout:
            still = taken()
            if still:
                node, port = still[0]
                raise PortInUse(
                    f"port {port} on host {self.host(node)} ({node.role} {node.node_id}) is already in use: "
                    "stop what listens there or choose another --base-port"
                ) from None

    # -- processes ------------------------------------------------------------------------------
    def guard(self, nodes: list[NodeSpec]) -> AbstractContextManager:
        """A start leash on each host of ``nodes`` (hosts/processes.py): if failsafe dies before they are ready, the
        nodes it started there are killed by their pid files; a failed start stops them itself (startup.start)."""
        pidfiles: dict[SshHost, list[PurePosixPath]] = {}
        for node in nodes:
            pidfiles.setdefault(self.ssh(self.host(node)), []).append(self._pidfile(node))
        return remote.StartLeash(pidfiles, self.dir.logs_dir / "watchdog.log")

    def release_guard(self, guard: object) -> None:
        assert isinstance(guard, remote.StartLeash)
        guard.release()

    def launch(self, spec: ClusterSpec, node: NodeSpec, java: Java, dist: KafkaDist) -> None:
        host = self.host(node)
        root = self.root(host)
        if spec.volatile_disks:
            self._disks(host).ensure_mounted(node.name, self._data(node))
        # Logs in failsafe's time zone: their lines are read as its local time (cluster/observe/node_logs.py), the
        # host's clock offset then taken off (scenarios/observers/node_events.py).
        extra = [*spec.jvm_options, f"-Duser.timezone={_local_zone()}"]
        if spec.metrics:
            extra.append(
                agent_option(
                    Path(str(self._agent(host))),
                    node.client_address,
                    spec.metrics_port(node),
                    metrics.config_file(Path(str(root))),
                )
            )
        cmd = self._java_command(
            host, dist, spec.heap, "kafka.Kafka", [str(root / f"{node.name}.properties")], extra=extra
        )
        if self._fact(host, "root") and self._fact(host, "setpriv"):
            # Its own group id there: network faults match the node's packets by it (cluster/net/hosts.py).
            cmd = netfilter.with_gid(cmd, self._gid(node))
        remote.start(self.ssh(host), cmd, cwd=root, log=self._log(node), pidfile=self._pidfile(node))

    def _gid(self, node: NodeSpec) -> int:
        return netfilter.node_gid(self.dir.root, self.spec.nodes().index(node))

    def check_gids(self) -> None:
        """Every running node runs under its own group id on its host (else its packets cannot be told apart)."""
        for node in self.spec.nodes():
            process = self._process(node)
            if process is None or self.state(node) == DOWN:
                continue
            gid = self.ssh(self.host(node)).run(f"awk '/^Gid:/ {{print $2}}' /proc/{process.pid}/status").stdout.strip()
            if gid != str(self._gid(node)):
                raise NetworkFaultsUnavailable(
                    f"{node.name} (pid {process.pid} on host {self.host(node)}) does not run under its own "
                    "group id there, so its packets cannot be told apart: restart it (down and up) with "
                    "root and setpriv on that host"
                )

    def _process(self, node: NodeSpec) -> remote.RemoteProcess | None:
        return remote.read(self.ssh(self.host(node)), self._pidfile(node))

    def state(self, node: NodeSpec) -> ProcessState:
        return remote.state_of(self.ssh(self.host(node)), self._pidfile(node))

    def pid(self, node: NodeSpec) -> int | None:
        process = self._process(node)
        return process.pid if process is not None else None

    def stop(self, nodes: list[NodeSpec], sig: signal.Signals, timeout_s: float) -> None:
        def one(node: NodeSpec) -> None:
            ssh = self.ssh(self.host(node))
            process = remote.read(ssh, self._pidfile(node))
            if process is not None:
                remote.stop(ssh, process, sig, timeout_s)
            ssh.run(f"rm -f {quote(self._pidfile(node))}")

        if nodes:
            with ThreadPoolExecutor(max_workers=len(nodes)) as pool:
                list(pool.map(one, nodes))

    def freeze(self, node: NodeSpec, paused: bool, timeout_s: float) -> None:
        ssh = self.ssh(self.host(node))
        process = remote.read(ssh, self._pidfile(node))
        if process is None:
            return
        remote.signal_group(ssh, process, signal.SIGSTOP if paused else signal.SIGCONT)
        if not remote.wait_state(ssh, process, PAUSED if paused else UP, timeout_s):
            raise RemoteCommandFailed(
                f"{node.name} on host {self.host(node)} did not "
                f"{'stop on SIGSTOP' if paused else 'continue on SIGCONT'}"
            )

    # -- reading ----------------------------------------------------------------------------------
    def log_reason(self, node: NodeSpec) -> str:
        text = self.ssh(self.host(node)).run(f"tail -c {LOG_TAIL_BYTES} {quote(self._log(node))} 2>/dev/null").stdout
        return last_meaningful_line(text) if text else "no log"

    def log_where(self, node: NodeSpec) -> str:
        return f"{self.host(node).name}:{self._log(node)}"

    def quorum_state(self, node: NodeSpec) -> str | None:
        out = self.ssh(self.host(node)).run(
            f"cat {quote(self._path(node, f'kafka-{node.node_id}', QUORUM_STATE))} 2>/dev/null"
        )
        return out.stdout if out.ok() and out.stdout.strip() else None

    def clock_offsets(self) -> dict[int, tuple[float, float]]:
        """Each node's host clock against failsafe's: (offset, error bound) in seconds, measured now
        (hosts/probe.py)."""
        measured = {h.name: probe.clock_offset(self.ssh(h))[:2] for h in self.hosts()}
        return {n.node_id: measured[self.host(n).name] for n in self.spec.nodes()}

    def fetch_logs(self) -> dict[str, int]:
        """Each node's log copied to DIR/logs/ (what is new since the last fetch), so readers of logs read them here."""
        got = {}
        for node in self.spec.nodes():
            local = self.dir.log_file(node)
            have = local.stat().st_size if local.exists() else 0
            ssh = self.ssh(self.host(node))
            size_text = ssh.run(f"stat -c %s {quote(self._log(node))} 2>/dev/null").stdout.strip()
            if not size_text.isdigit():
                continue
            size = int(size_text)
            if size < have:  # a new log (the cluster made anew): start over
                have = 0
                local.unlink()
            if size > have:
                local.parent.mkdir(parents=True, exist_ok=True)
                with local.open("ab") as f:
                    f.write(ssh.read_bytes(str(self._log(node)), offset=have))
            got[node.name] = size
        return got

    # -- disk layers (cluster/nodes/host_disks.py) --------------------------------------------------------
    def _data(self, node: NodeSpec) -> PurePosixPath:
        return self._path(node, f"kafka-{node.node_id}")

    def _disks(self, host: Host) -> Any:
        from failsafe.cluster.nodes import host_disks

        return host_disks.HostDisks(self.ssh(host), self.root(host), lambda: self._disk_package(host))

    def _disk_package(self, host: Host) -> PurePosixPath:
        """The disk layer's daemon package on ``host``, staged here once and copied there once (only what changed)."""
        from failsafe.cluster.nodes import host_disks

        with self._lock:
            if self._staged_disk is None:
                self._staged_disk = host_disks.stage(self.dir)
            local, digest = self._staged_disk
        package = host.dir / "dist" / f"failsafe-disk-{digest}"
        if host.name not in self._disk_synced:
            sync.sync_tree(self.ssh(host), local, package)
            self._disk_synced.add(host.name)
        return package

    def proxy(self, node: NodeSpec) -> Any:
        return None  # protocol proxies run on this machine only (ClusterSpec.validate)

    def disk_layer(self, node: NodeSpec) -> Any:
        return self._disks(self.host(node)).layer(node.name, self._data(node)) if self.spec.volatile_disks else None

    def data_here(self, node: NodeSpec) -> Path | None:
        return None  # on its host: corrupting a file there is not built (faults/corruption.py says so in one line)

    def disk_unmount(self, nodes: list[NodeSpec]) -> None:
        for node in nodes:
            disks = self._disks(self.host(node))
            if disks.tracked(node.name):
                disks.unmount(node.name, self._data(node))

    # -- after --------------------------------------------------------------------------------------
    def release(self) -> None:
        """Network rules failsafe made, here and on the hosts, go with the cluster (a host without root or nft has
        none), and so do its disk layers (the nodes stopped first)."""
        self.net_delete_all()
        if self.spec.volatile_disks:
            self.disk_unmount(self.spec.nodes())

    def remove(self) -> None:
        """This cluster's directory on every host, those that ran only its clients too (Kafka's copy in H.dir/dist stays
        for the next cluster)."""
        clients_only = [
            h
            for h in self.inventory.hosts
            if h not in self.hosts() and (self.dir.root / "hosts" / f"{h.name}.clients").is_dir()
        ]
        for host in [*self.hosts(), *clients_only]:
            self.ssh(host).check(f"rm -rf {quote(self.root(host))}", what="deleting the cluster's files")


def _local_zone() -> str:
    """This machine's current UTC offset as a Java time zone id (GMT+hh:mm)."""
    offset = time.strftime("%z")  # +hhmm
    return f"GMT{offset[0]}{offset[1:3]}:{offset[3:5]}"
