"""The kit's workload: verifying producers and consumers (failsafe's, or Kafka's verifiable clients) as worker
processes.

setup: the scenario's topics and groups, fresh. start: every consumer, until each group owns every partition and each
member some (when there are enough), then every producer, until each has a write acknowledged. drain: producers stopped,
the consumers read up to the log end offsets (``drained`` records whether they did within drain_timeout_s), then the
whole log is read back into ``log-read`` ops so the delivery checker can tell a write that is not in the log from one no
consumer read."""

from __future__ import annotations

import signal
import time
from dataclasses import replace

from failsafe.errors import UserError
from failsafe.faults import FaultError
from failsafe.history.ops import Op, event
from failsafe.scenarios.engine import setup
from failsafe.scenarios.engine.actions import created_topics
from failsafe.scenarios.engine.plugin import RunContext
from failsafe.scenarios.kit.clients import ClientsScenario, ConsumerGroup
from failsafe.scenarios.observers.observe import read_log
from failsafe.tools.admin import log_end_offsets, set_group_configs
from failsafe.waiting import WaitTimeout, wait_until
from failsafe.workloads.pool import Worker, WorkerPool
from failsafe.workloads.specs import ConsumerSpec, ProducerSettings, ProducerSpec, settings_of
from failsafe.workloads.verifiable.clients import (
    FREEZE_SIGNAL,
    THAW_SIGNAL,
    VerifiableConsumerSpec,
    VerifiableProducerSpec,
    VerifiableSpec,
)

ASSIGN_TIMEOUT_S = 60.0
FIRST_ACK_TIMEOUT_S = 60.0
KAFKA_VERIFIABLE = "kafka-verifiable"


def where_on_host(host: str | None, ctx: RunContext) -> dict | None:
    """What a client needs to run on ``host`` (RunContext.client_host), None to run here."""
    if host is None:
        return None
    if ctx.client_host is None:
        raise UserError(
            f"a client runs on host {host!r}, and this cluster is not on hosts: start it with "
            "'failsafe up --inventory' (or --hosts)"
        )
    return ctx.client_host(host, ctx.kafka_version)


