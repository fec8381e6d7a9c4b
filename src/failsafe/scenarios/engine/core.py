"""The one scenario engine: every scenario kind runs through it.

Fixed phases: setup, warm-up, chaos, heal, recover, drain, final-read (checking and the report come
after, from the history alone). Each phase's start (``phase``) and, once it finished, its end
(``phase-end``) are recorded: a run whose history lacks an end is judged UNKNOWN
(checkers/completeness.py). Setup records the clients the scenario declares (``declare``).

The engine owns the fault schedule, the recording of every fault's start and every attempt to undo
it, the waits, and the heal; a workload plug-in (scenarios/engine/plugin.py) owns its clients, and fault
plug-ins (failsafe.faults) act on the cluster or on those clients.

The heal always runs, on success, on error and on Ctrl-C. An undo is marked done only when it
worked; a failed one is recorded (``fault-stop`` with ``ok: false``) and tried again, up to
HEAL_ATTEMPTS times in the heal and once more when the run closes. ``require_whole`` is the check
between scenarios: a node still down after a failed heal stops a seed lab with one line that
names it, instead of a timeout in the next scenario.
"""

from __future__ import annotations

import heapq
import itertools
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from failsafe.cluster.profiles import LIBRARIES, Profile
from failsafe.cluster.site import Leash, RunSite
from failsafe.errors import ClusterNotWhole, FailsafeError, ScenarioFailed
from failsafe.faults import FAULT_TYPES, AppliedFault, FaultError, FaultSpec, FaultTargets, FaultType
from failsafe.history.ops import Family, Op, PhaseName, declare, fault_start, fault_stop, phase_end
from failsafe.history.ops import event as event_op
from failsafe.history.ops import phase as phase_op
from failsafe.history.recorder import Recorder
from failsafe.scenarios.base import ActionSpec, Scenario
from failsafe.scenarios.engine.actions import ActionContext, ActionType, Background
from failsafe.scenarios.engine.plugin import RunContext, Status, Workload
from failsafe.scenarios.engine.undo_lanes import UndoLanes
from failsafe.scenarios.observers.controller_watch import ControllerWatch
from failsafe.scenarios.observers.metrics_watch import MetricsWatch
from failsafe.scenarios.observers.node_events import log_offsets, record_node_events
from failsafe.scenarios.observers.observe import TopologySampler
from failsafe.scenarios.observers.operator_feed import OperatorFeed
from failsafe.scenarios.store.rundir import RunDir
from failsafe.supervisor import Supervisor
from failsafe.waiting import WaitTimeout
from failsafe.workloads.client_defaults import ClientDefaults

HEAL_ATTEMPTS = 3
TICK_S = 0.1
# How long the chaos phase waits for actions' background work (each bounds its own waits well below this) and how
# long a closing run waits for each once told to stop.
BACKGROUND_TIMEOUT_S = 900.0
BACKGROUND_STOP_S = 10.0
# What an undo may fail with and still be tried again: anything else is a bug and propagates.
UNDO_ERRORS = (FailsafeError, WaitTimeout, OSError, subprocess.TimeoutExpired)
Phase = PhaseName


class Sampler(Protocol):
    latest: list[dict]

    def start(self) -> Any: ...

    def sample(self) -> list[dict] | None: ...

    def find(self, name: str) -> dict | None: ...

    def stop(self) -> None: ...


@dataclass
class ActiveFault:
    fault_id: int
    spec: FaultSpec
    applied: AppliedFault


@dataclass(frozen=True)
class RunSettings:
    """How one run is carried out, beside its scenario, workload, run directory and site: the Kafka version its clients
    take their jars of, the manifest's facts, where progress goes, every cluster's bootstrap by alias (a DR pair's), the
    actions its kind declares (scenarios/engine/actions.py and the kind's own: the engine knows none by name), the fault
    types, and the topology sampler (tests hand a fake)."""

    kafka_version: str
    facts: Mapping[str, Any]
    status: Status
    event: Status
    clusters: Mapping[str, str] = field(default_factory=dict)
    actions: Mapping[str, ActionType] = field(default_factory=dict)
    faults: Mapping[str, FaultType] = field(default_factory=lambda: FAULT_TYPES)
    sampler: Sampler | None = None


