"""A running scenario's view of the operator: kills, stops and pauses done by hand are faults in its history.

The CLI and the console append every node action to the cluster's journal (cluster/observe/journal.py).
The engine reads the lines written since its run began, at every tick, and records:

- kill / stop / pause of a node: a ``fault-start`` (fault ``kill``, ``terminate``, ``pause``;
  role ``operator (console)`` or ``operator (cli)``) at the time the action began. The heal undoes
  it like a scheduled fault (starts or resumes the node), so the run still ends with a whole cluster;
- start / resume of that node by hand: the ``fault-stop`` of that fault;
- a preferred leader election: an ``elect-leaders`` op from process ``operator``;
- a network fault (``failsafe net ...``): a ``fault-start`` of target ``network`` naming its sides,
  undone by the heal (its nftables chain deleted); ``failsafe net heal`` is its ``fault-stop``.

A failed action (the node was already down) is recorded with its error, and is no fault.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

from failsafe.cluster.observe import journal
from failsafe.cluster.site import RunSite
from failsafe.faults import AppliedFault, FaultSpec, Target, fault_type
from failsafe.faults.network import PARTITION, sides_label
from failsafe.faults.nodes import KILL, PAUSE, TERMINATE, NodeChoice
from failsafe.history.ops import Family, Op, Process, fault_start, fault_stop, op
from failsafe.history.recorder import Recorder
from failsafe.supervisor import PAUSED

_KIND = {"kill": KILL, "stop": TERMINATE, "pause": PAUSE}
SIGNAL_TIMEOUT_S = 60.0


class OperatorFeed:
    def __init__(self, path: Path, cluster: RunSite, recorder: Recorder, fault_ids: Iterator[int]) -> None:
        self.path = path
        self.cluster = cluster
        self.recorder = recorder
        self.fault_ids = fault_ids
        self.offset = journal.size(path)
        # (role, node id) -> (fault_id, the applied fault) of a node the operator took away; ("network", chain) for a
        # network fault
        self.open: dict[tuple[str, int | str], tuple[int, AppliedFault]] = {}

    def read(self, started: Callable[[int, FaultSpec, AppliedFault], None]) -> None:
        """Record what the operator did since the last read; ``started`` gets each new fault (the engine heals it)."""
        actions, self.offset = journal.read_from(self.path, self.offset)
        for a in actions:
            self._record(a, started)

    def _record(self, a: journal.OperatorAction, started: Callable[[int, FaultSpec, AppliedFault], None]) -> None:
        who = f"operator ({a.source})"
        if a.action in (journal.NET_FAULT, journal.NET_HEAL):
            self._network(a, who, started)
            return
        if a.action == journal.ELECT_LEADERS:
            self.recorder.record(
                op(
                    Op.ELECT_LEADERS,
                    process=Process.OPERATOR,
                    time_ns=a.start_ns,
                    elected=a.detail.get("elected", []),
                    failed=[a.error] if a.error else [],
                )
            )
            return
        if a.node is None:
            return
        key = (a.role, a.node)
        if a.action in _KIND:
            fault_id = next(self.fault_ids)
            target = (
                Target.BROKER if a.role == "broker" else Target.CONTROLLER if a.role == "controller" else Target.QUORUM
            )
            kind = _KIND[a.action]
            start = fault_start(
                fault_id,
                kind,
                target=target,
                nodes=[a.node],
                role=who,
                family=fault_type(kind).family,
                error=None if a.ok else a.error,
                time_ns=a.start_ns,
            )
            self.recorder.record(start)
            if not a.ok:
                return
            applied = AppliedFault(kind, target, [a.node], who, self._undo(a.role, a.node, a.action))
            self.open[key] = (fault_id, applied)
            started(fault_id, FaultSpec(fault=kind, at_s=0.0, params=NodeChoice(node=a.node)), applied)
        elif a.action in journal.BRINGS_BACK and a.ok and key in self.open:
            fault_id, applied = self.open.pop(key)
            if not applied.undone:
                applied.undone = True
                applied.undo_attempts += 1
                self.recorder.record(
                    fault_stop(fault_id, applied.kind, True, applied.undo_attempts, by=who, time_ns=a.end_ns)
                )

    def _network(
        self, a: journal.OperatorAction, who: str, started: Callable[[int, FaultSpec, AppliedFault], None]
    ) -> None:
        if a.action == journal.NET_HEAL:
            for chain in a.detail.get("chains", []):
                opened = self.open.pop(("network", chain), None)
                if opened is not None and not opened[1].undone:
                    fault_id, applied = opened
                    applied.undone = True
                    applied.undo_attempts += 1
                    self.recorder.record(
                        fault_stop(fault_id, applied.kind, True, applied.undo_attempts, by=who, time_ns=a.end_ns)
                    )
            return
        kind = str(a.detail.get("kind", PARTITION))
        fault_id = next(self.fault_ids)
        nodes = list(a.detail.get("nodes", []))
        role = f"{who}: {a.detail.get('fault', '')}".rstrip(": ")
        sides, one_way, loss = a.detail.get("sides"), a.detail.get("one_way"), a.detail.get("loss")
        label = sides_label(sides, bool(one_way), loss) if sides else None
        self.recorder.record(
            fault_start(
                fault_id,
                kind,
                target=Target.NETWORK,
                nodes=nodes,
                role=role,
                family=Family.NETWORK,
                label=label,
                sides=sides,
                one_way=one_way,
                loss=loss,
                details={"chain": a.detail.get("chain")},
                error=None if a.ok else a.error,
                time_ns=a.start_ns,
            )
        )
        if not a.ok:
            return
        chain = str(a.detail["chain"])

        def undo() -> None:
            self.cluster.nodes.net_delete(chain)
            self.open.pop(("network", chain), None)

        applied = AppliedFault(
            kind, Target.NETWORK, nodes, role, undo, label=label, sides=sides, one_way=one_way, loss=loss
        )
        self.open[("network", chain)] = (fault_id, applied)
        started(fault_id, FaultSpec(fault=kind, at_s=0.0), applied)

    def _undo(self, role: str, node_id: int, action: str) -> Callable[[], None]:
        def undo() -> None:
            node = self.cluster.node(node_id, role)
            if action == "pause":
                if self.cluster.node_state(node) == PAUSED:
                    self.cluster.signal_node(node, "resume", SIGNAL_TIMEOUT_S)
            else:
                self.cluster.restart([node])
            self.open.pop((role, node_id), None)

        return undo
