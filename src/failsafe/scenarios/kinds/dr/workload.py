"""The DR workload: the lab's verifying clients on the primary, MirrorMaker 2 to the backup, and the moves between them.

setup: the scenario's topics fresh on both clusters (the backup's own copy takes the producer after
a failover), MirrorMaker's topics of earlier runs deleted, MirrorMaker primary->backup started and
mirroring. start: consumers, then the producer, on the primary. failover (after the cluster-loss
fault): the clients of the lost region are gone (killed), new ones start on the backup: the group
subscribes to the mirrored topics and the backup's own, from the offsets MirrorMaker synced into
it, and the producer writes the backup's own topic. failback (planned): MirrorMaker backup->primary,
the producer stops, the mirror and the group catch up, the group's offsets are synced back, then
the clients start on the primary again. drain: on the cluster the clients ended on, then its log.

Every client is named ``NAME@ALIAS`` (checkers/dr/failover.py reads the cluster from it).
"""

from __future__ import annotations

import time
from collections.abc import Mapping

from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition

from failsafe.cluster.topology.mirror import (
    TIMING_DEFAULTS,
    MirrorFlow,
    mirror_lag,
    partitions_of,
    prepare_mirror,
    settings_not_applied,
    translation_delay_s,
)
from failsafe.cluster.topology.pair import BACKUP, PRIMARY, wait_mirroring
from failsafe.errors import ScenarioFailed
from failsafe.history.ops import Op, event
from failsafe.jvm.java import find_java
from failsafe.scenarios.engine import setup
from failsafe.scenarios.engine.actions import created_topics
from failsafe.scenarios.engine.plugin import RunContext
from failsafe.scenarios.kinds.dr.schema import DrScenario
from failsafe.scenarios.observers.observe import read_log
from failsafe.supervisor import Child
from failsafe.tools.admin import describe_error, log_end_offsets, new_admin
from failsafe.waiting import WaitTimeout
from failsafe.workloads.pool import WorkerPool
from failsafe.workloads.specs import ConsumerSettings, ConsumerSpec, ProducerSettings, ProducerSpec, settings_of

ASSIGN_TIMEOUT_S = 60.0
FIRST_ACK_TIMEOUT_S = 60.0
CATCH_UP_TIMEOUT_S = 120.0
MIRROR_READY_TIMEOUT_S = 120.0
GROUP_EMPTY_TIMEOUT_S = 90.0
ADMIN_TIMEOUT_S = 10.0


