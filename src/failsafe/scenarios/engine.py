"""The one scenario engine: every scenario kind runs through it.

Fixed phases: setup, warm-up, chaos, heal, recover, drain (checking and the report come after,
from the history alone). The engine owns the fault schedule, the recording of every fault's start
and every attempt to undo it, the waits, and the heal; a workload plug-in (scenarios/plugin.py)
owns its clients, and fault plug-ins (failsafe.faults) act on the cluster or on those clients.

The heal always runs, on success, on error and on Ctrl-C. An undo is marked done only when it
worked; a failed one is recorded (``fault-stop`` with ``ok: false``) and tried again, up to
HEAL_ATTEMPTS times in the heal and once more when the run closes. ``require_whole`` is the check
between scenarios: a node still down after a failed heal stops a seed lab with one line that
names it, instead of a timeout in the next scenario.
"""

from __future__ import annotations

import itertools
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any, Protocol

from failsafe.errors import ClusterNotWhole, FailsafeError, ScenarioFailed
from failsafe.faults import FAULTS, AppliedFault, FaultError, FaultKind, FaultSpec, FaultStart, FaultTargets
from failsafe.faults.network import NetworkLeash
from failsafe.history.recorder import Recorder
from failsafe.scenarios import setup
from failsafe.scenarios.controller_watch import ControllerWatch
from failsafe.scenarios.observe import TopologySampler
from failsafe.scenarios.operator_feed import OperatorFeed
from failsafe.scenarios.plugin import RunContext, Status, Workload
from failsafe.scenarios.rundir import RunDir
from failsafe.scenarios.schema import DR_ACTIONS, ActionKind, ActionSpec
from failsafe.supervisor import Supervisor
from failsafe.waiting import WaitTimeout

HEAL_ATTEMPTS = 3
TICK_S = 0.1
# What an undo may fail with and still be tried again: anything else is a bug and propagates.
UNDO_ERRORS = (FailsafeError, WaitTimeout, OSError, subprocess.TimeoutExpired)


class Phase(StrEnum):
    SETUP = "setup"
    WARM_UP = "warm-up"
    CHAOS = "chaos"
    HEAL = "heal"
    RECOVER = "recover"
    DRAIN = "drain"


class Sampler(Protocol):
    latest: list[dict]

    def start(self) -> Any: ...

    def sample(self) -> list[dict] | None: ...

    def stop(self) -> None: ...


class WholeCluster(Protocol):
    bootstrap_servers: str

    def not_whole(self) -> list[str]: ...


@dataclass
class ActiveFault:
    fault_id: int
    spec: FaultSpec
    applied: AppliedFault


