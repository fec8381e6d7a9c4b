"""What the nodes' own logs say happened during a run (a broker fenced, a ZooKeeper session expired, a new leader), read
once the run is over into ``node-event`` ops (cluster/node_logs.py): where a failover's time went is measured from them
(checkers/breakdown.py)."""

from __future__ import annotations

from typing import Any

from failsafe.cluster.node_logs import read_node_events
from failsafe.cluster.spec import ClusterSpec
from failsafe.history.recorder import Recorder


def record_node_events(cluster: Any, recorder: Recorder, since_ns: int, until_ns: int) -> int:
    """Record the node events of ``cluster``'s logs between ``since_ns`` and ``until_ns``; how many. Nothing for a test's
    fake cluster without a spec and a directory."""
    spec, directory = getattr(cluster, "spec", None), getattr(cluster, "dir", None)
    if not isinstance(spec, ClusterSpec) or not hasattr(directory, "log_file"):
        return 0
    kafka = {n.node_id: directory.log_file(n) for n in spec.nodes() if not n.is_zookeeper}
    zookeeper = {n.node_id: directory.log_file(n) for n in spec.zookeeper_nodes()}
    ops = read_node_events(kafka, since_ns, until_ns, zookeeper)
    for op in ops:
        recorder.record(op)
    return len(ops)