class DrWorkload:
    def __init__(self, scenario: DrScenario) -> None:
        self.scenario = scenario
        self.sampled_topics = [t.name for t in scenario.topics]
        self.pool: WorkerPool | None = None
        self.on = PRIMARY  # the cluster the clients use now
        self.stint = 1  # how many times the clients have (re)started: names of a later stint on a cluster differ
        self.mirrors: dict[str, Child] = {}

    # -- phases ---------------------------------------------------------------------------------
    def setup(self, ctx: RunContext) -> None:
        missing = [alias for alias in (PRIMARY, BACKUP) if alias not in ctx.clusters]
        if missing:
            raise ScenarioFailed(
                f"{self.scenario.name} runs on a DR pair ('failsafe up --dr'): no {' or '.join(missing)} cluster"
            )
        groups = self._groups()
        for alias in (PRIMARY, BACKUP):
            _forget_mirroring(ctx.clusters[alias], [t.name for t in self.scenario.topics])
            setup.fresh_topics(
                ctx.clusters[alias], self.scenario.topics, groups, ctx.topic_configs, created_topics(self.scenario)
            )
        self.pool = WorkerPool(ctx.recorder, ctx.supervisor, ctx.logs_dir, ctx.client_defaults)
        self._start_mirror(ctx, MirrorFlow(PRIMARY, BACKUP))

    def start(self, ctx: RunContext) -> None:
        self._start_clients(ctx, PRIMARY, [t.name for t in self.scenario.topics])

    def end_chaos(self, ctx: RunContext) -> None:
        """Before the heal brings the lost primary back: MirrorMaker primary->backup stops, or it would resume mirroring
        what the primary held at its death and the backup would receive, late, writes a real region loss takes with it
        (the RPO is what had reached the backup when the primary was lost). The producer writes until the drain."""
        if self.on == BACKUP:
            self._stop_mirror(ctx, MirrorFlow(PRIMARY, BACKUP))

    def move(self, action: str, ctx: RunContext) -> None:
        if action == "failover":
            self._failover(ctx)
        elif action == "failback":
            self._failback(ctx)
        else:
            raise ScenarioFailed(f"the DR workload does not know the action {action!r}")

    def drain(self, ctx: RunContext) -> None:
        pool = self._pool()
        pool.stop(pool.producers())
        bootstrap = ctx.clusters[self.on]
        topics = self._topics_on(self.on)
        ends = log_end_offsets(bootstrap, _partitions(bootstrap, topics))
        try:
            self._wait_caught_up(ctx, bootstrap, ends, self.scenario.phases.drain_timeout_s)
        except WaitTimeout:
            ctx.event(
                f"drain: the group had not read up to the log end on the {self.on} after "
                f"{self.scenario.phases.drain_timeout_s:g}s"
            )
        pool.stop(pool.consumers())

    def final_read(self, ctx: RunContext) -> None:
        """Both clusters, each partition of their own topics and of the other's mirrored ones: every write acknowledged
        on either is judged against its own cluster's log (checkers/durability.py), the mirror by the dr checker."""
        for alias in (PRIMARY, BACKUP):
            bootstrap = ctx.clusters[alias]
            ctx.event(f"reading every partition of the {alias} from the beginning")
            read_log(bootstrap, sorted(_partitions(bootstrap, self._topics_on(alias))), ctx.recorder, cluster=alias)

    def stop(self) -> None:
        if self.pool is not None:
            self.pool.stop_all()

    def tick(self) -> None:
        if self.pool is not None:
            self.pool.check_alive(self.pool.producers() + self.pool.consumers())
        for name, child in self.mirrors.items():
            if not child.running() and child.exit_code() not in (None, 0, -15, 143):
                raise ScenarioFailed(f"MirrorMaker {name} exited with code {child.exit_code()}: see {child.log_path}")

    def progress(self) -> str:
        if self.pool is None:
            return "no clients yet"
        return f"on the {self.on} · {self.pool.counters.line()}"

    # -- the moves ------------------------------------------------------------------------------
    def _failover(self, ctx: RunContext) -> None:
        """The primary's region is lost: its clients with it; new ones start on the backup at once."""
        pool = self._pool()
        ctx.recorder.record(event(Op.DR_SWITCH, **{"from": PRIMARY, "to": BACKUP, "planned": False}))
        ctx.event("failover: the clients of the lost region are gone; the group and the producer start on the backup")
        for w in pool.producers() + pool.consumers():
            if w.alive():
                pool.kill(w.process)
        flow = MirrorFlow(PRIMARY, BACKUP)
        self.on = BACKUP
        self._start_clients(
            ctx, BACKUP, [*(flow.remote_topic(t.name) for t in self.scenario.topics), *self._own_topics()]
        )

    def _failback(self, ctx: RunContext) -> None:
        """Planned: mirror backup->primary, stop writing, let mirror and group catch up, sync the offsets, move back."""
        if self.on != BACKUP:
            raise ScenarioFailed("failback moves the clients from the backup: fail over first")
        pool, flow = self._pool(), MirrorFlow(BACKUP, PRIMARY)
        self._start_mirror(ctx, flow)
        ctx.recorder.record(event(Op.DR_SWITCH, **{"from": BACKUP, "to": PRIMARY, "planned": True}))
        ctx.event(
            "failback: the producer stops on the backup; mirror and group catch up; the clients move to the primary"
        )
        pool.stop(pool.producers())
        backup, primary = ctx.clusters[BACKUP], ctx.clusters[PRIMARY]
        own = self._own_topics()
        timeout_s = CATCH_UP_TIMEOUT_S
        ctx.wait(
            lambda: all(lag.lag == 0 for lag in mirror_lag(flow, ctx.clusters, own)),
            timeout_s,
            f"MirrorMaker {flow.arrow} did not copy the backup's writes within {timeout_s:g}s",
        )
        self._wait_caught_up(
            ctx, backup, log_end_offsets(backup, _partitions(backup, self._topics_on(BACKUP))), timeout_s
        )
        pool.stop(pool.consumers())
        mirrored = [flow.remote_topic(t) for t in own]
        for group in self._groups():
            self._await_synced(ctx, primary, group, mirrored)
            # The primary's own topics hold what the group read through the backup's mirror of them, and
            # the writes that never reached the backup (the failover's RPO set): not news to re-read.
            self._reset_to_end(ctx, primary, group, own)
        self.on = PRIMARY
        self.stint += 1
        self._start_clients(ctx, PRIMARY, [*own, *mirrored])

    # -- parts ----------------------------------------------------------------------------------
    def _start_clients(self, ctx: RunContext, alias: str, topics: list[str]) -> None:
        s, pool, bootstrap = self.scenario, self._pool(), ctx.clusters[alias]
        suffix = f"@{alias}" if self.stint == 1 else f"-s{self.stint}@{alias}"
        for c in s.consumers:
            for i in range(c.count):
                pool.start(
                    ConsumerSpec(
                        process=f"{c.name}-{i}{suffix}",
                        topics=tuple(topics),
                        bootstrap_servers=bootstrap,
                        group=c.group,
                        **settings_of(c, ConsumerSettings),
                    )
                )
        want = {(t, p) for t, p in _partitions(bootstrap, topics)}
        ctx.wait(
            lambda: all(want <= pool.assigned_by_group().get(g, set()) for g in self._groups()),
            ASSIGN_TIMEOUT_S,
            f"the group did not get every partition of {', '.join(topics)} on the {alias} within {ASSIGN_TIMEOUT_S:g}s",
        )
        for p in s.producers:
            for i in range(p.count):
                name = f"{p.name}-{i}" if p.count > 1 else p.name
                pool.start(
                    ProducerSpec(
                        process=f"{name}{suffix}",
                        topic=p.topic,
                        bootstrap_servers=bootstrap,
                        **settings_of(p, ProducerSettings),
                    )
                )
        live = [w for w in pool.producers() if w.alive()]
        ctx.wait(
            lambda: all(w.acked > 0 for w in live),
            FIRST_ACK_TIMEOUT_S,
            f"a producer on the {alias} had no write acknowledged within {FIRST_ACK_TIMEOUT_S:g}s",
        )

    def _start_mirror(self, ctx: RunContext, flow: MirrorFlow) -> None:
        """MirrorMaker as a child of this run (it dies with it), its mm2.properties in the run directory."""
        topics, work = [t.name for t in self.scenario.topics], ctx.run_path / "mirror" / flow.name
        cmd = prepare_mirror(flow, ctx.clusters, topics, self.scenario.mirror, work, find_java(), ctx.kafka_version)
        child = ctx.supervisor.spawn(cmd, name=f"mirrormaker {flow.arrow}", log_path=work / "mirrormaker.log", cwd=work)
        self.mirrors[flow.arrow] = child
        settings = {**TIMING_DEFAULTS, **self.scenario.mirror}
        ctx.recorder.record(event(Op.MIRROR_START, flow=flow.arrow, pid=child.pid, settings=settings))
        ctx.event(f"MirrorMaker {flow.arrow} started; waiting until {', '.join(topics)} are mirrored")
        wait_mirroring(
            flow, ctx.clusters, topics, MIRROR_READY_TIMEOUT_S, alive=child.running, log=work / "mirrormaker.log"
        )
        ignored = settings_not_applied(work / "mirrormaker.log", self.scenario.mirror)
        if ignored:
            raise ScenarioFailed(
                f"MirrorMaker is not running with {', '.join(ignored)} (see the config it logged in "
                f"{work / 'mirrormaker.log'}): "
                "fix the scenario's [mirror.settings]; its numbers would be those of the defaults"
            )
        ctx.recorder.record(event(Op.MIRROR_READY, flow=flow.arrow))

    def _stop_mirror(self, ctx: RunContext, flow: MirrorFlow) -> None:
        child = self.mirrors.pop(flow.arrow, None)
        if child is None or not child.running():
            return
        # SIGKILL: with its source dead, MirrorMaker's orderly stop waits on it for tens of seconds.
        child.kill()
        ctx.recorder.record(event(Op.MIRROR_STOP, flow=flow.arrow))
        ctx.event(f"MirrorMaker {flow.arrow} stopped, before the heal brings the primary back")

    def _await_synced(self, ctx: RunContext, bootstrap: str, group: str, topics: list[str]) -> None:
        """Until MirrorMaker's synced offsets of ``group`` reach the log end of the mirrored ``topics``, or have not
        moved for as long as a committed offset can take to travel (``translation_delay_s``: its translation is
        conservative, it may never reach the end), or a timeout. The group restarts from what was synced and re-reads
        the rest: counted."""
        window_s = translation_delay_s(self.scenario.mirror) + 1
        ends = log_end_offsets(bootstrap, _partitions(bootstrap, topics))
        admin = new_admin(bootstrap)
        seen: dict = {"offsets": None, "since": time.monotonic()}

        def settled() -> bool:
            offsets = _committed(admin, group, ends)
            if all(offsets.get(tp, -1) >= end for tp, end in ends.items() if end > 0):
                return True
            if offsets != seen["offsets"]:
                seen.update(offsets=offsets, since=time.monotonic())
                return False
            return bool(offsets) and time.monotonic() - seen["since"] >= window_s

        timeout_s = 2 * window_s + 30
        ctx.event(f"failback: waiting up to {timeout_s:g}s for MirrorMaker to sync {group}'s offsets into the primary")
        try:
            ctx.wait(settled, timeout_s, "")
        except WaitTimeout:
            ctx.event(
                f"failback: MirrorMaker synced no offsets of {group} within {timeout_s:g}s; the group starts "
                f"from the earliest"
            )
        synced = _committed(admin, group, ends)
        behind = sum(end - synced.get(tp, 0) for tp, end in ends.items())
        ctx.event(f"failback: {group}'s synced offsets on the primary are {behind} records behind the mirrored log end")
        ctx.recorder.record(
            event(
                Op.DR_OFFSETS,
                group=group,
                behind=behind,
                offsets=[{"topic": t, "partition": p, "offset": o} for (t, p), o in sorted(synced.items())],
            )
        )

    def _reset_to_end(self, ctx: RunContext, bootstrap: str, group: str, topics: list[str]) -> None:
        ends = log_end_offsets(bootstrap, _partitions(bootstrap, topics))
        admin = new_admin(bootstrap)
        request = ConsumerGroupTopicPartitions(
            group, [TopicPartition(t, p, end) for (t, p), end in sorted(ends.items())]
        )
        errors: list[str] = []

        def altered() -> bool:
            # Refused while the group still has members: the lost region's ones expire after session.timeout.ms.
            try:
                admin.alter_consumer_group_offsets([request], request_timeout=ADMIN_TIMEOUT_S)[group].result(
                    ADMIN_TIMEOUT_S
                )
                return True
            except Exception as e:  # noqa: BLE001 - retried until the timeout; the last refusal is in the event log
                errors[:] = [describe_error(e)]
                return False

        try:
            ctx.wait(altered, GROUP_EMPTY_TIMEOUT_S, "")
        except WaitTimeout as e:
            raise ScenarioFailed(
                f"could not set {group}'s offsets on the primary to the log end within {GROUP_EMPTY_TIMEOUT_S:g}s: "
                f"{errors[-1] if errors else 'no answer'}"
            ) from e
        ctx.event(f"failback: {group}'s offsets on the primary's own {', '.join(topics)} set to the log end")

    def _wait_caught_up(
        self, ctx: RunContext, bootstrap: str, ends: Mapping[tuple[str, int], int], timeout_s: float
    ) -> None:
        """Every group has read each partition to its end, or, where it read nothing, committed the end.

        A group that starts at the end of a partition (synced offsets already there) never reads a record of it, so its
        committed offset is the only sign that it is caught up there.
        """
        pool, admin = self._pool(), new_admin(bootstrap)

        def caught_up() -> bool:
            read = pool.read_upto_by_group()
            for group in self._groups():
                # Reads of an earlier stint count too; where the group read nothing up to the end, its committed offset
                # decides.
                behind = {tp: end for tp, end in ends.items() if end > 0 and read.get(group, {}).get(tp, -1) < end - 1}
                committed = _committed(admin, group, behind) if behind else {}
                if any(committed.get(tp, -1) < end for tp, end in behind.items()):
                    return False
            return True

        ctx.wait(
            lambda: not pool.live_consumers() or caught_up(),
            timeout_s,
            f"the group did not read up to the log end within {timeout_s:g}s",
        )

    def _topics_on(self, alias: str) -> list[str]:
        other = BACKUP if alias == PRIMARY else PRIMARY
        return [*self._own_topics(), *(MirrorFlow(other, alias).remote_topic(t) for t in self._own_topics())]

    def _own_topics(self) -> list[str]:
        return [t.name for t in self.scenario.topics]

    def _groups(self) -> list[str]:
        return sorted({c.group for c in self.scenario.consumers if c.group})

    def _pool(self) -> WorkerPool:
        assert self.pool is not None, "setup() comes first"
        return self.pool


