"""The transaction kind's workload: the lab's producers and consumers, with transactional writers and
consume-transform-produce processors.

setup: the topics fresh, Kafka's transaction.version finalized if the scenario names one (recorded as
an event either way). start: consumers, then processors, then the plain producers (the processors'
input), then writers, until each writer and processor has committed a transaction. drain: writers and
producers stopped; processors until they read their input to its end; then, once no transaction is open
on any partition (the last stable offset is the log end offset), the log is read back at read_committed,
and the consumers are waited on until they read what it holds.
"""

from __future__ import annotations

import signal
import time
import zlib
from dataclasses import replace
from pathlib import Path

from failsafe.errors import KafkaClientError
from failsafe.faults import FaultError
from failsafe.history.ops import Op, event, log_read
from failsafe.jvm.java import find_java
from failsafe.jvm.kafka import kafka_dist
from failsafe.scenarios.engine import setup
from failsafe.scenarios.engine.actions import created_topics
from failsafe.scenarios.engine.plugin import RunContext
from failsafe.scenarios.kinds.txn.schema import TxnScenario
from failsafe.scenarios.kit.clients import ConsumerGroup
from failsafe.scenarios.kit.workload import ClientsWorkload
from failsafe.scenarios.observers.observe import read_log
from failsafe.tools.admin import log_end_offsets
from failsafe.tools.kafka_tools import finalized_features, set_feature_level
from failsafe.waiting import WaitTimeout, wait_until
from failsafe.workloads.pool import Worker, WorkerPool
from failsafe.workloads.specs import ConsumerSpec, settings_of
from failsafe.workloads.txn.java import compiled_driver
from failsafe.workloads.txn.specs import (
    KAFKA_JAVA,
    CtpSpec,
    ProcessorSettings,
    TxnProducerSpec,
    TxnSpec,
    WriterSettings,
)

TRANSACTION_VERSION = "transaction.version"
FIRST_COMMIT_TIMEOUT_S = 60.0
# How long a kill waits for the client to have a transaction open (it nearly always has).
OPEN_TXN_TIMEOUT_S = 10.0
SUPERSEDED_DIR = (
    "superseded"  # RUN_DIR/superseded/PROCESS: made when a zombie-txn-client lets a superseded instance go on
)
# Past a killed writer's transaction.timeout.ms, its coordinator aborts what it left open.
STABLE_MARGIN_S = 20.0