class Engine:
    """One run of one scenario: ``run()`` then, always, ``close()`` (``run_scenario`` does both)."""

    def __init__(self, scenario: Any, workload: Workload, run_dir: RunDir, cluster: WholeCluster, *, kafka_version: str,
                 cluster_facts: Mapping[str, Any], status: Status, event: Status,
                 faults: Mapping[FaultKind, FaultStart] = FAULTS, sampler: Sampler | None = None,
                 operator_journal: Path | None = None, clusters: Mapping[str, str] | None = None) -> None:
        self.scenario = scenario
        self.workload = workload
        self.run_dir = run_dir
        self.cluster = cluster
        self.cluster_facts = cluster_facts
        self.status = status
        self.event = event
        self.fault_starts = faults
        self.recorder = Recorder(run_dir.history_path)
        self.supervisor = Supervisor()
        self.sampler: Sampler = sampler or TopologySampler(cluster.bootstrap_servers, workload.sampled_topics, self.recorder)
        self.controller_watch = ControllerWatch(cluster, self.recorder)
        self.faults: list[ActiveFault] = []
        self._fault_ids = itertools.count(1)
        self._phase = Phase.SETUP
        self._phase_started = time.monotonic()
        # Wall seconds per phase (and "close": stopping children, the last undo), for "where the time goes".
        self.phase_seconds: dict[str, float] = {}
        self.ctx = RunContext(
            bootstrap_servers=cluster.bootstrap_servers, kafka_version=kafka_version, recorder=self.recorder, run_path=run_dir.path,
            supervisor=self.supervisor, event=event, wait=self.wait, hold=self.hold, topology=lambda: self.sampler.latest,
            clusters=dict(clusters or {}),
        )
        self._network_leash: NetworkLeash | None = None
        self.targets = FaultTargets(cluster=cluster, clients=workload, partition=self._partition, network_leash=self._leash)
        # Kills and pauses done by hand (CLI or console) while the scenario runs: faults in its history too.
        self.operator = OperatorFeed(operator_journal, cluster, self.recorder, self._fault_ids) if operator_journal else None

    # -- progress and waiting -------------------------------------------------------------------
    def _close_phase(self) -> None:
        now = time.monotonic()
        self.phase_seconds[str(self._phase)] = self.phase_seconds.get(str(self._phase), 0.0) + now - self._phase_started
        self._phase_started = now

    def _enter(self, phase: Phase) -> None:
        self._close_phase()
        self._phase = phase
        self.recorder.record({"process": "runner", "type": "info", "f": "phase", "phase": str(phase)})
        self.event(str(phase))
        self._refresh()

    def _refresh(self) -> None:
        active = sum(1 for f in self.faults if not f.applied.undone)
        self.status(f"{self.scenario.name} · {self._phase} {time.monotonic() - self._phase_started:4.1f}s · "
                    f"{self.workload.progress()} · faults active {active}")

    def _tick(self) -> None:
        self.workload.tick()
        if self.operator is not None:
            self.operator.read(self._operator_fault)
        self._refresh()

    def _operator_fault(self, fault_id: int, spec: FaultSpec, applied: AppliedFault) -> None:
        self.event(f"{spec.fault} {applied.target} {_nodes(applied)} ({applied.role})")
        self.faults.append(ActiveFault(fault_id, spec, applied))

    def wait(self, condition: Callable[[], object], timeout_s: float, message: str) -> None:
        deadline = time.monotonic() + timeout_s
        while not condition():
            self._tick()
            if time.monotonic() > deadline:
                raise WaitTimeout(message)
            # Pacing the check of an external condition, not a synchronising sleep.
            time.sleep(TICK_S)

    def hold(self, seconds: float) -> None:
        self._hold_until(time.monotonic() + seconds)

    def _hold_until(self, end: float) -> None:
        """Let the workload run until ``end``, a time the scenario's schedule asks for."""
        while True:
            self._tick()
            left = end - time.monotonic()
            if left <= 0:
                return
            time.sleep(min(TICK_S, left))

    # -- the phases -----------------------------------------------------------------------------
    def run(self) -> None:
        phases = self.scenario.phases
        try:
            self._enter(Phase.SETUP)
            self.run_dir.write_manifest(self.cluster_facts, self.scenario)
            self.sampler.start()
            self.controller_watch.start()
            self.workload.setup(self.ctx)
            self._enter(Phase.WARM_UP)
            self.workload.start(self.ctx)
            self.hold(phases.warmup_s)
            self._chaos()
        finally:
            self._heal()
        self._recover()
        self._enter(Phase.DRAIN)
        self.workload.drain(self.ctx)

    def _chaos(self) -> None:
        self._enter(Phase.CHAOS)
        start = time.monotonic()
        events: list[tuple[float, int, Callable[[], None]]] = []
        for f in self.scenario.faults:
            events.append((f.at_s, 0, lambda f=f: self._start_fault(f)))
            if f.duration_s is not None:
                events.append((f.at_s + f.duration_s, 1, lambda f=f: self._undo_scheduled(f)))
        for a in self.scenario.actions:
            if a.phase == Phase.CHAOS:
                events.append((a.at_s, 2, lambda a=a: self._action(a)))
        for at_s, _, run in sorted(events, key=lambda e: (e[0], e[1])):
            self._hold_until(start + at_s)
            run()
        self._hold_until(start + self.scenario.phases.chaos_s)
        self.workload.end_chaos(self.ctx)

    def _heal(self) -> None:
        self._enter(Phase.HEAL)
        if self.operator is not None:
            self.operator.read(self._operator_fault)
        for _ in range(HEAL_ATTEMPTS):
            pending = [f for f in reversed(self.faults) if not f.applied.undone]
            if not pending:
                return
            for f in pending:
                self._undo(f)
        left = [f for f in self.faults if not f.applied.undone]
        if left:
            self.event(f"heal: {len(left)} fault(s) could not be undone in {HEAL_ATTEMPTS} attempts: "
                       + "; ".join(f"{f.spec.fault} of {_nodes(f.applied)}" for f in left))

    def _recover(self) -> None:
        phases = self.scenario.phases
        self._enter(Phase.RECOVER)

        def led_and_in_sync() -> bool:
            latest = self.sampler.latest
            return bool(latest) and all(p["leader"] >= 0 and len(p["isr"]) == len(p["replicas"]) for p in latest)

        try:
            self.wait(led_and_in_sync, phases.recover_timeout_s, "")
        except WaitTimeout:
            self.event(f"recover: partitions still without a leader or a full ISR after {phases.recover_timeout_s:g}s")
            self.recorder.record({"process": "runner", "type": "info", "f": "recover-timeout", "timeout_s": phases.recover_timeout_s})
        for a in self.scenario.actions:
            if a.phase == Phase.RECOVER:
                self._action(a)
        self.hold(phases.recover_s)

    def close(self) -> None:
        """Whatever happened: the workload and every child stopped, faults undone, sampler and history closed."""
        self._close_phase()
        try:
            self.workload.stop()
        finally:
            try:
                left = self.supervisor.stop_all()
                if left:
                    self.event(f"could not stop: {'; '.join(left)}")
            finally:
                try:
                    for f in reversed(self.faults):
                        if not f.applied.undone:
                            self._undo(f)
                finally:
                    if self._network_leash is not None:
                        self._network_leash.close()
                    self.sampler.stop()
                    self.controller_watch.stop()
                    self.recorder.close()
                    self.phase_seconds["close"] = time.monotonic() - self._phase_started

    # -- faults and actions ---------------------------------------------------------------------
    def _leash(self) -> NetworkLeash:
        """The watchdog that deletes this run's network rules if failsafe dies before the heal (made on first use)."""
        if self._network_leash is None:
            self._network_leash = NetworkLeash(self.cluster.dir.root, self.run_dir.path / "network-leash.log")
        return self._network_leash

    def _start_fault(self, spec: FaultSpec) -> None:
        fault_id = next(self._fault_ids)
        started_ns = time.time_ns()
        record = {"time_ns": started_ns, "process": "nemesis", "type": "info", "f": "fault-start", "fault_id": fault_id, "fault": spec.fault}
        try:
            applied = self.fault_starts[FaultKind(spec.fault)](spec, self.targets)
        except FaultError as e:
            self.recorder.record({**record, "error": str(e)})
            raise ScenarioFailed(f"{self.scenario.name}: the {spec.fault} fault at {spec.at_s:g}s could not start: {e}") from e
        self.recorder.record({**record, "target": str(applied.target), "nodes": applied.nodes, "role": applied.role,
                              **({"details": applied.details} if applied.details else {})})
        self.event(f"{spec.fault} {applied.target} {_nodes(applied)} ({applied.role})")
        active = ActiveFault(fault_id, spec, applied)
        self.faults.append(active)
        if applied.undo_action is None or applied.heals_at_once:
            self._undo(active)

    def _undo_scheduled(self, spec: FaultSpec) -> None:
        for f in self.faults:
            if f.spec is spec and not f.applied.undone:
                self._undo(f)

    def _undo(self, f: ActiveFault) -> bool:
        stop = {"process": "nemesis", "type": "info", "f": "fault-stop", "fault_id": f.fault_id, "fault": f.spec.fault}
        if f.applied.undo_action is not None:
            self.event(f"undo {f.spec.fault} of {f.applied.target} {_nodes(f.applied)}")
        try:
            f.applied.undo()
        except UNDO_ERRORS as e:
            # Recorded, shown, and tried again by the heal: the run goes on to check and report.
            self.recorder.record({**stop, "ok": False, "attempt": f.applied.undo_attempts, "error": f"{type(e).__name__}: {e}"})
            self.event(f"undo of {f.spec.fault} failed (attempt {f.applied.undo_attempts}): {e}")
            return False
        self.recorder.record({**stop, "ok": True, "attempt": f.applied.undo_attempts})
        return True

    def _partition(self, name: str) -> dict | None:
        topic, _, number = name.rpartition("-")
        latest = self.sampler.sample() or self.sampler.latest
        return next((p for p in latest if p["topic"] == topic and p["partition"] == int(number)), None)

    def _action(self, a: ActionSpec) -> None:
        bootstrap = self.cluster.bootstrap_servers
        if a.action == ActionKind.ELECT_LEADERS:
            self.event("preferred leader election")
            setup.elect_leaders(bootstrap, self.recorder)
        elif a.action == ActionKind.CREATE_TOPIC:
            topic = a.topic or f"{self.scenario.name}-created"
            outcome = setup.attempt_create_topic(bootstrap, topic, self.recorder)
            self.event(f"create topic {topic}: {outcome}")
        elif a.action == ActionKind.MIGRATE:
            self._migrate()
        elif a.action in DR_ACTIONS:
            move = getattr(self.workload, "move", None)
            if move is None:
                raise ScenarioFailed(f"{self.scenario.name}: {a.action} needs a DR workload (kind = \"dr\")")
            move(str(a.action), self.ctx)

    def _migrate(self) -> None:
        """The live migration to KRaft; each step is a window in the history (``roll`` of a node, or ``migration``),
        so the checkers measure every partition's unavailability during each roll. A failed step is recorded and
        the run goes on to its checks: the scenario's expectations say the migration did not complete."""
        from failsafe.cluster.migration import MigrationFailed, migrate

        ids: dict[int, int] = {}

        def started(step: Any) -> None:
            fault_id = ids[id(step)] = next(self._fault_ids)
            node = step.node
            self.recorder.record({"process": "nemesis", "type": "info", "f": "fault-start", "fault_id": fault_id,
                                  "fault": step.kind,
                                  "target": node.role if node is not None else "quorum",
                                  "nodes": [node.node_id] if node is not None else [], "role": f"{step.name}: {step.description}"})
            self.event(f"migration: {step.description}")

        def done(step: Any, ok: bool, error: str | None) -> None:
            self.recorder.record({"process": "nemesis", "type": "info", "f": "fault-stop", "fault_id": ids[id(step)],
                                  "ok": ok, "attempt": 1, **({"error": error} if error else {})})

        try:
            migrate(self.cluster, lambda message: self.status(f"{self.scenario.name} · migration · {message}"), started, done)
        except MigrationFailed as e:
            self.event(f"migration failed: {e}")


def _nodes(applied: AppliedFault) -> str:
    return ", ".join(map(str, applied.nodes))


def require_whole(cluster: WholeCluster, after: str) -> None:
    """Raise ClusterNotWhole, naming every node that is not up, when a scenario left the cluster broken."""
    problems = cluster.not_whole()
    if problems:
        raise ClusterNotWhole(f"the cluster is not whole after {after}: {'; '.join(problems)}. The next scenario cannot run on it: "
                              f"see the run's history for the failed undo, then start the node ('failsafe broker start ID') "
                              f"or stop the cluster ('failsafe down')")


def run_scenario(engine: Engine) -> RunDir:
    """Run one scenario on a ready cluster; returns its run directory with history.jsonl (checking is separate)."""
    try:
        engine.run()
    finally:
        engine.close()
    return engine.run_dir
