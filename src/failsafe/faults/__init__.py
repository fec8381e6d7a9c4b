"""Faults as plug-ins: a registry from kind to the function that starts it (docs/lab.md lists them).

    base.py     FaultKind, Role, Target, FaultSpec, AppliedFault (undo marked done only on success)
    nodes.py    brokers and controllers: kill, terminate, pause, restart, quorum-loss
    clients.py  the workload's processes: kill-consumer, close-consumer, kill-driver, kill-spark-worker
    network.py  links: partition, lossy-link, isolate, cut-clients (nftables rules in the cluster's own table)
    sides.py    a network fault's sides, as written and as resolved when it starts

Scenario files and the engine name faults through ``FAULTS``; a new kind of fault is one more entry.
"""

from __future__ import annotations

from failsafe.faults.base import AppliedFault, FaultError, FaultKind, FaultSpec, FaultStart, FaultTargets, Role, Target
from failsafe.faults.clients import close_consumer, kill_consumer, kill_driver, kill_spark_worker
from failsafe.faults.network import cut_clients, isolate, partition
from failsafe.faults.nodes import cluster_loss, kill, pause, quorum_loss, restart, terminate

FAULTS: dict[FaultKind, FaultStart] = {
    FaultKind.KILL: kill,
    FaultKind.TERMINATE: terminate,
    FaultKind.PAUSE: pause,
    FaultKind.RESTART: restart,
    FaultKind.QUORUM_LOSS: quorum_loss,
    FaultKind.CLUSTER_LOSS: cluster_loss,
    FaultKind.KILL_CONSUMER: kill_consumer,
    FaultKind.CLOSE_CONSUMER: close_consumer,
    FaultKind.KILL_DRIVER: kill_driver,
    FaultKind.KILL_SPARK_WORKER: kill_spark_worker,
    FaultKind.PARTITION: partition,
    FaultKind.LOSSY_LINK: partition,
    FaultKind.ISOLATE: isolate,
    FaultKind.CUT_CLIENTS: cut_clients,
}
# Faults that act on brokers chosen by role, and those that act on the workload's clients.
BROKER_FAULTS = (FaultKind.KILL, FaultKind.TERMINATE, FaultKind.PAUSE, FaultKind.RESTART)
CONSUMER_FAULTS = (FaultKind.KILL_CONSUMER, FaultKind.CLOSE_CONSUMER)
# Network faults on sides, and those on one node chosen by role like the broker faults.
SIDES_FAULTS = (FaultKind.PARTITION, FaultKind.LOSSY_LINK)
NODE_NETWORK_FAULTS = (FaultKind.ISOLATE, FaultKind.CUT_CLIENTS)

__all__ = ["BROKER_FAULTS", "CONSUMER_FAULTS", "FAULTS", "NODE_NETWORK_FAULTS", "SIDES_FAULTS", "AppliedFault", "FaultError",
           "FaultKind", "FaultSpec", "FaultStart", "FaultTargets", "Role", "Target"]
