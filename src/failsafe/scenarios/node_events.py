"""What the nodes' own logs say happened during a run (a broker fenced, a ZooKeeper session expired, a new leader), read
once the run is over into ``node-event`` ops (cluster/node_logs.py): where a failover's time went is measured from them
(checkers/breakdown.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from failsafe.cluster.node_logs import read_node_events
from failsafe.cluster.spec import ClusterSpec
from failsafe.history.recorder import Recorder


def _logs(cluster: Any) -> tuple[dict[int, Path], dict[int, Path]] | None:
    """The Kafka nodes' and the ZooKeeper nodes' log files; None for a test's fake cluster without a spec and a directory."""
    spec, directory = getattr(cluster, "spec", None), getattr(cluster, "dir", None)
    if not isinstance(spec, ClusterSpec) or not hasattr(directory, "log_file"):
        return None
    return ({n.node_id: directory.log_file(n) for n in spec.nodes() if not n.is_zookeeper},
            {n.node_id: directory.log_file(n) for n in spec.zookeeper_nodes()})


def log_offsets(cluster: Any) -> dict[Path, int]:
    """How long each node's log is now (taken when a run starts: its events are read from there on)."""
    logs = _logs(cluster)
    sizes = {}
    for path in [*logs[0].values(), *logs[1].values()] if logs else []:
        try:
            sizes[path] = path.stat().st_size
        except OSError:
            continue
    return sizes


def record_node_events(cluster: Any, recorder: Recorder, since_ns: int, until_ns: int, offsets: dict[Path, int] | None = None) -> int:
    """Record the node events of ``cluster``'s logs between ``since_ns`` and ``until_ns`` (read from ``offsets``); how many."""
    logs = _logs(cluster)
    if logs is None:
        return 0
    kafka, zookeeper = logs
    ops = read_node_events(kafka, since_ns, until_ns, zookeeper, offsets)
    for op in ops:
        recorder.record(op)
    return len(ops)