class Engine:
    """One run of one scenario on a site (cluster/site.py): ``run()`` then, always, ``close()`` (``run_scenario`` does
    both)."""

    def __init__(
        self, scenario: Scenario, workload: Workload, run_dir: RunDir, cluster: RunSite, settings: RunSettings
    ) -> None:
        self.scenario = scenario
        self.actions: Mapping[str, ActionType] = settings.actions
        self.workload = workload
        self.run_dir = run_dir
        self.cluster = cluster
        self.cluster_facts = settings.facts
        self.status = settings.status
        self.event = event = settings.event
        self.fault_types = settings.faults
        sampler = settings.sampler
        self.recorder = Recorder(run_dir.history_path)
        self.supervisor = Supervisor()
        self.sampler: Sampler = sampler or TopologySampler(
            cluster.bootstrap_servers, workload.sampled_topics, self.recorder
        )
        self.controller_watch = ControllerWatch(cluster, self.recorder)
        self.metrics_watch = MetricsWatch.for_cluster(cluster, self.recorder)
        self.faults: list[ActiveFault] = []
        self.background = Background(event)
        # Scheduled undos run beside the schedule (a restart waiting for its broker must not delay the next fault).
        self._lanes = UndoLanes()
        self._fault_ids = itertools.count(1)
        self._phase = Phase.SETUP
        self._phase_started = time.monotonic()
        self._started_ns = time.time_ns()
        self._log_offsets: dict[Path, int] = {}
        # Wall seconds per phase (and "close": stopping children, the last undo), for "where the time goes".
        self.phase_seconds: dict[str, float] = {}
        # The cluster's profile (cluster/profiles.py): its topic and client settings go to what the workload makes and
        # starts.
        self.profile = profile = cluster.profile
        self.ctx = RunContext(
            bootstrap_servers=cluster.bootstrap_servers,
            kafka_version=settings.kafka_version,
            recorder=self.recorder,
            run_path=run_dir.path,
            supervisor=self.supervisor,
            event=event,
            wait=self.wait,
            hold=self.hold,
            topology=lambda: self.sampler.latest,
            clusters=dict(settings.clusters),
            client_host=cluster.client_host,
            **profile_context(profile),
        )
        self._network_leash: Leash | None = None
        self.targets = FaultTargets(
            cluster=cluster, clients=workload, partition=self._partition, network_leash=self._leash
        )
        # Kills and pauses done by hand (CLI or console) while the scenario runs: faults in its history too.
        journal = cluster.journal
        self.operator = OperatorFeed(journal, cluster, self.recorder, self._fault_ids) if journal else None

    # -- progress and waiting -------------------------------------------------------------------
    def _close_phase(self) -> None:
        now = time.monotonic()
        self.phase_seconds[str(self._phase)] = self.phase_seconds.get(str(self._phase), 0.0) + now - self._phase_started
        self._phase_started = now

    def _enter(self, phase: Phase) -> None:
        self._close_phase()
        self._phase = phase
        self.recorder.record(phase_op(phase))
        self.event(str(phase))
        self._refresh()

    def _finish(self, phase: Phase) -> None:
        """The phase's work is done: only then is its end recorded."""
        self.recorder.record(phase_end(phase))

    def _refresh(self) -> None:
        active = sum(1 for f in self.faults if not f.applied.undone)
        self.status(
            f"{self.scenario.name} · {self._phase} {time.monotonic() - self._phase_started:4.1f}s · "
            f"{self.workload.progress()} · faults active {active}"
        )

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
        self._started_ns = time.time_ns()
        self._log_offsets = log_offsets(self.cluster)
        try:
            self._enter(Phase.SETUP)
            self.recorder.record(declare(self.scenario.declared_clients()))
            if self.profile is not None and (self.profile.broker or self.ctx.topic_configs or self.ctx.client_defaults):
                self.event(f"profile {self.profile.label}: its topic and client settings under the scenario's own")
            self.run_dir.write_manifest(self.cluster_facts, self.scenario)
            self.sampler.start()
            self.controller_watch.start()
            self.metrics_watch.start()
            self.workload.setup(self.ctx)
            self._finish(Phase.SETUP)
            self._enter(Phase.WARM_UP)
            self.workload.start(self.ctx)
            self.hold(phases.warmup_s)
            self._finish(Phase.WARM_UP)
            self._chaos()
        finally:
            self._heal()
        self._recover()
        self._enter(Phase.DRAIN)
        self.workload.drain(self.ctx)
        self._finish(Phase.DRAIN)
        self._enter(Phase.FINAL_READ)
        self.workload.final_read(self.ctx)
        self._finish(Phase.FINAL_READ)

    def _chaos(self) -> None:
        self._enter(Phase.CHAOS)
        start = time.monotonic()
        # (seconds into chaos, starts before undos before actions, order of entry, what to run): a heap, because a fault
        # that first waits on a condition of its own (AppliedFault.acted_ns) has its undo due duration_s after it acted.
        events: list[tuple[float, int, int, Callable[[], None]]] = []
        order = itertools.count()

        def start_fault(f: FaultSpec) -> None:
            began_s = max(f.at_s, time.monotonic() - start)  # later than at_s when an earlier fault waited
            waited_s = self._start_fault(f)
            if f.duration_s is not None:
                heapq.heappush(
                    events, (began_s + waited_s + f.duration_s, 1, next(order), lambda: self._undo_scheduled(f))
                )

        for f in self.scenario.faults:
            events.append((f.at_s, 0, next(order), lambda f=f: start_fault(f)))
        for a in self.scenario.actions:
            if a.phase == Phase.CHAOS:
                events.append((a.at_s, 2, next(order), lambda a=a: self._action(a)))
        heapq.heapify(events)
        while events:
            at_s, _, _, run = heapq.heappop(events)
            self._hold_until(start + at_s)
            run()
        self._hold_until(start + self.scenario.phases.chaos_s)
        if self.background.running():
            self.status(f"{self.scenario.name} · waiting for {', '.join(self.background.running())}")
            try:
                self.wait(lambda: not self.background.running(), BACKGROUND_TIMEOUT_S, "")
            except WaitTimeout:
                self.event(
                    f"chaos: {', '.join(self.background.running())} still running after {BACKGROUND_TIMEOUT_S:g}s"
                )
        self.workload.end_chaos(self.ctx)
        self._finish(Phase.CHAOS)

    def _heal(self) -> None:
        self._enter(Phase.HEAL)
        self._settle_lanes()
        if self.operator is not None:
            self.operator.read(self._operator_fault)
        for _ in range(HEAL_ATTEMPTS):
            pending = [f for f in reversed(self.faults) if not f.applied.undone]
            if not pending:
                break
            for f in pending:
                self._undo(f)
        left = [f for f in self.faults if not f.applied.undone]
        if left:
            self.event(
                f"heal: {len(left)} fault(s) could not be undone in {HEAL_ATTEMPTS} attempts: "
                + "; ".join(f"{f.spec.fault} of {_nodes(f.applied)}" for f in left)
            )
        self._finish(Phase.HEAL)

    def _recover(self) -> None:
        phases = self.scenario.phases
        self._enter(Phase.RECOVER)

        def led_and_in_sync() -> bool:
            latest = self.sampler.latest
            return bool(latest) and all(p["leader"] >= 0 and len(p["isr"]) == len(p["replicas"]) for p in latest)

        try:
            self.wait(led_and_in_sync, phases.recover_timeout_s, "")
        except WaitTimeout:
            latest = self.sampler.latest
            leaderless = [f"{p['topic']}-{p['partition']}" for p in latest if p["leader"] < 0]
            short = [
                f"{p['topic']}-{p['partition']}"
                for p in latest
                if p["leader"] >= 0 and len(p["isr"]) < len(p["replicas"])
            ]
            self.event(
                f"recover: partitions still without a leader ({', '.join(leaderless) or 'none'}) or a full ISR "
                f"({', '.join(short) or 'none'}) after {phases.recover_timeout_s:g}s"
            )
            # Which ones, by name: a partition that never recovers is a violation (checkers/liveness.py).
            self.recorder.record(
                {
                    **event_op(Op.RECOVER_TIMEOUT, timeout_s=phases.recover_timeout_s),
                    "leaderless": leaderless,
                    "under_replicated": short,
                }
            )
        for a in self.scenario.actions:
            if a.phase == Phase.RECOVER:
                self._action(a)
        self.hold(phases.recover_s)
        self._finish(Phase.RECOVER)

    def close(self) -> None:
        """Whatever happened: the workload and every child stopped, faults undone, sampler and history closed."""
        self._close_phase()
        left = self.background.stop(BACKGROUND_STOP_S)
        if left:
            self.event(f"could not stop: {', '.join(left)}")
        try:
            self.workload.stop()
        finally:
            try:
                left = self.supervisor.stop_all()
                if left:
                    self.event(f"could not stop: {'; '.join(left)}")
            finally:
                try:
                    self._settle_lanes()
                    for f in reversed(self.faults):
                        if not f.applied.undone:
                            self._undo(f)
                finally:
                    if self._network_leash is not None:
                        self._network_leash.close()
                    self.sampler.stop()
                    self.controller_watch.stop()
                    self.metrics_watch.stop()
                    try:
                        record_node_events(
                            self.cluster, self.recorder, self._started_ns, time.time_ns(), self._log_offsets
                        )
                    except Exception as e:  # noqa: BLE001 - the logs are read after the run: never hide the run's own error
                        self.event(f"could not read the nodes' logs for where the time went: {type(e).__name__}: {e}")
                    finally:
                        self.recorder.close()
                    self.phase_seconds["close"] = time.monotonic() - self._phase_started

    # -- faults and actions ---------------------------------------------------------------------
    def _leash(self) -> Leash:
        """The watchdog that deletes this run's network rules if failsafe dies before the heal (made on first use)."""
        if self._network_leash is None:
            self._network_leash = self.cluster.net_leash(self.run_dir.path / "network-leash.log")
        return self._network_leash

    def _start_fault(self, spec: FaultSpec) -> float:
        """Start a fault; how long it waited on a condition of its own before it acted (seconds; 0 for most)."""
        fault_id = next(self._fault_ids)
        started_ns = time.time_ns()
        fault_type = self.fault_types[spec.fault]
        try:
            applied = fault_type.start(spec, self.targets)
        except FaultError as e:
            if spec.may_fail:
                # Never in force, so no fault-start: an event saying which fault, when, and why not.
                self.recorder.record(
                    event_op(Op.FAULT_NOT_STARTED, time_ns=started_ns, fault=spec.fault, at_s=spec.at_s, error=str(e))
                )
                self.event(f"{spec.fault} at {spec.at_s:g}s could not start (may_fail): {e}")
                return 0.0
            self.recorder.record(
                fault_start(fault_id, spec.fault, family=fault_type.family, error=str(e), time_ns=started_ns)
            )
            raise ScenarioFailed(
                f"{self.scenario.name}: the {spec.fault} fault at {spec.at_s:g}s could not start: {e}"
            ) from e
        self.recorder.record(
            applied_start(fault_id, applied, fault_type.family, applied.acted_ns or started_ns, time.time_ns())
        )
        self.event(f"{spec.fault} {applied.target} {_nodes(applied)} ({applied.role})")
        active = ActiveFault(fault_id, spec, applied)
        self.faults.append(active)
        if applied.undo_action is None:
            self._undo(active)
        elif applied.heals_at_once:
            # A restart's start waits for the broker: beside the schedule, like a scheduled undo.
            self._beside(spec, lambda: self._undo(active))
        return max(0.0, ((applied.acted_ns or started_ns) - started_ns) / 1e9)

    def _undo_scheduled(self, spec: FaultSpec) -> None:
        def undo() -> None:
            for f in self.faults:
                if f.spec is spec and not f.applied.undone:
                    self._undo(f)

        self._beside(spec, undo)

    def _beside(self, spec: FaultSpec, undo: Callable[[], object]) -> None:
        """An undo of the cluster's (a node, a link) on a thread of its own; one of the workload's clients on this
        thread, which drives the workload (a restarted client and the exit of the one it replaces are seen in order)."""
        if self.fault_types[spec.fault].family == Family.CLIENT:
            undo()
        else:
            self._lanes.submit(spec.fault, undo)

    def _settle_lanes(self) -> None:
        """Wait for every scheduled undo still running (each ends within its own timeout), then raise a bug one hit."""
        while self._lanes.busy():
            self._tick()
            # Pacing the check of the undo threads, not a synchronising sleep.
            time.sleep(TICK_S)
        self._lanes.raise_errors()

    def _undo(self, f: ActiveFault) -> bool:
        if f.applied.undo_action is not None:
            self.event(f"undo {f.spec.fault} of {f.applied.target} {_nodes(f.applied)}")
        try:
            f.applied.undo()
        except UNDO_ERRORS as e:
            # Recorded, shown, and tried again by the heal: the run goes on to check and report.
            self.recorder.record(
                fault_stop(f.fault_id, f.spec.fault, False, f.applied.undo_attempts, error=f"{type(e).__name__}: {e}")
            )
            self.event(f"undo of {f.spec.fault} failed (attempt {f.applied.undo_attempts}): {e}")
            return False
        self.recorder.record(
            fault_stop(f.fault_id, f.spec.fault, True, f.applied.undo_attempts, details=f.applied.stop_details)
        )
        return True

    def _partition(self, name: str) -> dict | None:
        topic, _, number = name.rpartition("-")
        latest = self.sampler.sample() or self.sampler.latest
        sampled = next((p for p in latest if p["topic"] == topic and p["partition"] == int(number)), None)
        # A partition of a topic the run does not sample (a coordinator's internal partition): from the same fresh
        # metadata.
        return sampled if sampled is not None else self.sampler.find(name)

    def _action(self, a: ActionSpec) -> None:
        action = self.actions.get(a.action)
        if action is None:
            raise ScenarioFailed(f"{self.scenario.name}: no action {a.action!r} is declared for this kind of scenario")
        action.run(
            a,
            ActionContext(
                self.scenario,
                self.cluster,
                self.workload,
                self.ctx,
                self.status,
                lambda: next(self._fault_ids),
                self.background,
            ),
        )


