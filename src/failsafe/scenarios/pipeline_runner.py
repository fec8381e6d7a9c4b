"""Runs a pipeline scenario: simulator and Spark pipeline as child processes, faults, drain, verify.

Phases: setup (fresh demo topics, the catalogue, the pipeline up to its first batch), warm-up and
chaos (the simulator writes at a fixed rate; faults start and are undone on schedule), heal,
drain (the simulator has stopped; wait until both queries have read to the log end), check (the
sink against the ledger, and whether the queries ever stopped). Faults, phases and topology go to
history.jsonl as in the lab.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka import TopicPartition
from confluent_kafka.admin import OffsetSpec

from failsafe.clients.admin import new_admin
from failsafe.cluster.lifecycle import Cluster
from failsafe.faults.process import ProcessFault, apply_node_fault, choose_brokers
from failsafe.history.recorder import Recorder
from failsafe.pipeline.progress import latest_by_query
from failsafe.scenarios import setup
from failsafe.scenarios.child import ChildCommand
from failsafe.scenarios.observe import TopologySampler
from failsafe.scenarios.pipeline_schema import PURCHASES_PARTITIONS, PURCHASES_TOPIC, PipelineScenario
from failsafe.scenarios.rundir import RunDir
from failsafe.scenarios.schema import FaultSpec, TopicSpec
from failsafe.waiting import WaitTimeout
from failsafe.workloads.sales.run import publish_products

DEMO_TOPICS = (
    TopicSpec("demo.products", 6, 3, {"cleanup.policy": "compact"}),
    TopicSpec(PURCHASES_TOPIC, PURCHASES_PARTITIONS, 3),
    TopicSpec("demo.inventories", 6, 3),
    TopicSpec("demo.sales-by-product", 6, 3),
)
CATALOGUE_TIMEOUT_S = 60.0
TICK_S = 0.2
PIPELINE_RESULTS = "pipeline-results.json"

Status = Callable[[str], None]


@dataclass
class PipelineFacts:
    starts: int = 0
    planned_kills: int = 0
    unexpected_exits: list[dict] = field(default_factory=list)
    drained: bool = False
    drain_s: float | None = None
    simulator_exit: int | None = None


class PipelineRun:
    def __init__(self, scenario: PipelineScenario, cluster: Cluster, run_dir: RunDir, status: Status, event: Status) -> None:
        self.scenario = scenario
        self.cluster = cluster
        self.bootstrap = cluster.bootstrap_servers
        self.run_dir = run_dir
        self.status = status
        self.event = event
        self.recorder = Recorder(run_dir.history_path)
        self.sampler = TopologySampler(self.bootstrap, [PURCHASES_TOPIC], self.recorder)
        self.output = run_dir.path / "output"
        self.checkpoint = run_dir.path / "checkpoint"
        self.ledger = run_dir.path / "ledger"
        self.pipeline: ChildCommand | None = None
        self.simulator: ChildCommand | None = None
        self.facts = PipelineFacts()
        self.applied: list[tuple[int, FaultSpec, ProcessFault | None, bool]] = []
        self._phase = "setup"
        self._phase_started = time.monotonic()
        self._driver_down = False  # True while a kill-driver fault holds the pipeline down on purpose

    # -- progress -------------------------------------------------------------------------------
    def _enter(self, phase: str) -> None:
        self._phase = phase
        self._phase_started = time.monotonic()
        self.recorder.record({"process": "runner", "type": "info", "f": "phase", "phase": phase})
        self.event(phase)

    def _refresh(self) -> None:
        progress = self._latest_progress().get("sales-by-product", {})
        self.status(f"{self.scenario.name} · {self._phase} {time.monotonic() - self._phase_started:4.1f}s · "
                    f"pipeline batch {progress.get('batch_id', '-')} · read up to {self._read_total(progress)}")

    def _tick(self) -> None:
        """Notice a pipeline that died when nobody killed it."""
        if self.pipeline is not None and not self.pipeline.running() and not self._driver_down:
            exit_code = self.pipeline.exit_code()
            self.facts.unexpected_exits.append({"exit_code": exit_code, "phase": self._phase, "log": self.pipeline.log_tail()})
            self.recorder.record({"process": "pipeline", "type": "info", "f": "pipeline-exit", "exit_code": exit_code})
            self.event(f"the pipeline exited by itself (exit {exit_code}): {self.pipeline.log_tail(1)}")
            self.pipeline = None
        self._refresh()

    def _wait(self, condition: Callable[[], bool], timeout_s: float, message: str) -> None:
        deadline = time.monotonic() + timeout_s
        while not condition():
            if time.monotonic() > deadline:
                raise WaitTimeout(message)
            self._tick()
            time.sleep(TICK_S)  # paces the check of an external condition

    def _hold_until(self, end: float) -> None:
        while time.monotonic() < end:
            self._tick()
            time.sleep(min(TICK_S, max(0.0, end - time.monotonic())))

    # -- the phases -----------------------------------------------------------------------------
    def run(self) -> None:
        s = self.scenario
        self._enter("setup")
        setup.fresh_topics(self.bootstrap, DEMO_TOPICS, [])
        self.run_dir.write_manifest(self.cluster, s)
        self.sampler.start()
        self._publish_catalogue()
        self._start_pipeline()
        # Spark runs batch 0 of each query at once, even on an empty topic: its progress says the query is up.
        self._wait(lambda: {"sales-by-product", "dead-letters"} <= set(self._latest_progress()), s.pipeline.start_timeout_s,
                   f"the pipeline finished no micro-batch within {s.pipeline.start_timeout_s:g}s (see {self.run_dir.path / 'pipeline.log'})")
        self._enter("warm-up")
        self.simulator = ChildCommand("simulator", [
            "simulate", "sales", "--bootstrap-server", self.bootstrap, "--rate", f"{s.simulator.rate_per_s:g}",
            "--duration", f"{s.simulated_s:g}", "--seed", str(s.simulator.seed), "--instances", str(s.simulator.instances),
            "--malformed-every", str(s.simulator.malformed_every), "--ledger", str(self.ledger)],
            self.run_dir.path / "simulator.log").start()
        started = time.monotonic()
        self._hold_until(started + s.phases.warmup_s)
        try:
            self._chaos(started + s.phases.warmup_s)
        finally:
            self._heal()
        self._drain()

    def _publish_catalogue(self) -> None:
        """The pipeline reads the catalogue once at start, so it must be on demo.products before."""
        publish_products(self.bootstrap, "demo.products", CATALOGUE_TIMEOUT_S)

    def _start_pipeline(self) -> None:
        s = self.scenario
        self.facts.starts += 1
        self.recorder.record({"process": "pipeline", "type": "info", "f": "pipeline-start", "start": self.facts.starts})
        self.pipeline = ChildCommand("pipeline", [
            "pipeline", "run", "--bootstrap-server", self.bootstrap, "--output", str(self.output), "--checkpoint", str(self.checkpoint),
            "--trigger-s", f"{s.pipeline.trigger_s:g}", "--watermark", s.pipeline.watermark], self.run_dir.path / "pipeline.log").start()
        self._driver_down = False

    def _chaos(self, start: float) -> None:
        self._enter("chaos")
        events: list[tuple[float, int, Callable[[], None]]] = []
        for f in self.scenario.faults:
            events.append((f.at_s, 0, lambda f=f: self._start_fault(f)))
            assert f.duration_s is not None
            events.append((f.at_s + f.duration_s, 1, lambda f=f: self._undo(f)))
        for at_s, _, action in sorted(events, key=lambda e: (e[0], e[1])):
            self._hold_until(start + at_s)
            action()
        assert self.simulator is not None
        self._wait(lambda: not self.simulator.running(), self.scenario.phases.chaos_s + 120,
                   "the simulator did not finish its run")
        self.facts.simulator_exit = self.simulator.exit_code()

    def _start_fault(self, f: FaultSpec) -> None:
        fault_id = len(self.applied) + 1
        record = {"process": "nemesis", "type": "info", "f": "fault-start", "fault_id": fault_id, "fault": f.fault}
        if f.fault == "kill-driver":
            assert self.pipeline is not None
            self.recorder.record({**record, "target": "pipeline", "nodes": [self.pipeline.pid], "role": "spark driver"})
            self.event(f"kill-driver: SIGKILL the pipeline's process group {self.pipeline.pid}")
            self._driver_down = True
            self.facts.planned_kills += 1
            self.pipeline.kill_group()
            self.applied.append((fault_id, f, None, False))
            return
        partition = None
        if f.partition:
            number = int(f.partition.rpartition("-")[2])
            latest = self.sampler.sample() or self.sampler.latest
            partition = next((p for p in latest if p["topic"] == PURCHASES_TOPIC and p["partition"] == number), None)
        nodes, role = choose_brokers(self.cluster, f.role, partition, f.node)
        self.recorder.record({**record, "target": "broker", "nodes": [n.node_id for n in nodes], "role": role})
        self.event(f"{f.fault} broker {', '.join(str(n.node_id) for n in nodes)} ({role})")
        self.applied.append((fault_id, f, apply_node_fault(self.cluster, f.fault, nodes, role), False))

    def _undo(self, spec: FaultSpec) -> None:
        for i, (fault_id, f, applied, undone) in enumerate(self.applied):
            if f is not spec or undone:
                continue
            self.applied[i] = (fault_id, f, applied, True)
            stop = {"process": "nemesis", "type": "info", "f": "fault-stop", "fault_id": fault_id, "fault": f.fault}
            try:
                if applied is None:
                    self.event("restart the pipeline from its checkpoint")
                    self._start_pipeline()
                else:
                    self.event(f"undo {f.fault} of broker {', '.join(map(str, applied.nodes))}")
                    applied.undo()
            except Exception as e:
                self.recorder.record({**stop, "ok": False, "error": f"{type(e).__name__}: {e}"})
                self.event(f"undo failed: {e}")
                continue
            self.recorder.record({**stop, "ok": True})

    def _heal(self) -> None:
        self._enter("heal")
        for _, f, _, undone in list(self.applied):
            if not undone:
                self._undo(f)

    def _drain(self) -> None:
        self._enter("drain")
        ends = log_end_offsets(self.bootstrap, PURCHASES_TOPIC, PURCHASES_PARTITIONS)
        started = time.monotonic()

        def caught_up() -> bool:
            latest = self._latest_progress()
            return all(_covers(latest.get(q, {}).get("end_offsets"), ends) for q in ("sales-by-product", "dead-letters"))

        try:
            self._wait(lambda: self.pipeline is None or caught_up(), self.scenario.phases.drain_timeout_s, "")
            self.facts.drained = self.pipeline is not None
            self.facts.drain_s = round(time.monotonic() - started, 2)
        except WaitTimeout:
            self.event(f"drain: the pipeline had not read to the log end after {self.scenario.phases.drain_timeout_s:g}s")
        self.recorder.record({"process": "pipeline", "type": "info", "f": "drained", "ok": self.facts.drained,
                              "log_end": {str(p): end for p, end in ends.items()}})

    def close(self) -> None:
        """Whatever happened: children stopped, faults undone, sampler and history closed."""
        try:
            for child in (self.simulator, self.pipeline):
                if child is not None:
                    child.stop()
        finally:
            try:
                for _, _, applied, undone in self.applied:
                    if applied is not None and not undone:
                        applied.undo()
            finally:
                self.sampler.stop()
                self.recorder.close()

    # -- observations ---------------------------------------------------------------------------
    def _latest_progress(self) -> dict[str, dict]:
        return latest_by_query(self.output)

    @staticmethod
    def _read_total(progress: dict) -> int:
        offsets = (progress.get("end_offsets") or {}).get(PURCHASES_TOPIC, {})
        return sum(int(v) for v in offsets.values())


def _covers(end_offsets: dict | None, log_end: dict[int, int]) -> bool:
    if not end_offsets:
        return all(end == 0 for end in log_end.values())
    read = {int(p): int(o) for p, o in end_offsets.get(PURCHASES_TOPIC, {}).items()}
    return all(read.get(p, 0) >= end for p, end in log_end.items())


def log_end_offsets(bootstrap_servers: str, topic: str, partitions: int) -> dict[int, int]:
    admin = new_admin(bootstrap_servers)
    futures = admin.list_offsets({TopicPartition(topic, p): OffsetSpec.latest() for p in range(partitions)}, request_timeout=30)
    return {tp.partition: future.result(timeout=35).offset for tp, future in futures.items()}


def run_pipeline_scenario(scenario: PipelineScenario, cluster: Cluster, runs_root: Path, status: Status, event: Status) -> tuple[RunDir, PipelineFacts]:
    run_dir = RunDir.create(runs_root, scenario)
    run = PipelineRun(scenario, cluster, run_dir, status, event)
    try:
        run.run()
        if run.pipeline is not None:
            event("stopping the pipeline")
            code = run.pipeline.stop()
            run.recorder.record({"process": "pipeline", "type": "info", "f": "pipeline-stop", "exit_code": code})
            run.pipeline = None
    finally:
        run.close()
    (run_dir.path / PIPELINE_RESULTS).write_text(json.dumps(vars(run.facts), indent=2, default=str) + "\n")
    return run_dir, run.facts