class ClientsWorkload:
    def __init__(self, scenario: ClientsScenario) -> None:
        self.scenario = scenario
        self.sampled_topics = [t.name for t in scenario.topics]
        self.pool: WorkerPool | None = None
        self.frozen: set[str] = set()  # consumers a pause-consumer has stopped (SIGSTOP), until it lets them go on
        # How many times a client was started again, by its first name: its current process is NAME.N (member-0.1). A
        # new process has a new name, so the history tells each incarnation's reads and assignments apart.
        self.incarnations: dict[str, int] = {}

    # -- phases ---------------------------------------------------------------------------------
    def groups(self) -> list[str]:
        """The consumer groups of the run, deleted before it with its topics (a kind that adds groups says so)."""
        return sorted({c.group for c in self.scenario.consumers if c.group})

    def setup(self, ctx: RunContext) -> None:
        groups = self.groups()
        setup.fresh_topics(
            ctx.bootstrap_servers, self.scenario.topics, groups, ctx.topic_configs, created_topics(self.scenario)
        )
        for c in self.scenario.consumers:
            if c.group:
                # Always: an earlier run's configs of the same group outlive its deletion.
                configs = c.group_settings().group_configs(c.session_timeout_ms)
                if configs:
                    ctx.event(f"consumer group {c.group}: {', '.join(f'{k}={v}' for k, v in sorted(configs.items()))}")
                set_group_configs(ctx.bootstrap_servers, c.group, configs)
        self.pool = WorkerPool(ctx.recorder, ctx.supervisor, ctx.logs_dir, ctx.client_defaults)

    def start(self, ctx: RunContext) -> None:
        s, pool = self.scenario, self._pool()
        for c in s.consumers:
            for i in range(c.count):
                pool.start(self.consumer_spec(c, i, ctx))
        try:
            ctx.wait(lambda: not self.unsettled(), ASSIGN_TIMEOUT_S, "")
        except WaitTimeout:
            left = self.unsettled()
            raise WaitTimeout(
                f"consumer groups did not settle within {ASSIGN_TIMEOUT_S:g}s (every partition owned, every member "
                f"some): {'; '.join(left[:5])}{f' and {len(left) - 5} more' if len(left) > 5 else ''}"
            ) from None
        for p in s.producers:
            for i in range(p.count):
                producer = ProducerSpec(
                    process=f"{p.name}-{i}" if p.count > 1 else p.name,
                    topic=p.topic,
                    bootstrap_servers=ctx.bootstrap_servers,
                    **settings_of(p, ProducerSettings),
                )
                if p.driver == KAFKA_VERIFIABLE:
                    producer = VerifiableProducerSpec(
                        **vars(producer), kafka_version=ctx.kafka_version, host=where_on_host(p.host, ctx)
                    )
                pool.start(producer)
        ctx.wait(
            lambda: all(w.acked > 0 for w in pool.producers()),
            FIRST_ACK_TIMEOUT_S,
            f"a producer had no write acknowledged within {FIRST_ACK_TIMEOUT_S:g}s",
        )

    def unsettled(self) -> list[str]:
        """What keeps the scenario's consumer groups from being settled, as GROUP: WHAT (empty when each group owns
        every partition of its topics, and each member some where there are enough partitions; a manual consumer, all of
        its topics')."""
        s, pool = self.scenario, self._pool()
        partitions = {t.name: t.partitions for t in s.topics}
        by_group = pool.assigned_by_group()
        out = []
        for c in s.consumers:
            want = {(t, p) for t in c.topics for p in range(partitions[t])}
            if c.group is None:
                out += [
                    f"{w.process}: {len(want - w.assigned)} partition(s) unassigned"
                    for w in pool.consumers()
                    if w.group is None and w.alive() and not want <= w.assigned
                ]
                continue
            if missing := want - by_group.get(c.group, set()):
                out.append(f"{c.group}: {len(missing)} partition(s) unowned")
            # Every member owns some when every assignor gives each one some (no more members in the group than the
            # smallest topic has partitions): an incremental protocol hands a late joiner its share over several
            # heartbeats, and a fault on a member that owns nothing yet would move nothing.
            members = [w for w in pool.live_consumers() if w.group == c.group]
            if len(members) <= min(partitions[t] for t in c.topics):
                out += [f"{c.group}: {w.process} owns nothing" for w in members if not w.assigned]
        return out

    def wait_settled(self, timeout_s: float) -> str:
        """Wait up to timeout_s until the consumer groups are settled (unsettled); what was still unsettled, or ''."""
        try:
            wait_until(lambda: not self.unsettled(), timeout_s, "")
        except WaitTimeout:
            return "; ".join(dict.fromkeys(self.unsettled()))
        return ""

    def consumer_spec(self, c: ConsumerGroup, i: int, ctx: RunContext) -> ConsumerSpec:
        settings = c.group_settings()
        spec = ConsumerSpec(
            process=f"{c.name}-{i}",
            topics=c.topics,
            bootstrap_servers=ctx.bootstrap_servers,
            group=c.group,
            session_timeout_ms=settings.client_session_timeout_ms(c.session_timeout_ms),
            properties=c.properties,
        )
        if c.driver == KAFKA_VERIFIABLE:
            return VerifiableConsumerSpec(
                **vars(spec),
                kafka_version=ctx.kafka_version,
                group_protocol=settings.group_protocol,
                assignment_strategy=settings.java_assignor(),
                remote_assignor=settings.remote_assignor,
                host=where_on_host(c.host, ctx),
            )
        return replace(spec, properties={**c.properties, **settings.librdkafka_properties()})

    def end_chaos(self, ctx: RunContext) -> None:
        pass  # producers write until the drain

    def drain(self, ctx: RunContext) -> None:
        s, pool = self.scenario, self._pool()
        pool.stop(pool.producers())
        ends = log_end_offsets(ctx.bootstrap_servers, [(p["topic"], p["partition"]) for p in ctx.topology()])
        started = time.monotonic()
        drained = True
        try:
            ctx.wait(
                lambda: not any(w.alive() for w in self.readers()) or not self.behind(ends),
                s.phases.drain_timeout_s,
                "",
            )
        except WaitTimeout:
            drained = False
            ctx.event(
                f"drain: consumers had not read up to the log end after {s.phases.drain_timeout_s:g}s: "
                f"{', '.join(self.behind(ends))}"
            )
        # The checkers judge who was behind from the reads and the log read (availability.never-caught-up); this says
        # that the drain gave up, and when, for the explanation.
        ctx.recorder.record(event(Op.DRAINED, ok=drained, drain_s=round(time.monotonic() - started, 2)))
        pool.stop(self.readers())

    def final_read(self, ctx: RunContext) -> None:
        ctx.event("reading every partition from the beginning")
        read_log(ctx.bootstrap_servers, self.partitions(ctx), ctx.recorder)

    def partitions(self, ctx: RunContext) -> list[tuple[str, int]]:
        """Every partition of the scenario's topics: as declared, and as the latest topology sample shows them."""
        declared = {(t.name, p) for t in self.scenario.topics for p in range(t.partitions)}
        return sorted(declared | {(p["topic"], p["partition"]) for p in ctx.topology()})

    def readers(self) -> list[Worker]:
        """The workers that read: what the drain waits on, and what a consumer fault may act on."""
        return self._pool().consumers()

    def behind(self, ends: dict[tuple[str, int], int]) -> list[str]:
        """GROUP-or-CONSUMER TOPIC-N (read up to / log end) for every partition a consumer has not read to its end."""
        read = self._pool().read_upto_by_group()
        out = []
        for c in self.scenario.consumers:
            keys = [c.group] if c.group else [f"{c.name}-{i}" for i in range(c.count)]
            for key in keys:
                upto = read.get(key, {})
                out += [
                    f"{key} {tp[0]}-{tp[1]} ({upto.get(tp, -1) + 1}/{end})"
                    for tp, end in sorted(ends.items())
                    if tp[0] in c.topics and end > 0 and upto.get(tp, -1) < end - 1
                ]
        return out

    def stop(self) -> None:
        for name in sorted(self.frozen):
            self.resume_client(name)
        if self.pool is not None:
            self.pool.stop_all()

    def tick(self) -> None:
        if self.pool is not None:
            # Consumers may be killed on purpose (pool.kill marks them); a producer never is.
            self.pool.check_alive(self.pool.producers() + self.readers())

    def progress(self) -> str:
        if self.pool is None:
            return "no clients yet"
        return self.pool.counters.line()

    # -- client faults --------------------------------------------------------------------------
    def kill_client(self, name: str) -> None:
        self._pool().kill(self._consumer(name))

    def close_client(self, name: str) -> None:
        pool = self._pool()
        worker = pool.workers[self._consumer(name)]
        self.resume_client(name)  # a frozen consumer would take its SIGTERM only when let go
        pool.stop([worker])

    def restart_client(self, name: str) -> None:
        """Start a closed group member again as a new process (NAME.N) with the same settings: it joins its group
        anew."""
        process = self.process_of(name)
        worker = self._pool().workers.get(process)
        if worker is None or worker not in self.readers():
            raise FaultError(
                f"the lab restarts only its consumers, and {name!r} is none of "
                f"{', '.join(w.process for w in self.readers())}"
            )
        if worker.alive():
            raise FaultError(f"consumer {process} is still running: a restart starts it again after its close")
        if worker.group is None:
            raise FaultError(
                f"consumer {process} is in no group: only a group member is restarted (it resumes from its "
                f"group's offsets)"
            )
        self.incarnations[name] = self.incarnations.get(name, 0) + 1
        self._pool().start(replace(worker.spec, process=self.process_of(name), client_log=""))

    def pause_client(self, name: str) -> None:
        if name in self.frozen:
            raise FaultError(f"consumer {name} is frozen already (another pause-consumer): one at a time")
        worker = self._pool().workers[self._consumer(name)]
        # Kafka's verifiable clients are a JVM the worker started: the worker stops that (verifiable.py FREEZE_SIGNAL).
        worker.child.signal(FREEZE_SIGNAL if isinstance(worker.spec, VerifiableSpec) else signal.SIGSTOP)
        self.frozen.add(name)

    def resume_client(self, name: str) -> None:
        if name in self.frozen:
            self.frozen.discard(name)
            worker = self._pool().workers[self.process_of(name)]
            worker.child.signal(THAW_SIGNAL if isinstance(worker.spec, VerifiableSpec) else signal.SIGCONT)

    def process_of(self, name: str) -> str:
        """The process of a client's current incarnation: NAME, or NAME.N once it was started again N times."""
        return f"{name}.{self.incarnations[name]}" if self.incarnations.get(name) else name

    def _consumer(self, name: str) -> str:
        pool = self._pool()
        process = self.process_of(name)
        worker = pool.workers.get(process)
        if worker is None or worker not in self.readers():
            raise FaultError(
                f"no consumer {name!r} in this run: its consumers are {', '.join(w.process for w in self.readers())}"
            )
        if not worker.alive():
            raise FaultError(f"consumer {process} is not running any more")
        return process

    def _pool(self) -> WorkerPool:
        assert self.pool is not None, "setup() comes first"
        return self.pool
