"""A running scenario's view of the operator: kills, stops and pauses done by hand are faults in its history.

The CLI and the console append every node action to the cluster's journal (cluster/journal.py).
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
from typing import Any

from failsafe.cluster import journal, netfilter
from failsafe.faults import AppliedFault, FaultKind, FaultSpec, Target
from failsafe.history.recorder import Recorder
from failsafe.supervisor import PAUSED

_KIND = {"kill": FaultKind.KILL, "stop": FaultKind.TERMINATE, "pause": FaultKind.PAUSE}
SIGNAL_TIMEOUT_S = 60.0


class OperatorFeed:
    def __init__(self, path: Path, cluster: Any, recorder: Recorder, fault_ids: Iterator[int]) -> None:
        self.path = path
        self.cluster = cluster
        self.recorder = recorder
        self.fault_ids = fault_ids
        self.offset = journal.size(path)
        # (role, node id) -> (fault_id, the applied fault) of a node the operator took away; ("network", chain) for a network fault
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
            self.recorder.record({"time_ns": a.start_ns, "process": "operator", "type": "info", "f": "elect-leaders",
                                  "elected": a.detail.get("elected", []), "failed": [a.error] if a.error else []})
            return
        if a.node is None:
            return
        key = (a.role, a.node)
        if a.action in _KIND:
            fault_id = next(self.fault_ids)
            target = Target.BROKER if a.role == "broker" else Target.CONTROLLER if a.role == "controller" else Target.QUORUM
            op = {"time_ns": a.start_ns, "process": "nemesis", "type": "info", "f": "fault-start", "fault_id": fault_id,
                  "fault": str(_KIND[a.action]), "target": str(target), "nodes": [a.node], "role": who}
            if not a.ok:
                self.recorder.record({**op, "error": a.error})
                return
            self.recorder.record(op)
            applied = AppliedFault(_KIND[a.action], target, [a.node], who, self._undo(a.role, a.node, a.action))
            self.open[key] = (fault_id, applied)
            started(fault_id, FaultSpec(fault=str(_KIND[a.action]), at_s=0.0, node=a.node), applied)
        elif a.action in journal.BRINGS_BACK and a.ok and key in self.open:
            fault_id, applied = self.open.pop(key)
            if not applied.undone:
                applied.undone = True
                applied.undo_attempts += 1
                self.recorder.record({"time_ns": a.end_ns, "process": "nemesis", "type": "info", "f": "fault-stop", "fault_id": fault_id,
                                      "fault": str(applied.kind), "ok": True, "attempt": applied.undo_attempts, "by": who})

    def _network(self, a: journal.OperatorAction, who: str, started: Callable[[int, FaultSpec, AppliedFault], None]) -> None:
        if a.action == journal.NET_HEAL:
            for chain in a.detail.get("chains", []):
                opened = self.open.pop(("network", chain), None)
                if opened is not None and not opened[1].undone:
                    fault_id, applied = opened
                    applied.undone = True
                    applied.undo_attempts += 1
                    self.recorder.record({"time_ns": a.end_ns, "process": "nemesis", "type": "info", "f": "fault-stop", "fault_id": fault_id,
                                          "fault": str(applied.kind), "ok": True, "attempt": applied.undo_attempts, "by": who})
            return
        kind = FaultKind(a.detail.get("kind", FaultKind.PARTITION))
        fault_id = next(self.fault_ids)
        nodes = list(a.detail.get("nodes", []))
        op = {"time_ns": a.start_ns, "process": "nemesis", "type": "info", "f": "fault-start", "fault_id": fault_id, "fault": str(kind),
              "target": str(Target.NETWORK), "nodes": nodes, "role": f"{who}: {a.detail.get('fault', '')}".rstrip(": ")}
        if not a.ok:
            self.recorder.record({**op, "error": a.error})
            return
        chain = str(a.detail["chain"])
        self.recorder.record({**op, "details": {k: a.detail[k] for k in ("sides", "one_way", "loss", "chain") if k in a.detail}})

        def undo() -> None:
            netfilter.delete_chain(self.cluster.dir.root, chain)
            self.open.pop(("network", chain), None)
        applied = AppliedFault(kind, Target.NETWORK, nodes, op["role"], undo)
        self.open[("network", chain)] = (fault_id, applied)
        started(fault_id, FaultSpec(fault=str(kind), at_s=0.0), applied)

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
