"""A DR pair: two clusters in one directory, ``primary/`` and ``backup/``, and the MirrorMaker processes between them.

``failsafe up --dr`` makes one: the primary on the ports asked for, the backup 1000 above them
(brokers 10092..., controllers 10192...), and ``dr.json`` naming both by the aliases MirrorMaker
uses. ``failsafe mirror start`` runs MirrorMaker detached, tracked by its pidfile under
``mirror/<source>-<target>/`` like a node; ``down`` stops the mirrors first, then both clusters.

A Pair is a topology (cluster/topology/directory.py), as a lone cluster is: status, nodes, bootstrap servers,
down and clean act on both clusters and the mirrors between them.
"""

from __future__ import annotations

import json
import shutil
import signal
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, ClassVar

from failsafe.cluster.modes.mode import mode_of
from failsafe.cluster.observe.status import ClusterStatus, MirrorStatus, Stopped, cluster_facts, cluster_status, not_up
from failsafe.cluster.spec import ClusterSpec, NodeSpec
from failsafe.cluster.state import LOCK_FILE, STATE_FILE, ClusterDir, unreadable
from failsafe.cluster.topology import lifecycle
from failsafe.cluster.topology.lifecycle import DEFAULT_READY_TIMEOUT_S, DEFAULT_STOP_TIMEOUT_S, Cluster, Progress
from failsafe.cluster.topology.mirror import (
    MirrorError,
    MirrorFlow,
    PartitionLag,
    mirror_lag,
    mirroring,
    prepare_mirror,
)
from failsafe.errors import FailsafeError, UserError
from failsafe.jvm.mirror import mirror_dist
from failsafe.supervisor import DOWN, TrackedProcess, read_pidfile, spawn
from failsafe.waiting import WaitTimeout, wait_until

PAIR_FILE = "dr.json"
PAIR_FORMAT = 1
PRIMARY, BACKUP = "primary", "backup"
ALIASES = (PRIMARY, BACKUP)
BACKUP_PORT_OFFSET = 1000
MIRROR_READY_TIMEOUT_S = 120.0
MIRROR_STOP_TIMEOUT_S = 30.0


def _ignore(_: str) -> None:
    """Progress nobody watches."""


def is_pair(root: Path) -> bool:
    return (Path(root) / PAIR_FILE).is_file()