class TxnWorkload(ClientsWorkload):
    def __init__(self, scenario: TxnScenario) -> None:
        super().__init__(scenario)
        self.scenario: TxnScenario = scenario
        # A transactional client's name (writer-0) -> the spec of its current incarnation (writer-0, writer-0.1, ...).
        self.txn_specs: dict[str, TxnSpec] = {}
        # Frozen incarnations (zombie-txn-client), by client name, until they are let go on.
        self.paused: dict[str, Worker] = {}
        # What the drain leaves the final read: when it began, whether the processors read their input, partitions still
        # open.
        self._drain_started = time.monotonic()
        self._processors_drained = True
        self._open: dict[tuple[str, int], tuple[int, int]] = {}
        self.superseded_dir: Path | None = (
            None  # set up in setup(): where zombie-txn-client leaves its superseded markers
        )

    def setup(self, ctx: RunContext) -> None:
        s = self.scenario
        groups = sorted({c.group for c in s.consumers if c.group} | {p.group for p in s.processors})
        setup.fresh_topics(ctx.bootstrap_servers, s.topics, groups, ctx.topic_configs, created_topics(s))
        self.pool = WorkerPool(ctx.recorder, ctx.supervisor, ctx.logs_dir, ctx.client_defaults)
        self.superseded_dir = ctx.run_path / SUPERSEDED_DIR
        dist = kafka_dist(ctx.kafka_version)
        if any(c.driver == KAFKA_JAVA for c in (*s.writers, *s.processors)):
            # Compiled here, once, before any worker starts: a missing javac stops the run before its clients do.
            compiled_driver(find_java(), dist)
        wanted = self.scenario.transactions.version
        if wanted is not None:
            ctx.event(f"finalizing {TRANSACTION_VERSION}={wanted} (kafka-features)")
            level = set_feature_level(dist, ctx.bootstrap_servers, TRANSACTION_VERSION, wanted)
        else:
            found = finalized_features(dist, ctx.bootstrap_servers).get(TRANSACTION_VERSION)
            level = None if found is None else int(found[2])
        ctx.recorder.record(event(Op.FEATURE_LEVEL, feature=TRANSACTION_VERSION, level=level))

    def start(self, ctx: RunContext) -> None:
        s = self.scenario
        for p in s.processors:
            for i, process in enumerate(p.processes()):
                self._start_txn(
                    CtpSpec(
                        process=process,
                        input_topic=p.input,
                        output_topic=p.output,
                        group=p.group,
                        transactional_id=process,
                        bootstrap_servers=ctx.bootstrap_servers,
                        seed=_seed(s.seed, i),
                        kafka_version=ctx.kafka_version,
                        **settings_of(p, ProcessorSettings),
                    )
                )
        super().start(ctx)  # consumers, then the plain producers
        for w in s.writers:
            for i, process in enumerate(w.processes()):
                self._start_txn(
                    TxnProducerSpec(
                        process=process,
                        topics=w.topics,
                        transactional_id=process,
                        bootstrap_servers=ctx.bootstrap_servers,
                        seed=_seed(s.seed, i),
                        kafka_version=ctx.kafka_version,
                        **settings_of(w, WriterSettings),
                    )
                )
        ctx.wait(
            lambda: all(w.txn_outcomes["ok"] > 0 for w in self._txn_workers()),
            FIRST_COMMIT_TIMEOUT_S,
            f"a transactional client had no transaction committed within {FIRST_COMMIT_TIMEOUT_S:g}s",
        )

    def consumer_spec(self, c: ConsumerGroup, i: int, ctx: RunContext) -> ConsumerSpec:
        # A reader without a group starts at the first offsets itself: asking a cold group coordinator for committed
        # offsets can leave librdkafka's reader fetching nothing for good (docs/findings.md, section 6), and that is not
        # what this kind's readers are for.
        return replace(super().consumer_spec(c, i, ctx), from_beginning=c.group is None)

    def _start_txn(self, spec: TxnSpec, name: str | None = None) -> Worker:
        assert self.superseded_dir is not None, "setup() comes first"
        spec = replace(spec, superseded_file=str(self.superseded_dir / spec.process))
        self.txn_specs[name or spec.process] = spec
        return self._pool().start(spec)

    def _txn_workers(self) -> list[Worker]:
        pool = self._pool()
        return [pool.workers[spec.process] for spec in self.txn_specs.values()]

    # -- drain ----------------------------------------------------------------------------------------
    def drain(self, ctx: RunContext) -> None:
        s, pool = self.scenario, self._pool()
        writers = [w for w in self._txn_workers() if isinstance(w.spec, TxnProducerSpec)]
        processors = [w for w in self._txn_workers() if isinstance(w.spec, CtpSpec)]
        pool.stop(writers + pool.producers())
        self._drain_started = time.monotonic()
        self._processors_drained = self._wait_processors(ctx, processors)
        pool.stop(processors)
        # Every instance, not only the current ones: a zombie let go at the heal must not commit after the log is read.
        pool.stop([w for w in pool.workers.values() if isinstance(w.spec, TxnProducerSpec | CtpSpec)])
        partitions = self.partitions(ctx)
        timeout_s = max(w.transaction_timeout_ms for w in s.writers + s.processors) / 1000 + STABLE_MARGIN_S  # type: ignore[operator]
        self._open: dict[tuple[str, int], tuple[int, int]] = {}

        def no_open_transaction() -> bool:
            try:
                ends, stable = (log_end_offsets(ctx.bootstrap_servers, partitions, committed=c) for c in (False, True))
            except KafkaClientError:
                return False  # a leader moving after the heal: not yet
            self._open.clear()
            self._open.update({tp: (stable[tp], ends[tp]) for tp in sorted(ends) if stable[tp] < ends[tp]})
            return not self._open

        try:
            ctx.wait(no_open_transaction, timeout_s, "")
        except WaitTimeout:
            ctx.event(
                f"drain: transactions still open after {timeout_s:g}s on "
                + ", ".join(f"{t}-{p} (stable {s}, end {e})" for (t, p), (s, e) in self._open.items())
            )

    def final_read(self, ctx: RunContext) -> None:
        """The log read back at read_committed once every writer stopped; then the consumers, still running, are waited
        on until they read what it holds (the last record of a partition is not its end offset: transaction markers)."""
        ctx.event("reading every partition from the beginning, at read_committed")
        upto = read_log(ctx.bootstrap_servers, self.partitions(ctx), ctx.recorder)
        for (topic, partition), (stable, end) in self._open.items():
            # Read only up to the last stable offset: what a transaction still open hides cannot be judged (the
            # checker's uncovered).
            ctx.recorder.record(
                log_read(
                    topic,
                    partition,
                    error=f"a transaction was still open: read up to the last stable offset {stable}, not to {end}",
                )
            )
        drained = self._wait_consumers(ctx, upto) and self._processors_drained
        ctx.recorder.record(event(Op.DRAINED, ok=drained, drain_s=round(time.monotonic() - self._drain_started, 2)))
        self._pool().stop(self._pool().consumers())

    def _wait_processors(self, ctx: RunContext, processors: list[Worker]) -> bool:
        """Until each processor group read its input to the log end (plain writes: the last offset is a record)."""
        by_group: dict[str, set[tuple[str, int]]] = {}
        for w in processors:
            spec = w.spec
            assert isinstance(spec, CtpSpec)
            by_group.setdefault(spec.group, set()).update(
                (p["topic"], p["partition"]) for p in ctx.topology() if p["topic"] == spec.input_topic
            )
        if not by_group:
            return True
        ends = log_end_offsets(ctx.bootstrap_servers, sorted({tp for tps in by_group.values() for tp in tps}))
        every = [w for w in self._pool().workers.values() if isinstance(w.spec, CtpSpec)]  # earlier incarnations too

        def behind() -> list[str]:
            read: dict[str, dict[tuple[str, int], int]] = {}
            for w in every:
                merged = read.setdefault(w.spec.group, {})  # type: ignore[union-attr]
                for tp, offset in list(w.read_upto.items()):
                    merged[tp] = max(merged.get(tp, -1), offset)
            return [
                f"{g} {t}-{p} ({read.get(g, {}).get((t, p), -1) + 1}/{ends[(t, p)]})"
                for g, tps in by_group.items()
                for t, p in sorted(tps)
                if read.get(g, {}).get((t, p), -1) < ends[(t, p)] - 1
            ]

        try:
            ctx.wait(
                lambda: not any(w.alive() for w in processors) or not behind(), self.scenario.phases.drain_timeout_s, ""
            )
            return True
        except WaitTimeout:
            ctx.event(
                "drain: processors had not read their input to its end after "
                f"{self.scenario.phases.drain_timeout_s:g}s: {', '.join(behind())}"
            )
            return False

    def _wait_consumers(self, ctx: RunContext, upto: dict[tuple[str, int], int]) -> bool:
        """Until every consumer (group) read each of its partitions up to the last record the log read found there."""
        s, pool = self.scenario, self._pool()

        def behind() -> list[str]:
            read = pool.read_upto_by_group()
            out = []
            for c in s.consumers:
                for key in [c.group] if c.group else c.processes():
                    out += [
                        f"{key} {t}-{p} ({read.get(key, {}).get((t, p), -1)}/{last})"
                        for (t, p), last in sorted(upto.items())
                        if t in c.topics and last >= 0 and read.get(key, {}).get((t, p), -1) < last
                    ]
            return out

        try:
            ctx.wait(lambda: not pool.live_consumers() or not behind(), s.phases.drain_timeout_s, "")
            return True
        except WaitTimeout:
            ctx.event(
                f"drain: consumers had not read up to the log read's last records after {s.phases.drain_timeout_s:g}s: "
                f"{', '.join(behind())}"
            )
            return False

    # -- faults on clients ----------------------------------------------------------------------------
    def kill_client(self, name: str) -> None:
        if name not in self.txn_specs:
            return super().kill_client(name)
        self._pool().kill(self._with_open_txn(name).process)

    def pause_client(self, name: str) -> None:
        if name not in self.txn_specs:
            return super().pause_client(name)
        if name in self.paused:
            raise FaultError(f"{name} is frozen already (another zombie-txn-client): one at a time")
        worker = self._with_open_txn(name)
        worker.child.signal(signal.SIGSTOP)
        self.paused[name] = worker

    def resume_client(self, name: str) -> None:
        if name not in self.txn_specs:
            return super().resume_client(name)
        worker = self.paused.pop(name, None)
        if worker is not None:
            # Both clients say fenced to a zombie and to a producer whose transaction timed out while its coordinator
            # was away alike (librdkafka _FENCED, Java ProducerFencedException): tell this one it was superseded before
            # it goes on, so that its fence stops it and only its: the Java driver reads a file, librdkafka's worker
            # takes SIGUSR1.
            marker = Path(worker.spec.superseded_file)
            marker.parent.mkdir(parents=True, exist_ok=True)
            marker.touch()
            if worker.spec.driver == "librdkafka":
                worker.child.signal(signal.SIGUSR1)
            worker.child.signal(signal.SIGCONT)

    def _with_open_txn(self, name: str) -> Worker:
        worker = self._current(name)
        try:
            wait_until(lambda: (worker.txn_open and worker.txn_written) or not worker.alive(), OPEN_TXN_TIMEOUT_S, "")
        except WaitTimeout:
            raise FaultError(
                f"{worker.process} had no transaction open with a write in it within {OPEN_TXN_TIMEOUT_S:g}s"
            ) from None
        return worker

    def restart_client(self, name: str) -> None:
        if name not in self.txn_specs:
            return super().restart_client(name)
        self.incarnations[name] = self.incarnations.get(name, 0) + 1
        self._start_txn(replace(self.txn_specs[name], process=f"{name}.{self.incarnations[name]}", client_log=""), name)

    def process_of(self, name: str) -> str:
        return self.txn_specs[name].process if name in self.txn_specs else super().process_of(name)

    def _current(self, name: str) -> Worker:
        worker = self._pool().workers[self.txn_specs[name].process]
        if not worker.alive():
            raise FaultError(f"transactional client {worker.process} is not running any more")
        return worker

    def stop(self) -> None:
        for name in list(self.paused):
            self.resume_client(name)
        if self.pool is not None:
            self.pool.stop([w for w in self.pool.workers.values() if isinstance(w.spec, TxnProducerSpec | CtpSpec)])
        super().stop()

    def tick(self) -> None:
        if self.pool is not None:
            # Every client's current instance must run until the drain: one that stops by itself (fenced with no newer
            # instance of ours, a driver error) fails the run. A replaced instance (a zombie, fenced as it should be) is
            # not watched.
            self.pool.check_alive(self.pool.producers() + self.pool.consumers() + self._txn_workers())

    def progress(self) -> str:
        if self.pool is None:
            return "no clients yet"
        outcomes = {k: sum(w.txn_outcomes[k] for w in self._txn_workers()) for k in ("ok", "fail", "info")}
        return (
            f"transactions committed {outcomes['ok']} · aborted {outcomes['fail']} · unknown {outcomes['info']} · "
            f"{self.pool.counters.line()}"
        )


def _seed(seed: str, index: int) -> int:
    return zlib.crc32(f"{seed}:{index}".encode())
