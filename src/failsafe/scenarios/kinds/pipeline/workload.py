"""The pipeline's workload: the sales simulator and the Spark pipeline, each a ``failsafe`` child process.

setup: the demo topics, fresh; the catalogue on demo.products (the pipeline reads it once at
start); the pipeline, up to its first micro-batch. start: the simulator, at a fixed rate for the
warm-up and chaos phases. end_chaos: the simulator has finished (``simulator-exit``). drain: the
query has read to the log end offsets of demo.purchases (``drained``), then the pipeline stops
(``pipeline-stop``). A pipeline that exits when no fault killed it is recorded (``pipeline-exit``):
the verdict is built from these ops and the sink (docs/pipeline.md).
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections import Counter

from failsafe.faults import FaultError
from failsafe.faults.clients import DRIVER, HOLDING_STATE, spark_worker_name
from failsafe.history.ops import Op, Process, event
from failsafe.pipeline.job import (
    ENRICHED_QUERY,
    ENRICHED_TOPIC,
    PUBLISHING_FILE,
    RESULTS_PARTITIONS,
    RESULTS_TOPIC,
    SALES_QUERY,
)
from failsafe.pipeline.progress import latest_by_query
from failsafe.pipeline.publish import EXACTLY_ONCE, Publication, marker_group, register
from failsafe.pipeline.sink import read_progress
from failsafe.pipeline.standalone import StandaloneCluster, StandaloneSpec
from failsafe.scenarios.base import TopicSpec
from failsafe.scenarios.engine import setup
from failsafe.scenarios.engine.plugin import RunContext
from failsafe.scenarios.kinds.pipeline.enriched import ENRICHED_PARTITIONS
from failsafe.scenarios.kinds.pipeline.published import write_uncommitted_view
from failsafe.scenarios.kinds.pipeline.schema import (
    PURCHASES_PARTITIONS,
    PURCHASES_TOPIC,
    STANDALONE,
    PipelineScenario,
    transactional_prefix_of,
)
from failsafe.scenarios.observers.observe import read_log
from failsafe.supervisor import Child
from failsafe.tools.admin import log_end_offsets
from failsafe.waiting import WaitTimeout, wait_until
from failsafe.workloads.sales.run import publish_products

DEMO_TOPICS = (
    TopicSpec("demo.products", 6, 3, {"cleanup.policy": "compact"}),
    TopicSpec(PURCHASES_TOPIC, PURCHASES_PARTITIONS, 3),
    TopicSpec("demo.inventories", 6, 3),
    TopicSpec(RESULTS_TOPIC, RESULTS_PARTITIONS, 3),
)
ENRICHED_SPEC = TopicSpec(ENRICHED_TOPIC, ENRICHED_PARTITIONS, 3)
READ_BACK_TIMEOUT_S = 60.0
CATALOGUE_TIMEOUT_S = 60.0
SIMULATOR_FINISH_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 60.0
STATE_PLACED_TIMEOUT_S = 60.0  # kill-spark-worker holding-state waits this long for the first placement


def failsafe_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "failsafe", *args]


class PipelineWorkload:
    def __init__(self, scenario: PipelineScenario) -> None:
        self.scenario = scenario
        self.sampled_topics = [PURCHASES_TOPIC]
        self.ctx: RunContext | None = None
        self.pipeline: Child | None = None
        self.simulator: Child | None = None
        self.starts = 0
        self.spark: StandaloneCluster | None = None  # with pipeline.master = "standalone": the run's own Spark cluster
        self._driver_down = False  # while a kill-driver fault holds the pipeline down on purpose
        self._state_holder: int | None = None  # the worker kill-spark-worker holding-state resolved to
        self.queries = (SALES_QUERY, ENRICHED_QUERY) if scenario.pipeline.enriched else (SALES_QUERY,)
        self.prefix = transactional_prefix_of(scenario.name)

    @property
    def output(self):
        return self._ctx().run_path / "output"

    # -- phases ---------------------------------------------------------------------------------
    def setup(self, ctx: RunContext) -> None:
        self.ctx = ctx
        setup.fresh_topics(
            ctx.bootstrap_servers,
            DEMO_TOPICS + ((ENRICHED_SPEC,) if self.scenario.pipeline.enriched else ()),
            [marker_group(self.prefix)],  # an earlier run's marker would skip this run's batches
            ctx.topic_configs,
        )
        publish_products(ctx.bootstrap_servers, "demo.products", CATALOGUE_TIMEOUT_S)
        if self.scenario.pipeline.publish == EXACTLY_ONCE:
            # On a cold cluster the ids have no coordinator until the first batch publishes: a fault on it could not
            # start.
            register(Publication(ctx.bootstrap_servers, RESULTS_TOPIC, RESULTS_PARTITIONS, self.prefix))
        if self.scenario.pipeline.master == STANDALONE:
            self._start_spark()
        self._start_pipeline()
        timeout_s = self.scenario.pipeline.start_timeout_s
        # Spark runs batch 0 of the query at once, even on an empty topic: its progress says the query is up.
        ctx.wait(
            lambda: set(self.queries) <= set(latest_by_query(self.output)),
            timeout_s,
            f"the pipeline finished no micro-batch within {timeout_s:g}s (see {ctx.run_path / 'pipeline.log'})",
        )

    def start(self, ctx: RunContext) -> None:
        s = self.scenario
        self.simulator = ctx.supervisor.spawn(
            failsafe_command(
                "simulate",
                "sales",
                "--bootstrap-server",
                ctx.bootstrap_servers,
                "--rate",
                f"{s.simulator.rate_per_s:g}",
                "--duration",
                f"{s.simulated_s:g}",
                "--seed",
                str(s.simulator.seed),
                "--instances",
                str(s.simulator.instances),
                "--malformed-every",
                str(s.simulator.malformed_every),
                "--clock",
                s.simulator.clock,
                "--ledger",
                str(ctx.run_path / "ledger"),
            ),
            name="simulator",
            log_path=ctx.run_path / "simulator.log",
            env=_unbuffered(),
        )

    def end_chaos(self, ctx: RunContext) -> None:
        simulator = self.simulator
        assert simulator is not None
        try:
            ctx.wait(
                lambda: not simulator.running(),
                SIMULATOR_FINISH_TIMEOUT_S,
                f"the simulator had not finished {SIMULATOR_FINISH_TIMEOUT_S:g}s after its run should have ended "
                f"(see {ctx.run_path / 'simulator.log'})",
            )
        finally:
            code = simulator.exit_code()
            ctx.recorder.record(
                event(
                    Op.SIMULATOR_EXIT,
                    process="simulator",
                    exit_code=code,
                    error=(simulator.tail(2) or "no output") if code != 0 else None,
                )
            )

    def drain(self, ctx: RunContext) -> None:
        ends = purchases_log_end(ctx.bootstrap_servers)
        started = time.monotonic()

        def caught_up() -> bool:
            latest = latest_by_query(self.output)
            return all(_covers(latest.get(q, {}).get("end_offsets"), ends) for q in self.queries)

        drained = False
        try:
            ctx.wait(lambda: self.pipeline is None or caught_up(), self.scenario.phases.drain_timeout_s, "")
            drained = self.pipeline is not None
        except WaitTimeout:
            ctx.event(
                f"drain: the pipeline had not read to the log end after {self.scenario.phases.drain_timeout_s:g}s"
            )
        ctx.recorder.record(
            event(
                Op.DRAINED,
                process="pipeline",
                ok=drained,
                drain_s=round(time.monotonic() - started, 2),
                log_end={str(p): end for p, end in ends.items()},
            )
        )
        if self.pipeline is not None:
            ctx.event("stopping the pipeline")
            code = self.pipeline.stop(STOP_TIMEOUT_S)
            ctx.recorder.record(event(Op.PIPELINE_STOP, process="pipeline", exit_code=code))
            self.pipeline = None

    def final_read(self, ctx: RunContext) -> None:
        """demo.purchases, every purchase the simulator's ledger says was acknowledged judged against it
        (checkers/durability.py); the results topic (checkers.pipeline.published's input); and the enriched topic: each
        everything its sink wrote, once the pipeline can write no more (checkers.enriched's input)."""
        ctx.event(f"reading {PURCHASES_TOPIC} from the beginning")
        read_log(
            ctx.bootstrap_servers,
            [(PURCHASES_TOPIC, p) for p in range(PURCHASES_PARTITIONS)],
            ctx.recorder,
            READ_BACK_TIMEOUT_S,
        )
        # The totals published to Kafka: at read_committed into the history, and what read_uncommitted sees beside it.
        partitions = [(RESULTS_TOPIC, p) for p in range(RESULTS_PARTITIONS)]
        read_log(ctx.bootstrap_servers, partitions, ctx.recorder, READ_BACK_TIMEOUT_S)
        write_uncommitted_view(self.output, ctx.bootstrap_servers, partitions, READ_BACK_TIMEOUT_S)
        if self.scenario.pipeline.enriched:
            partitions = [(ENRICHED_TOPIC, p) for p in range(ENRICHED_PARTITIONS)]
            read = read_log(ctx.bootstrap_servers, partitions, ctx.recorder, READ_BACK_TIMEOUT_S)
            ctx.recorder.record(event(Op.READ_BACK, process=Process.LOG_READER, ok=len(read) == len(partitions)))

    def stop(self) -> None:
        for child in (self.simulator, self.pipeline):
            if child is not None and (child.running() or child.group_alive()):
                child.stop(STOP_TIMEOUT_S)
        if self.spark is not None:
            self.spark.stop(STOP_TIMEOUT_S)

    def tick(self) -> None:
        """Notice a pipeline that died when nobody killed it: recorded, for the verdict, not a failure of the run."""
        if self.pipeline is not None and not self.pipeline.running() and not self._driver_down:
            ctx = self._ctx()
            code, tail = self.pipeline.exit_code(), self.pipeline.tail()
            ctx.recorder.record(event(Op.PIPELINE_EXIT, process="pipeline", exit_code=code, error=tail or None))
            ctx.event(f"the pipeline exited by itself (exit {code}): {self.pipeline.tail(1)}")
            self.pipeline = None

    def progress(self) -> str:
        if self.ctx is None:
            return "pipeline not started"
        latest = latest_by_query(self.output).get("sales-by-product", {})
        offsets = (latest.get("end_offsets") or {}).get(PURCHASES_TOPIC, {})
        return f"pipeline batch {latest.get('batch_id', '-')} · read up to {sum(int(v) for v in offsets.values())}"

    # -- client faults --------------------------------------------------------------------------
    def kill_client(self, name: str) -> None:
        if (worker := self._spark_worker(name)) is not None:
            assert self.spark is not None
            pid = self.spark.kill_worker(worker)
            self._ctx().event(f"killed Spark {name} (pid {pid}) and its executors")
            return
        if name != DRIVER or self.pipeline is None:
            raise FaultError(f"the pipeline scenario has no running {name!r} to kill")
        self._driver_down = True
        self.pipeline.kill(STOP_TIMEOUT_S)

    def close_client(self, name: str) -> None:
        raise FaultError(f"the pipeline scenario cannot close {name!r}")

    def process_of(self, name: str) -> str:
        return name  # the driver and the workers are started again under their own names

    def wait_settled(self, timeout_s: float) -> str:
        raise FaultError("the pipeline scenario has no consumer group of its own to wait for")

    def wait_publishing(self, delay_s: float, timeout_s: float) -> dict:
        """Until a micro-batch whose publishing job starts from now on has run it for ``delay_s``: the sink notes each
        start in ``OUTPUT/_publishing.jsonl``."""
        since = time.time()

        def started() -> dict | None:
            return next((line for line in _publishing_starts(self.output) if line["started_at"] >= since), None)

        try:
            line = wait_until(started, timeout_s, "no micro-batch started publishing", poll_interval_s=0.02)
        except WaitTimeout as e:
            raise FaultError(f"{e} within {timeout_s:g} s: kill-driver had no publishing job to land in") from e
        into = line["started_at"] + delay_s
        # The fault's own timing (as its at_s), not a wait on state.
        wait_until(lambda: time.time() >= into, delay_s + 1.0, "the clock did not advance", poll_interval_s=0.01)
        hit = {"batch": line["batch_id"], "publish": line["publish"], "for_ms": delay_s * 1000}
        self._ctx().event(f"kill-driver: batch {hit['batch']} publishing ({hit['publish']}) for {hit['for_ms']:g} ms")
        return hit

    def restart_client(self, name: str) -> None:
        if (worker := self._spark_worker(name)) is not None:
            assert self.spark is not None
            self._ctx().event(f"start Spark {name} again")
            self.spark.start_worker(worker)
            return
        if name != DRIVER:
            raise FaultError(f"the pipeline scenario cannot restart {name!r}")
        self._ctx().event("restart the pipeline from its checkpoint")
        self._start_pipeline()

    # -- helpers --------------------------------------------------------------------------------
    def _spark_worker(self, name: str) -> int | None:
        """The index of a 'spark-worker-N' of the run's own Spark cluster; None for any other name.

        'spark-worker-holding-state' is the worker whose executor holds the most state partitions of the
        sales query, by the newest placement the pipeline logged (waited for, when none is yet), resolved
        once: its restart starts the same worker."""
        if self.spark is None:
            return None
        if name == spark_worker_name(HOLDING_STATE):
            if self._state_holder is None:
                self._state_holder = self._worker_holding_state()
            return self._state_holder
        return next((w for w in range(self.spark.spec.workers) if name == spark_worker_name(w)), None)

    def _worker_holding_state(self) -> int:
        assert self.spark is not None
        spark = self.spark

        def holder() -> tuple[int] | None:  # a tuple: worker 0 must count as found
            placed = [
                line.get("state_locations")
                for line in read_progress(self.output)
                if line.get("query") == "sales-by-product"
            ]
            placed = [p for p in placed if p]
            if not placed:
                return None
            held = Counter(location.rsplit("_", 1)[-1] for location in placed[-1].values())
            by_worker = {w: sum(held[e] for e in executors) for w, executors in spark.worker_executors().items()}
            return (max(by_worker, key=lambda w: (by_worker[w], -w)),) if any(by_worker.values()) else None

        try:
            (worker,) = wait_until(
                holder, STATE_PLACED_TIMEOUT_S, "no state partition of the sales query was placed on a worker"
            )
        except WaitTimeout as e:
            raise FaultError(f"{e} within {STATE_PLACED_TIMEOUT_S:g} s: no worker holds state to kill") from e
        self._ctx().event(f"spark-worker-{worker} holds the most state partitions of the sales query")
        return worker

    def _start_spark(self) -> None:
        ctx, p = self._ctx(), self.scenario.pipeline
        self.spark = StandaloneCluster(
            ctx.run_path / "spark",
            StandaloneSpec(workers=p.spark_workers, port=p.spark_port),
            spawner=ctx.supervisor.spawn,
            outlives_us=False,
        )
        ctx.event(
            f"starting a Spark standalone cluster: a master and {p.spark_workers} workers at "
            f"{self.spark.spec.master_url}"
        )
        self.spark.start(p.start_timeout_s, ctx.event)
        ctx.recorder.record(
            event(
                Op.SPARK_STANDALONE_UP,
                process="pipeline",
                master=self.spark.spec.master_url,
                workers=p.spark_workers,
                cores_per_worker=self.spark.spec.cores_per_worker,
            )
        )

    def _master(self) -> str:
        return self.spark.spec.master_url if self.spark is not None else self.scenario.pipeline.master

    def _start_pipeline(self) -> None:
        ctx, s = self._ctx(), self.scenario
        self.starts += 1
        ctx.recorder.record(
            event(
                Op.PIPELINE_START,
                process="pipeline",
                start=self.starts,
                master=self._master(),
                publish=s.pipeline.publish,
            )
        )
        self.pipeline = ctx.supervisor.spawn(
            failsafe_command(
                "pipeline",
                "run",
                "--bootstrap-server",
                ctx.bootstrap_servers,
                "--master",
                self._master(),
                "--output",
                str(self.output),
                "--checkpoint",
                str(ctx.run_path / "checkpoint"),
                "--trigger-s",
                f"{s.pipeline.trigger_s:g}",
                "--watermark",
                s.pipeline.watermark,
                "--publish",
                s.pipeline.publish,
                "--transactional-id-prefix",
                self.prefix,
                *(("--enriched-topic", ENRICHED_TOPIC) if s.pipeline.enriched else ()),
            ),
            name="pipeline",
            log_path=ctx.run_path / "pipeline.log",
            env=_unbuffered(),
        )
        self._driver_down = False

    def _ctx(self) -> RunContext:
        assert self.ctx is not None, "setup() comes first"
        return self.ctx


def _unbuffered() -> dict[str, str]:
    return {**os.environ, "PYTHONUNBUFFERED": "1"}


def _covers(end_offsets: dict | None, log_end: dict[int, int]) -> bool:
    if not end_offsets:
        return all(end == 0 for end in log_end.values())
    read = {int(p): int(o) for p, o in end_offsets.get(PURCHASES_TOPIC, {}).items()}
    return all(read.get(p, 0) >= end for p, end in log_end.items())


def purchases_log_end(bootstrap_servers: str) -> dict[int, int]:
    ends = log_end_offsets(bootstrap_servers, [(PURCHASES_TOPIC, p) for p in range(PURCHASES_PARTITIONS)])
    return {partition: end for (_, partition), end in ends.items()}


def _publishing_starts(output) -> list[dict]:
    """The sink's notes of each publishing job's start (a line still being written is left for the next look)."""
    try:
        text = (output / PUBLISHING_FILE).read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    lines = []
    for raw in text.splitlines():
        try:
            lines.append(json.loads(raw))
        except json.JSONDecodeError:
            break
    return lines
