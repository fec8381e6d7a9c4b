"""The one place that composes cluster, workloads, faults, history and checkers into a scenario run.

Fixed phases: setup, warm-up, chaos, heal (every fault's undo always runs), recover, drain, check,
report. Every phase waits on what it can observe (assignments, acknowledgements, the topology,
offsets read), with a timeout; the only timed holds are the phase durations the scenario asks for.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from failsafe.clients.admin import new_admin
from failsafe.cluster.lifecycle import Cluster
from failsafe.cluster.process import pdeathsig_kill
from failsafe.faults.process import ProcessFault, apply_node_fault, choose_brokers, lose_quorum
from failsafe.history.recorder import Recorder
from failsafe.scenarios import setup
from failsafe.scenarios.observe import TopologySampler, read_log
from failsafe.scenarios.rundir import RunDir
from failsafe.scenarios.schema import ActionSpec, FaultSpec, Scenario
from failsafe.scenarios.workers import WorkerPool
from failsafe.waiting import WaitTimeout
from failsafe.workloads.specs import ConsumerSpec, ProducerSpec
from failsafe.workloads.verifiable import VerifiableConsumerSpec, VerifiableProducerSpec

ASSIGN_TIMEOUT_S = 60.0
FIRST_ACK_TIMEOUT_S = 60.0
TICK_S = 0.1

Status = Callable[[str], None]


class ScenarioFailed(RuntimeError):
    """The run could not be carried out (not: the cluster misbehaved, which the checkers report)."""


@dataclass
class _ActiveFault:
    fault_id: int
    spec: FaultSpec
    applied: ProcessFault | None  # None for consumer faults, which have nothing to undo


class ScenarioRun:
    def __init__(self, scenario: Scenario, cluster: Cluster, run_dir: RunDir, status: Status, event: Status) -> None:
        self.scenario = scenario
        self.cluster = cluster
        self.bootstrap = cluster.bootstrap_servers
        self.run_dir = run_dir
        self.status = status
        self.event = event
        self.recorder = Recorder(run_dir.history_path)
        self.pool = WorkerPool(self.recorder, preexec_fn=pdeathsig_kill)
        self.sampler = TopologySampler(self.bootstrap, [t.name for t in scenario.topics], self.recorder)
        self.faults: list[_ActiveFault] = []
        self._fault_ids = itertools.count(1)
        self._phase = "setup"
        self._phase_started = time.monotonic()
        self._started = time.monotonic()

    # -- progress -------------------------------------------------------------------------------
    def _enter(self, phase: str) -> None:
        self._phase = phase
        self._phase_started = time.monotonic()
        self.recorder.record({"process": "runner", "type": "info", "f": "phase", "phase": phase})
        self.event(f"{phase}")
        self._refresh()

    def _refresh(self) -> None:
        c = self.pool.counters
        self.status(f"{self.scenario.name} · {self._phase} {time.monotonic() - self._phase_started:4.1f}s · "
                    f"sent {c.sends} · acked {c.acked} · failed {c.failed} · unknown {c.unknown} · read {c.records_read} · "
                    f"faults active {sum(1 for f in self.faults if f.applied is None or not f.applied.undone)}")

    def _wait(self, condition: Callable[[], bool], timeout_s: float, message: str) -> None:
        deadline = time.monotonic() + timeout_s
        while not condition():
            self.pool.check_alive(self.pool.producers())
            if time.monotonic() > deadline:
                raise WaitTimeout(message)
            self._refresh()
            # Pacing the check of an external condition, not a synchronising sleep.
            time.sleep(TICK_S)

    def _hold(self, seconds: float, until: float | None = None) -> None:
        """Let the workload run for a duration the scenario asks for."""
        end = until if until is not None else time.monotonic() + seconds
        while time.monotonic() < end:
            self.pool.check_alive(self.pool.producers())
            self._refresh()
            time.sleep(min(TICK_S, max(0.0, end - time.monotonic())))

    # -- the phases -----------------------------------------------------------------------------
    def run(self) -> None:
        s = self.scenario
        try:
            self._enter("setup")
            groups = sorted({c.group for c in s.consumers if c.group})
            setup.fresh_topics(self.bootstrap, s.topics, groups)
            self.run_dir.write_manifest(self.cluster, s)
            self.sampler.start()
            self._warm_up()
            self._chaos()
        finally:
            self._heal()
        self._recover()
        self._drain()

    def close(self) -> None:
        """Whatever happened: workers stopped, faults undone, sampler stopped, history closed."""
        try:
            self.pool.stop_all()
        finally:
            try:
                self._heal(record_phase=False)
            finally:
                self.sampler.stop()
                self.recorder.close()

    def _warm_up(self) -> None:
        s = self.scenario
        self._enter("warm-up")
        for c in s.consumers:
            for i in range(c.count):
                spec = ConsumerSpec(process=f"{c.name}-{i}", topics=c.topics, bootstrap_servers=self.bootstrap, group=c.group,
                                    session_timeout_ms=c.session_timeout_ms, properties=c.properties)
                if c.driver == "kafka-verifiable":
                    spec = VerifiableConsumerSpec(**vars(spec), kafka_version=self.cluster.spec.kafka_version)
                self.pool.start(spec)
        partitions = {t.name: t.partitions for t in s.topics}

        def every_group_assigned() -> bool:
            self.pool.check_alive(self.pool.consumers())
            by_group = self.pool.assigned_by_group()
            for c in s.consumers:
                want = {(t, p) for t in c.topics for p in range(partitions[t])}
                if c.group is not None and not want <= by_group.get(c.group, set()):
                    return False
                if c.group is None and any(not want <= w.assigned for w in self.pool.consumers() if w.group is None):
                    return False
            return True

        self._wait(every_group_assigned, ASSIGN_TIMEOUT_S, f"consumer groups did not get every partition assigned within {ASSIGN_TIMEOUT_S:g}s")
        for p in s.producers:
            for i in range(p.count):
                producer = ProducerSpec(
                    process=f"{p.name}-{i}" if p.count > 1 else p.name, topic=p.topic, bootstrap_servers=self.bootstrap,
                    rate_per_s=p.rate_per_s, keys=p.keys, acks=p.acks, idempotence=p.idempotence, retries=p.retries,
                    linger_ms=p.linger_ms, delivery_timeout_ms=p.delivery_timeout_ms, record_size=p.record_size,
                    properties=p.properties)
                if p.driver == "kafka-verifiable":
                    producer = VerifiableProducerSpec(**vars(producer), kafka_version=self.cluster.spec.kafka_version)
                self.pool.start(producer)
        self._wait(lambda: all(w.acked > 0 for w in self.pool.producers()), FIRST_ACK_TIMEOUT_S,
                   f"a producer had no write acknowledged within {FIRST_ACK_TIMEOUT_S:g}s")
        self._hold(s.phases.warmup_s)

    def _chaos(self) -> None:
        s = self.scenario
        self._enter("chaos")
        start = time.monotonic()
        events: list[tuple[float, int, Callable[[], None]]] = []
        for f in s.faults:
            events.append((f.at_s, 0, lambda f=f: self._start_fault(f)))
            if f.duration_s is not None:
                events.append((f.at_s + f.duration_s, 1, lambda f=f: self._undo_fault_of(f)))
        for a in s.actions:
            if a.phase == "chaos":
                events.append((a.at_s, 2, lambda a=a: self._action(a)))
        for at_s, _, run in sorted(events, key=lambda e: (e[0], e[1])):
            self._hold(0, until=start + at_s)
            run()
        self._hold(0, until=start + s.phases.chaos_s)

    def _heal(self, record_phase: bool = True) -> None:
        pending = [f for f in self.faults if f.applied is not None and not f.applied.undone]
        if record_phase:
            self._enter("heal")
        for f in reversed(pending):
            self._undo(f)

    def _recover(self) -> None:
        s = self.scenario
        self._enter("recover")

        def whole() -> bool:
            latest = self.sampler.latest
            return bool(latest) and all(p["leader"] >= 0 and len(p["isr"]) == len(p["replicas"]) for p in latest)

        try:
            self._wait(whole, s.phases.recover_timeout_s, "")
        except WaitTimeout:
            self.event(f"recover: partitions still without a leader or a full ISR after {s.phases.recover_timeout_s:g}s")
            self.recorder.record({"process": "runner", "type": "info", "f": "recover-timeout", "timeout_s": s.phases.recover_timeout_s})
        for a in s.actions:
            if a.phase == "recover":
                self._action(a)
        self._hold(s.phases.recover_s)

    def _drain(self) -> None:
        s = self.scenario
        self._enter("drain")
        self.pool.stop(self.pool.producers())
        admin = new_admin(self.bootstrap)
        ends = _log_end_offsets(admin, self.sampler.latest)

        def caught_up() -> bool:
            read = self.pool.read_upto_by_group()
            for c in s.consumers:
                keys = [c.group] if c.group else [f"{c.name}-{i}" for i in range(c.count)]
                for key in keys:
                    upto = read.get(key, {})
                    if any(upto.get(tp, -1) < end - 1 for tp, end in ends.items() if tp[0] in c.topics and end > 0):
                        return False
            return True

        try:
            self._wait(lambda: not self.pool.live_consumers() or caught_up(), s.phases.drain_timeout_s, "")
        except WaitTimeout:
            self.event(f"drain: consumers had not read up to the log end after {s.phases.drain_timeout_s:g}s")
        self.pool.stop(self.pool.consumers())
        self.event("reading every partition from the beginning")
        read_log(self.bootstrap, sorted(ends), self.recorder)

    # -- faults and actions ---------------------------------------------------------------------
    def _start_fault(self, f: FaultSpec) -> None:
        fault_id = next(self._fault_ids)
        record = {"process": "nemesis", "type": "info", "f": "fault-start", "fault_id": fault_id, "fault": f.fault}
        if f.fault in ("kill-consumer", "close-consumer"):
            assert f.consumer is not None
            self.recorder.record({**record, "target": "consumer", "nodes": [f.consumer], "role": "consumer"})
            self.event(f"{f.fault} {f.consumer}")
            if f.fault == "kill-consumer":
                self.pool.kill(f.consumer)
            else:
                self.pool.stop([self.pool.workers[f.consumer]])
            self.faults.append(_ActiveFault(fault_id, f, None))
            return
        if f.fault == "quorum-loss":
            self.recorder.record({**record, "target": "quorum", "nodes": [n.node_id for n in self.cluster.spec.controller_nodes()],
                                  "role": "all controllers"})
            self.event("quorum-loss: stopping every controller")
            applied = lose_quorum(self.cluster)
        else:
            partition = self._partition(f.partition) if f.partition else None
            nodes, role = choose_brokers(self.cluster, f.role, partition, f.node)
            self.recorder.record({**record, "target": "broker", "nodes": [n.node_id for n in nodes], "role": role})
            self.event(f"{f.fault} broker {', '.join(str(n.node_id) for n in nodes)} ({role})")
            applied = apply_node_fault(self.cluster, f.fault, nodes, role)
        self.faults.append(_ActiveFault(fault_id, f, applied))

    def _partition(self, name: str) -> dict | None:
        topic, _, number = name.rpartition("-")
        latest = self.sampler.sample() or self.sampler.latest
        return next((p for p in latest if p["topic"] == topic and p["partition"] == int(number)), None)

    def _undo_fault_of(self, spec: FaultSpec) -> None:
        for f in self.faults:
            if f.spec is spec and f.applied is not None and not f.applied.undone:
                self._undo(f)

    def _undo(self, f: _ActiveFault) -> None:
        assert f.applied is not None
        self.event(f"undo {f.spec.fault} of {f.applied.target} {', '.join(map(str, f.applied.nodes))}")
        stop = {"process": "nemesis", "type": "info", "f": "fault-stop", "fault_id": f.fault_id, "fault": f.spec.fault}
        try:
            f.applied.undo()
        except Exception as e:
            # The run goes on to check and report; the failed undo is in the history and on screen.
            self.recorder.record({**stop, "ok": False, "error": f"{type(e).__name__}: {e}"})
            self.event(f"undo failed: {e}")
            return
        self.recorder.record({**stop, "ok": True})

    def _action(self, a: ActionSpec) -> None:
        if a.action == "elect-leaders":
            self.event("preferred leader election")
            setup.elect_leaders(self.bootstrap, self.recorder)
        elif a.action == "create-topic":
            topic = a.topic or f"{self.scenario.name}-created"
            outcome = setup.attempt_create_topic(self.bootstrap, topic, self.recorder)
            self.event(f"create topic {topic}: {outcome}")


def _log_end_offsets(admin: AdminClient, partitions: list[dict]) -> dict[tuple[str, int], int]:
    tps = {TopicPartition(p["topic"], p["partition"]): OffsetSpec.latest() for p in partitions}
    if not tps:
        return {}
    futures = admin.list_offsets(tps, request_timeout=30)
    return {(tp.topic, tp.partition): future.result(timeout=35).offset for tp, future in futures.items()}


def run_scenario(scenario: Scenario, cluster: Cluster, runs_root: Path, status: Status, event: Status) -> RunDir:
    """Run one scenario on a ready cluster; returns its run directory with history.jsonl (checking is separate)."""
    run_dir = RunDir.create(runs_root, scenario)
    run = ScenarioRun(scenario, cluster, run_dir, status, event)
    try:
        run.run()
    finally:
        run.close()
    return run_dir