def profile_context(profile: Profile | None) -> dict[str, Any]:
    """The RunContext fields a cluster profile fills: its topic configs and its clients' settings by library."""
    if profile is None:
        return {}
    return {
        "topic_configs": dict(profile.topic),
        "client_defaults": ClientDefaults(
            producer={lib: profile.client("producer", lib) for lib in LIBRARIES},
            consumer={lib: profile.client("consumer", lib) for lib in LIBRARIES},
        ),
    }


def applied_start(fault_id: int, applied: AppliedFault, family: str, time_ns: int, in_force_ns: int) -> dict:
    """The fault-start op of a fault as it was applied: what it acted on, since when it is in force, and how reports
    draw it."""
    return fault_start(
        fault_id,
        applied.kind,
        target=applied.target,
        nodes=applied.nodes,
        role=applied.role,
        family=family,
        label=applied.label,
        sides=applied.sides,
        one_way=applied.one_way,
        loss=applied.loss,
        details=applied.details,
        in_force_ns=in_force_ns,
        time_ns=time_ns,
    )


def _nodes(applied: AppliedFault) -> str:
    return ", ".join(map(str, applied.nodes))


def require_whole(cluster: RunSite, after: str) -> None:
    """Raise ClusterNotWhole, naming every node that is not up, when a scenario left the cluster broken."""
    problems = cluster.not_whole()
    if problems:
        raise ClusterNotWhole(
            f"the cluster is not whole after {after}: {'; '.join(problems)}. The next scenario cannot run on it: "
            f"see the run's history for the failed undo, then start the node ('failsafe broker start ID') "
            f"or stop the cluster ('failsafe down')"
        )


def run_scenario(engine: Engine) -> RunDir:
    """Run one scenario on a ready cluster; returns its run directory with history.jsonl (checking is separate)."""
    try:
        engine.run()
    finally:
        engine.close()
    return engine.run_dir
