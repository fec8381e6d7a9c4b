"""Pipeline scenarios: the sales simulator and the Spark pipeline on the cluster, with faults.

A TOML scenario with ``kind = "pipeline"`` is one of these. It is validated completely before
anything starts, with the same field-naming messages as the lab's scenarios.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from failsafe.faults import Need
from failsafe.faults.clients import DRIVER, spark_worker_name
from failsafe.faults.nodes import TRANSACTIONAL_IDS
from failsafe.pipeline.job import RESULTS_PARTITIONS, RESULTS_TOPIC
from failsafe.pipeline.publish import EXACTLY_ONCE, PUBLISH_MODES
from failsafe.scenarios.base import (
    KindInfo,
    Phases,
    Scenario,
    fail,
    fault_context,
    parse_checks,
    parse_cluster,
    parse_faults,
    parse_phases,
    positive,
    refuse_unknown,
    scenario_name,
    take,
)

# pipeline.master: a Spark standalone cluster of the run's own (master and spark_workers workers in the run directory).
STANDALONE = "standalone"
PURCHASES_TOPIC = "demo.purchases"
PURCHASES_PARTITIONS = 6


def transactional_prefix_of(scenario: str) -> str:
    """The prefix of the pipeline's transactional ids in a scenario: named, so that a fault can name their coordinator
    (``role = "txn-coordinator"``, ``transactional_id = "failsafe-<scenario>-<partition>"``); the workload deletes its
    marker group before the run."""
    return f"failsafe-{scenario}"


TOP = {
    "name",
    "description",
    "seed",
    "cluster",
    "simulator",
    "pipeline",
    "faults",
    "phases",
    "checkers",
    "expect",
    "known",
}


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
    # The enriched purchase stream too, to demo.purchases-enriched in the same Spark session (Spark's Kafka sink, at
    # least once), read back after the run and judged by checkers.enriched.
    enriched: bool = False
    # How the totals reach demo.sales-by-product (pipeline/publish.py): "exactly-once", in Kafka transactions with a
    # marker of each batch; or "at-least-once", Spark's Kafka sink. Judged by checkers.pipeline.published either way.
    publish: str = "exactly-once"


@dataclass(frozen=True)
class PipelinePhases(Phases):
    warmup_s: float = 5.0  # simulator and pipeline both running, before the first fault
    chaos_s: float = 30.0  # the simulator stops at the end of chaos
    recover_s: float = 0.0
    recover_timeout_s: float = 90.0  # every partition of demo.purchases led, with a full ISR, before the drain
    drain_timeout_s: float = 180.0


@dataclass(frozen=True)
class PipelineScenario(Scenario):
    simulator: SimulatorSpec = field(default_factory=SimulatorSpec)
    pipeline: PipelineSpec = field(default_factory=PipelineSpec)

    @property
    def simulated_s(self) -> float:
        return self.phases.warmup_s + self.phases.chaos_s


def parse_pipeline(data: dict, kind: KindInfo) -> PipelineScenario:
    name = scenario_name(data)
    refuse_unknown(data, name, TOP)
    cluster = parse_cluster(data, name)
    phases = parse_phases(data, name, PipelinePhases)
    simulator = take(data.get("simulator", {}), f"{name}.simulator", SimulatorSpec, (), {"rate_per_s": positive})
    pipeline = take(
        data.get("pipeline", {}),
        f"{name}.pipeline",
        PipelineSpec,
        (),
        {"trigger_s": positive, "start_timeout_s": positive},
    )
    _validate(name, cluster.brokers, simulator, pipeline)
    standalone = pipeline.master == STANDALONE
    clients = {
        Need.SPARK_DRIVER: (DRIVER,),
        Need.SPARK_WORKERS: tuple(spark_worker_name(w) for w in range(pipeline.spark_workers)) if standalone else (),
    }
    hints = {Need.SPARK_WORKERS: f'set pipeline.master = "{STANDALONE}" (not {pipeline.master!r})'}
    if pipeline.publish == EXACTLY_ONCE:
        clients[TRANSACTIONAL_IDS] = tuple(f"{transactional_prefix_of(name)}-{p}" for p in range(RESULTS_PARTITIONS))
    topics = {PURCHASES_TOPIC: PURCHASES_PARTITIONS, RESULTS_TOPIC: RESULTS_PARTITIONS}
    ctx = fault_context(name, cluster, topics, clients, hints)
    faults = parse_faults(data, name, kind, ctx, phases)
    checkers, expect, known = parse_checks(data, name, kind)
    if "enriched" in checkers and not pipeline.enriched:
        raise fail(
            f"{name}.checkers.enriched", "judges the enriched stream, which runs only with pipeline.enriched = true"
        )
    for i, f in enumerate(faults):
        if f.duration_s is None:
            raise fail(
                f"{name}.faults[{i}].duration_s", "a pipeline scenario restores every fault it applies: give duration_s"
            )
    return PipelineScenario(
        name=name,
        description=str(data.get("description", "")),
        seed=str(data.get("seed", "")),
        cluster=cluster,
        faults=faults,
        actions=(),
        phases=phases,
        checkers=checkers,
        expect=expect,
        known=known,
        raw=data,
        simulator=simulator,
        pipeline=pipeline,
    )


def _validate(name: str, brokers: int, simulator: SimulatorSpec, pipeline: PipelineSpec) -> None:
    if brokers < 3:
        raise fail(
            f"{name}.cluster.brokers", f"{brokers}: the demo topics have replication factor 3, so 3 brokers at least"
        )
    if simulator.rate_per_s <= 0:
        raise fail(f"{name}.simulator.rate_per_s", "a pipeline scenario needs a fixed rate above 0")
    master = pipeline.master
    if not (master == STANDALONE or master.startswith(("local", "spark://"))):
        raise fail(f"{name}.pipeline.master", f'{master!r}: use local[N], spark://HOST:PORT or "standalone"')
    if master == STANDALONE and not (1 <= pipeline.spark_workers <= 8 and 1 <= pipeline.spark_port <= 64000):
        raise fail(f"{name}.pipeline", "spark_workers must be 1-8 and spark_port 1-64000")
    if pipeline.publish not in PUBLISH_MODES:
        raise fail(f"{name}.pipeline.publish", f"{pipeline.publish!r} is not one of {', '.join(PUBLISH_MODES)}")
    if simulator.clock not in ("wall", "accelerated"):
        raise fail(f"{name}.simulator.clock", f"{simulator.clock!r} is not one of wall, accelerated")
    if simulator.instances < 1 or simulator.malformed_every < 0:
        raise fail(f"{name}.simulator", "instances must be at least 1 and malformed_every not negative")
