"""Pipeline scenarios: the sales simulator and the Spark pipeline on the cluster, with faults.

A TOML scenario with ``kind = "pipeline"`` is one of these. It is validated completely before
anything starts, with the same field-naming messages as the lab's scenarios.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from failsafe.faults import FaultKind, FaultSpec, Role
from failsafe.scenarios.schema import ActionSpec, ClusterNeeds, ScenarioError, _fail, _positive, _take

PIPELINE_FAULTS = (FaultKind.KILL, FaultKind.TERMINATE, FaultKind.PAUSE, FaultKind.KILL_DRIVER, FaultKind.KILL_SPARK_WORKER)
SPARK_FAULTS = (FaultKind.KILL_DRIVER, FaultKind.KILL_SPARK_WORKER)
# pipeline.master: a Spark standalone cluster of the run's own (master and spark_workers workers in the run directory).
STANDALONE = "standalone"
PIPELINE_ROLES = (Role.LEADER, Role.FOLLOWER, Role.REPLICAS, Role.ANY)
PURCHASES_TOPIC = "demo.purchases"
PURCHASES_PARTITIONS = 6


@dataclass(frozen=True)
class SimulatorSpec:
    rate_per_s: float = 200.0
    seed: int = 3
    malformed_every: int = 0
    instances: int = 1
    clock: str = "wall"  # event time: "wall" (send time) or "accelerated" (a simulated day, ~100x faster at 200/s)


@dataclass(frozen=True)
class PipelineSpec:
    trigger_s: float = 2.0
    watermark: str = "2 minutes"
    start_timeout_s: float = 180.0
    master: str = "local[2]"  # local[N], spark://HOST:PORT, or "standalone"
    spark_workers: int = 2  # with master = "standalone"
    spark_port: int = 7077  # with master = "standalone": the master's port (see pipeline/standalone.py for the others)


@dataclass(frozen=True)
class PipelinePhases:
    warmup_s: float = 5.0  # simulator and pipeline both running, before the first fault
    chaos_s: float = 30.0  # the simulator stops at the end of chaos
    drain_timeout_s: float = 180.0
    recover_s: float = 0.0
    recover_timeout_s: float = 90.0  # every partition of demo.purchases led, with a full ISR, before the drain


@dataclass(frozen=True)
class PipelineScenario:
    name: str
    description: str
    seed: str
    cluster: ClusterNeeds
    simulator: SimulatorSpec
    pipeline: PipelineSpec
    faults: tuple[FaultSpec, ...]
    phases: PipelinePhases
    raw: dict
    kind: ClassVar[str] = "pipeline"
    actions: ClassVar[tuple[ActionSpec, ...]] = ()

    @property
    def simulated_s(self) -> float:
        return self.phases.warmup_s + self.phases.chaos_s


def parse_pipeline_scenario(data: dict) -> PipelineScenario:
    name = data.get("name")
    if not isinstance(name, str) or not name:
        raise ScenarioError("scenario: missing field 'name'")
    top = {"name", "kind", "description", "seed", "cluster", "simulator", "pipeline", "faults", "phases"}
    unknown = sorted(set(data) - top)
    if unknown:
        raise _fail(name, f"unknown field {unknown[0]!r} (known: {', '.join(sorted(top))})")
    scenario = PipelineScenario(
        name=name, description=str(data.get("description", "")), seed=str(data.get("seed", "")),
        cluster=_take(data.get("cluster", {}), f"{name}.cluster", ClusterNeeds, ()),
        simulator=_take(data.get("simulator", {}), f"{name}.simulator", SimulatorSpec, (), {"rate_per_s": _positive}),
        pipeline=_take(data.get("pipeline", {}), f"{name}.pipeline", PipelineSpec, (),
                       {"trigger_s": _positive, "start_timeout_s": _positive}),
        faults=tuple(_take(f, f"{name}.faults[{i}]", FaultSpec, ("fault", "at_s"), {"at_s": _positive, "duration_s": _positive})
                     for i, f in enumerate(data.get("faults", []))),
        phases=_take(data.get("phases", {}), f"{name}.phases", PipelinePhases, (), {k: _positive for k in PipelinePhases.__dataclass_fields__}),
        raw=data,
    )
    _validate(scenario)
    return scenario


def _validate(s: PipelineScenario) -> None:
    if s.cluster.brokers < 3:
        raise _fail(f"{s.name}.cluster.brokers", f"{s.cluster.brokers}: the demo topics have replication factor 3, so 3 brokers at least")
    if s.simulator.rate_per_s <= 0:
        raise _fail(f"{s.name}.simulator.rate_per_s", "a pipeline scenario needs a fixed rate above 0")
    master = s.pipeline.master
    if not (master == STANDALONE or master.startswith(("local", "spark://"))):
        raise _fail(f"{s.name}.pipeline.master", f"{master!r}: use local[N], spark://HOST:PORT or \"standalone\"")
    if master == STANDALONE and not (1 <= s.pipeline.spark_workers <= 8 and 1 <= s.pipeline.spark_port <= 64000):
        raise _fail(f"{s.name}.pipeline", "spark_workers must be 1-8 and spark_port 1-64000")
    if s.simulator.clock not in ("wall", "accelerated"):
        raise _fail(f"{s.name}.simulator.clock", f"{s.simulator.clock!r} is not one of wall, accelerated")
    if s.simulator.instances < 1 or s.simulator.malformed_every < 0:
        raise _fail(f"{s.name}.simulator", "instances must be at least 1 and malformed_every not negative")
    for i, f in enumerate(s.faults):
        at = f"{s.name}.faults[{i}]"
        if f.fault not in PIPELINE_FAULTS:
            raise _fail(f"{at}.fault", f"{f.fault!r} is not one of {', '.join(PIPELINE_FAULTS)}")
        if f.fault == FaultKind.KILL_SPARK_WORKER:
            if s.pipeline.master != STANDALONE:
                raise _fail(f"{at}.fault", f"kill-spark-worker needs pipeline.master = \"standalone\" (a Spark cluster of the run's own), "
                                           f"not {s.pipeline.master!r}")
            if not 0 <= (f.node or 0) < s.pipeline.spark_workers:
                raise _fail(f"{at}.node", f"{f.node} is not a worker of the run's Spark cluster (0-{s.pipeline.spark_workers - 1})")
        if f.fault not in SPARK_FAULTS:
            if f.role not in PIPELINE_ROLES:
                raise _fail(f"{at}.role", f"{f.role!r} is not one of {', '.join(PIPELINE_ROLES)}")
            if f.role != "any" and f.node is None:
                topic, _, number = (f.partition or "").rpartition("-")
                if topic != PURCHASES_TOPIC or not number.isdigit() or int(number) >= PURCHASES_PARTITIONS:
                    raise _fail(f"{at}.partition", f"{f.partition!r} must name a partition of {PURCHASES_TOPIC}, e.g. {PURCHASES_TOPIC}-0")
        if f.at_s > s.phases.chaos_s:
            raise _fail(f"{at}.at_s", f"{f.at_s:g} is after the chaos phase ends ({s.phases.chaos_s:g}s)")
        if f.duration_s is None:
            raise _fail(f"{at}.duration_s", "a pipeline scenario restores every fault it applies: give duration_s")
