"""What the nodes' own logs say happened during a run (a broker fenced, a ZooKeeper session expired, a new leader), read
once the run is over into ``node-event`` ops (cluster/observe/node_logs.py): where a failover's time went is measured
from them (checkers/measure/breakdown.py)."""

from __future__ import annotations

from pathlib import Path

from failsafe.cluster.observe.node_logs import read_node_events
from failsafe.cluster.site import NodeLogs, RunSite
from failsafe.history.recorder import Recorder


def _logs(cluster: RunSite) -> NodeLogs | None:
    """The Kafka nodes' and the ZooKeeper nodes' log files; None when no log of the cluster is failsafe's to read."""
    return cluster.node_logs()


def log_offsets(cluster: RunSite) -> dict[Path, int]:
    """How long each node's log is now (taken when a run starts: its events are read from there on)."""
    logs = _logs(cluster)
    sizes = {}
    for path in [*logs[0].values(), *logs[1].values()] if logs else []:
        try:
            sizes[path] = path.stat().st_size
        except OSError:
            continue
    return sizes


def record_node_events(
    cluster: RunSite, recorder: Recorder, since_ns: int, until_ns: int, offsets: dict[Path, int] | None = None
) -> int:
    """Record the node events of ``cluster``'s logs between ``since_ns`` and ``until_ns`` (read from ``offsets``); how
    many."""
    logs = _logs(cluster)
    if logs is None:
        return 0
    kafka, zookeeper = logs
    shift = cluster.clock_offsets_ns()
    slack = max((abs(v) for v in shift.values()), default=0)
    recorded = 0
    for op in read_node_events(kafka, since_ns - slack, until_ns + slack, zookeeper, offsets):
        # A host's log is in the host's clock: moved onto failsafe's by the offset measured (its bound is in the
        # manifest).
        op["time_ns"] -= shift.get(op.get("node"), 0)
        if since_ns <= op["time_ns"] <= until_ns:
            recorder.record(op)
            recorded += 1
    return recorded