def _partitions(bootstrap: str, topics: list[str]) -> list[tuple[str, int]]:
    return [(t, p) for t, n in partitions_of(bootstrap, topics).items() for p in range(n)]


def _committed(admin, group: str, ends: Mapping[tuple[str, int], int]) -> dict[tuple[str, int], int]:
    request = ConsumerGroupTopicPartitions(group, [TopicPartition(t, p) for t, p in ends])
    try:
        result = admin.list_consumer_group_offsets([request], request_timeout=ADMIN_TIMEOUT_S)[group].result(
            ADMIN_TIMEOUT_S
        )
    except Exception:  # noqa: BLE001 - not synced yet, or the coordinator is loading: the caller waits
        return {}
    return {
        (tp.topic, tp.partition): tp.offset for tp in result.topic_partitions if tp.error is None and tp.offset >= 0
    }


def _forget_mirroring(bootstrap: str, topics: list[str]) -> None:
    """Delete what MirrorMaker left from an earlier run: mirrored copies of ``topics``, its checkpoints, offset syncs,
    heartbeats and its Connect topics, so no stale checkpoint translates this run's group."""
    admin = new_admin(bootstrap)
    names = set(admin.list_topics(timeout=ADMIN_TIMEOUT_S).topics)
    mirrored = {f"{alias}.{t}" for alias in (PRIMARY, BACKUP) for t in topics}
    stale = sorted(
        n for n in names if n in mirrored or n.startswith("mm2-") or n.endswith((".checkpoints.internal", "heartbeats"))
    )
    if stale:
        setup.delete_topics(admin, stale)