def write_pair_file(root: Path) -> None:
    (Path(root) / PAIR_FILE).write_text(
        json.dumps(
            {
                "format": PAIR_FORMAT,
                "clusters": {alias: {"dir": alias} for alias in ALIASES},
                "written_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            },
            indent=2,
        )
        + "\n"
    )


def check_pair_file(root: Path) -> None:
    """``dr.json`` is the one failsafe writes; if not, UserError naming it and saying to clean (clean never reads
    it)."""
    path = Path(root) / PAIR_FILE
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise unreadable(path, root, str(e)) from e
    expected = {alias: {"dir": alias} for alias in ALIASES}
    if not isinstance(data, dict):
        reason = "it holds no JSON object"
    elif data.get("format") != PAIR_FORMAT:
        reason = f"format {data.get('format')!r}, this failsafe reads {PAIR_FORMAT}"
    elif data.get("clusters") != expected:
        reason = f"its clusters are {data.get('clusters')!r}, not {expected!r}"
    else:
        return
    raise unreadable(path, root, reason)


def backup_spec(primary: ClusterSpec) -> ClusterSpec:
    """The backup: the primary's shape, every port 1000 higher."""
    shift = {
        name: getattr(primary, name) + BACKUP_PORT_OFFSET
        for name in ("controller_base_port", "replication_base_port", "metrics_base_port")
        if getattr(primary, name) is not None
    }
    return replace(primary, base_port=primary.base_port + BACKUP_PORT_OFFSET, **shift)


@dataclass(frozen=True)
class PairStatus:
    root: Path
    clusters: dict[str, ClusterStatus]
    mirrors: list[MirrorStatus]

    def to_json(self) -> dict[str, Any]:
        return {
            "dir": str(self.root),
            "clusters": {alias: c.to_json() for alias, c in self.clusters.items()},
            "mirrors": [
                {"flow": s.flow.arrow, "pid": s.pid, "state": str(s.state), "properties": str(s.properties)}
                for s in self.mirrors
            ],
        }


@dataclass(frozen=True)
class Pair:
    root: Path
    noun: ClassVar[str] = "DR pair"

    @classmethod
    def open(cls, root: Path) -> Pair:
        root = Path(root)
        if not is_pair(root):
            raise UserError(f"{root} is not a DR pair (no {PAIR_FILE}): make one with 'failsafe up --dr --dir {root}'")
        check_pair_file(root)
        return cls(root)

    @classmethod
    def up(
        cls,
        root: Path,
        spec: ClusterSpec,
        explicit: set[str],
        timeout_s: float = DEFAULT_READY_TIMEOUT_S,
        progress: Progress | None = None,
    ) -> Pair:
        return up_pair(root, spec, explicit, timeout_s, progress)

    def cluster_dir(self, alias: str) -> Path:
        return self.root / alias

    def cluster(self, alias: str) -> Cluster:
        return Cluster.open(self.cluster_dir(alias))

    # -- the topology (cluster/topology/directory.py) -----------------------------------------------------
    def clusters(self) -> dict[str, Cluster]:
        return {alias: self.cluster(alias) for alias in ALIASES}

    @property
    def fault_target(self) -> Cluster:
        """A DR scenario's faults hit the primary; the backup is where the clients go."""
        return self.cluster(PRIMARY)

    def bootstraps(self) -> dict[str, str]:
        return {alias: self.cluster(alias).bootstrap_servers for alias in ALIASES}

    def nodes(self) -> dict[str, list[NodeSpec]]:
        return {alias: cluster.spec.nodes() for alias, cluster in self.clusters().items()}

    def status(self) -> PairStatus:
        return PairStatus(
            self.root,
            {alias: cluster_status(cluster) for alias, cluster in self.clusters().items()},
            self.mirror_status(),
        )

    def running(self) -> bool:
        return any(cluster.running_nodes() for cluster in self.clusters().values())

    def not_up(self) -> list[str]:
        return [f"the {alias}'s {problem}" for alias, cluster in self.clusters().items() for problem in not_up(cluster)]

    def not_whole(self) -> list[str]:
        return [
            f"the {alias}'s {problem}" for alias, cluster in self.clusters().items() for problem in cluster.not_whole()
        ]

    def down(self, timeout_s: float = DEFAULT_STOP_TIMEOUT_S) -> Stopped:
        """Mirrors first (they read one cluster and write the other), then the backup and the primary."""
        flows = self.stop_mirrors()
        stopped = {}
        for alias in (BACKUP, PRIMARY):
            made = ClusterDir(self.cluster_dir(alias)).has_state()
            stopped[alias] = len(lifecycle.down(self.cluster_dir(alias), timeout_s)) if made else 0
        return Stopped(stopped, flows)

    def clean(self, timeout_s: float = DEFAULT_STOP_TIMEOUT_S) -> None:
        self.clean_at(self.root, timeout_s)

    @classmethod
    def clean_at(cls, root: Path, timeout_s: float = DEFAULT_STOP_TIMEOUT_S) -> None:
        """The mirrors, both clusters, the directory; by pidfiles and without reading dr.json, so an unreadable one is
        no obstacle."""
        pair = cls(Path(root))
        pair.stop_mirrors()
        for alias in (BACKUP, PRIMARY):
            cdir = ClusterDir(pair.cluster_dir(alias))
            if cdir.has_state() or (cdir.root / LOCK_FILE).exists():
                lifecycle.clean(cdir.root, timeout_s)
        shutil.rmtree(pair.root)

    def facts(self) -> dict[str, Any]:
        """The pair's part of a run's manifest.json: each cluster's facts by alias."""
        return {"dr_pair": {alias: cluster_facts(cluster) for alias, cluster in self.clusters().items()}}

    def describe(self) -> str:
        spec, bootstraps = self.cluster(PRIMARY).spec, self.bootstraps()
        return (
            f"primary {bootstraps[PRIMARY]}, backup {bootstraps[BACKUP]} ({spec.brokers} brokers each, Kafka "
            f"{spec.kafka_version}, profile {spec.profile}); mirror with 'failsafe mirror start --dir {self.root}'"
        )

    def bootstrap_lines(self) -> list[str]:
        return [f"{alias}={servers}" for alias, servers in self.bootstraps().items()]

    # -- MirrorMaker, detached ------------------------------------------------------------------
    def mirror_dir(self, flow: MirrorFlow) -> Path:
        return self.root / "mirror" / flow.name

    def _pidfile(self, flow: MirrorFlow) -> Path:
        return self.mirror_dir(flow) / "mirrormaker.pid"

    def mirror_status(self) -> list[MirrorStatus]:
        out = []
        for flow in (MirrorFlow(PRIMARY, BACKUP), MirrorFlow(BACKUP, PRIMARY)):
            tracked = read_pidfile(self._pidfile(flow))
            state = DOWN if tracked is None else tracked.state()
            if tracked is not None or self.mirror_dir(flow).is_dir():
                out.append(
                    MirrorStatus(
                        flow,
                        tracked.pid if tracked and state != DOWN else None,
                        state,
                        self.mirror_dir(flow) / "mm2.properties",
                    )
                )
        return out

    def start_mirror(
        self,
        flow: MirrorFlow,
        topics: list[str],
        settings: Mapping[str, str],
        timeout_s: float = MIRROR_READY_TIMEOUT_S,
        progress: Progress | None = None,
    ) -> TrackedProcess:
        """Write mm2.properties, start MirrorMaker detached (its pidfile like a node's) and wait until it mirrors
        ``topics``."""
        tracked = read_pidfile(self._pidfile(flow))
        if tracked is not None and tracked.state() != DOWN:
            raise UserError(
                f"MirrorMaker {flow.arrow} is already running (pid {tracked.pid}): 'failsafe mirror stop' first"
            )
        bootstraps, work, target = self.bootstraps(), self.mirror_dir(flow), self.cluster(flow.target)
        cmd = prepare_mirror(flow, bootstraps, topics, settings, work, target.java, target.spec.kafka_version)
        child = spawn(
            cmd,
            name=f"mirrormaker {flow.arrow}",
            log_path=work / "mirrormaker.log",
            pidfile=self._pidfile(flow),
            cwd=work,
            dies_with_parent=False,
        )
        (progress or _ignore)(
            f"MirrorMaker {flow.arrow} started (pid {child.pid}); waiting until {', '.join(topics)} are mirrored"
        )
        try:
            wait_mirroring(flow, bootstraps, topics, timeout_s, alive=child.running, log=work / "mirrormaker.log")
        except BaseException:
            self.stop_mirror(flow)
            raise
        return read_pidfile(self._pidfile(flow))  # type: ignore[return-value]

    def stop_mirror(self, flow: MirrorFlow, timeout_s: float = MIRROR_STOP_TIMEOUT_S) -> bool:
        """SIGTERM (MirrorMaker stops its herders), SIGKILL after ``timeout_s``; True when one was running."""
        pidfile = self._pidfile(flow)
        tracked = read_pidfile(pidfile)
        was_running = tracked is not None and tracked.state() != DOWN
        if tracked is not None:
            tracked.stop(timeout_s, signal.SIGTERM)
        pidfile.unlink(missing_ok=True)
        return was_running

    def stop_mirrors(self, timeout_s: float = MIRROR_STOP_TIMEOUT_S) -> list[MirrorFlow]:
        return [s.flow for s in self.mirror_status() if self.stop_mirror(s.flow, timeout_s)]

    def lag(self, flow: MirrorFlow, topics: list[str]) -> list[PartitionLag]:
        return mirror_lag(flow, self.bootstraps(), topics)


def wait_mirroring(
    flow: MirrorFlow,
    bootstraps: Mapping[str, str],
    topics: list[str],
    timeout_s: float,
    alive: Callable[[], bool],
    log: Path,
) -> None:
    """Until every partition of ``topics`` has its mirrored partition on the target (the lag is observable)."""

    def ready() -> bool:
        if not alive():
            raise MirrorError(f"MirrorMaker {flow.arrow} exited while starting: see {log}")
        try:
            return mirroring(mirror_lag(flow, bootstraps, topics))
        except FailsafeError:
            return False

    try:
        wait_until(
            ready,
            timeout_s,
            f"MirrorMaker {flow.arrow} did not mirror {', '.join(topics)} within {timeout_s:g}s (see {log})",
            poll_interval_s=0.5,
        )
    except WaitTimeout as e:
        raise MirrorError(str(e)) from e


def up_pair(
    root: Path,
    spec: ClusterSpec,
    explicit: set[str],
    timeout_s: float = DEFAULT_READY_TIMEOUT_S,
    progress: Progress | None = None,
) -> Pair:
    """Both clusters (made or restarted), then ``dr.json``; a backup that fails to start leaves the primary stopped."""
    mode_of(spec).check_can_pair()
    if spec.security != "plaintext":
        raise UserError(
            f"--security {spec.security}: a DR pair's MirrorMaker 2 has no security settings yet; pairs run in "
            "plaintext"
        )
    root = Path(root)
    if root.exists() and any(root.iterdir()) and not is_pair(root) and (root / STATE_FILE).exists():
        raise UserError(f"{root} holds a single cluster: choose another --dir for a DR pair")
    mirror_dist(spec.kafka_version)  # before anything starts: MirrorMaker's jars are resolved
    say = progress or _ignore
    say("starting the primary")
    lifecycle.up(root / PRIMARY, spec, explicit, timeout_s, say)
    try:
        say("starting the backup")
        lifecycle.up(root / BACKUP, backup_spec(spec), explicit, timeout_s, say)
    except BaseException:
        lifecycle.down(root / PRIMARY)
        raise
    write_pair_file(root)
    return Pair(root)


def down_pair(root: Path, timeout_s: float = DEFAULT_STOP_TIMEOUT_S) -> tuple[list[MirrorFlow], dict[str, int]]:
    """Mirrors first, then the backup and the primary: the flows stopped and each cluster's count of nodes stopped."""
    stopped = Pair.open(root).down(timeout_s)
    return stopped.mirrors, stopped.nodes
