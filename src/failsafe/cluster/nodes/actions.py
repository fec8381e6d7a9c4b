"""What an operator does to one node by hand (kill, stop, start, pause, resume), for the CLI and the console alike.

Every action, done or refused by Kafka's state, is appended to the cluster's operator journal
(cluster/observe/journal.py) with who asked for it, so ``failsafe status`` and a running scenario's
history see it.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from failsafe.cluster.observe import journal
from failsafe.cluster.spec import CONTROLLER, ZOOKEEPER, NodeSpec
from failsafe.cluster.topology.lifecycle import DEFAULT_READY_TIMEOUT_S, DEFAULT_STOP_TIMEOUT_S, Cluster, start_node
from failsafe.errors import FailsafeError, UserError
from failsafe.waiting import WaitTimeout

NODE_ACTIONS = {
    "kill": "SIGKILL: the process dies at once, no controlled shutdown",
    "stop": "SIGTERM: controlled shutdown",
    "start": "start it again and wait until it has registered",
    "pause": "SIGSTOP: frozen, still holding its sockets",
    "resume": "SIGCONT: thaw a paused node",
}


def default_timeout_s(action: str) -> float:
    return DEFAULT_READY_TIMEOUT_S if action == "start" else DEFAULT_STOP_TIMEOUT_S


def require_role(cluster: Cluster, role: str) -> None:
    """'zookeeper' actions on a KRaft cluster, 'controller' actions on a ZooKeeper one: say what the cluster has
    instead."""
    spec = cluster.spec
    if role == ZOOKEEPER and not spec.zookeeper_nodes():
        raise UserError(
            f"the cluster at {cluster.dir.root} runs in KRaft mode: it has no ZooKeeper (its controllers are "
            f"{', '.join(str(n.node_id) for n in spec.controller_nodes())}: use 'failsafe controller')"
        )
    if role == CONTROLLER and not spec.controller_nodes():
        active = cluster.active_controller()
        now = f" (broker {active} now)" if active is not None else ""
        raise UserError(
            f"the cluster at {cluster.dir.root} runs in ZooKeeper mode: its controller is a broker{now}, "
            f"so act on it with 'failsafe broker', and on ZooKeeper with 'failsafe zookeeper'"
        )


def act_on_node(
    cluster: Cluster,
    role: str,
    node_id: int,
    action: str,
    timeout_s: float,
    *,
    source: str,
    progress: Callable[[str], None] = lambda _: None,
) -> NodeSpec:
    """Do ``action`` to the ``role`` with ``node_id`` and wait for its effect; journal it, whether it worked or not."""
    if action not in NODE_ACTIONS:
        raise UserError(f"unknown action {action!r}: use one of {', '.join(NODE_ACTIONS)}")
    require_role(cluster, role)
    node = cluster.node(node_id, role)
    start_ns = time.time_ns()
    try:
        if action == "start":
            start_node(cluster, node, timeout_s, progress)
        else:
            cluster.signal_node(node, action, timeout_s)
    except (FailsafeError, WaitTimeout) as e:
        _journal(
            cluster, journal.OperatorAction(start_ns, time.time_ns(), action, role, node_id, source, False, str(e))
        )
        raise
    _journal(cluster, journal.OperatorAction(start_ns, time.time_ns(), action, role, node_id, source, True))
    return node


def record_leader_election(cluster: Cluster, start_ns: int, source: str, elected: list[str], failed: list[str]) -> None:
    _journal(
        cluster,
        journal.OperatorAction(
            start_ns,
            time.time_ns(),
            journal.ELECT_LEADERS,
            "cluster",
            None,
            source,
            not failed,
            "; ".join(failed) or None,
            {"elected": elected},
        ),
    )


def _journal(cluster: Cluster, action: journal.OperatorAction) -> None:
    try:
        journal.append(cluster.dir.journal, action)
    except OSError:
        pass  # the action itself is done; a read-only or vanished directory must not turn it into an error
