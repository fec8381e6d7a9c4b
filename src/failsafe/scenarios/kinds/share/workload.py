"""The share kind's workload: the lab's producers and consumers, with share consumers (workloads/share/consumer.py).

setup: the topics fresh, the share groups deleted (an earlier run's state would otherwise carry over) and given their
configs. start: the share consumers first, then the lab's consumers and producers, until every share group has
acquired records. drain: producers stopped, then until every share group has had every record of its topics accepted
or rejected (or no reader is left), then the log is read back like the lab's.
"""

from __future__ import annotations

from failsafe.errors import KafkaClientError
from failsafe.faults import FaultError
from failsafe.history.ops import group_config
from failsafe.scenarios.engine import setup
from failsafe.scenarios.engine.plugin import RunContext
from failsafe.scenarios.kinds.share.schema import ShareScenario
from failsafe.scenarios.kit.workload import KAFKA_VERIFIABLE, ClientsWorkload
from failsafe.tools.admin import describe_group_configs, new_admin, set_group_configs
from failsafe.waiting import WaitTimeout, wait_until
from failsafe.workloads.pool import Worker
from failsafe.workloads.share.consumer import ShareConsumerSpec
from failsafe.workloads.share.verifiable import VerifiableShareConsumerSpec

FIRST_DELIVERY_TIMEOUT_S = 60.0
# How long a pause-consumer waits for its share consumer to hold records (acquired, no acknowledgement sent yet).
HOLDING_TIMEOUT_S = 20.0
CONFIGS_APPLIED_TIMEOUT_S = 30.0
# What the share checker judges by, recorded as the cluster describes it for each group (checkers/share/deliveries.py).
RECORDED = ("share.record.lock.duration.ms", "share.delivery.count.limit", "share.auto.offset.reset")


class ShareWorkload(ClientsWorkload):
    def __init__(self, scenario: ShareScenario) -> None:
        super().__init__(scenario)
        self.scenario: ShareScenario = scenario

    def setup(self, ctx: RunContext) -> None:
        super().setup(ctx)
        groups = sorted(self.scenario.share_groups)
        # Only an earlier run's groups: asking a cluster that has none (a new one, its coordinator still loading) to
        # delete them only waits on it.
        stale = sorted(set(groups) & setup.existing_groups(ctx.bootstrap_servers))
        if stale:
            setup.delete_groups(new_admin(ctx.bootstrap_servers), stale)
        for group in groups:
            configs = self.scenario.share_groups[group]
            ctx.event(f"share group {group}: {', '.join(f'{k}={v}' for k, v in sorted(configs.items()))}")
            set_group_configs(ctx.bootstrap_servers, group, configs)
        for group in groups:
            self._record_configs(ctx, group)

    def _record_configs(self, ctx: RunContext, group: str) -> None:
        """The group's settings the checker judges by, as the cluster describes them once the ones set are in force."""
        wanted = self.scenario.share_groups[group]
        described: dict[str, str] = {}

        def applied() -> bool:
            try:
                described.update(describe_group_configs(ctx.bootstrap_servers, group))
            except KafkaClientError:
                return False  # a coordinator still loading: asked again
            return all(described.get(name) == value for name, value in wanted.items())

        ctx.wait(
            applied,
            CONFIGS_APPLIED_TIMEOUT_S,
            f"share group {group}'s configs {wanted} were not in force within {CONFIGS_APPLIED_TIMEOUT_S:g}s",
        )
        ctx.recorder.record(group_config(group, {name: described[name] for name in RECORDED if name in described}))

    def start(self, ctx: RunContext) -> None:
        pool = self._pool()
        for c in self.scenario.share_consumers:
            for process in c.processes():
                spec = ShareConsumerSpec(
                    process=process,
                    topics=c.topics,
                    group=c.group,
                    bootstrap_servers=ctx.bootstrap_servers,
                    properties=c.properties,
                    release_per_mille=c.release_per_mille,
                    reject_per_mille=c.reject_per_mille,
                    processing_ms=c.processing_ms,
                )
                if c.driver == KAFKA_VERIFIABLE:
                    spec = VerifiableShareConsumerSpec(**vars(spec), kafka_version=ctx.kafka_version)
                pool.start(spec)
        super().start(ctx)

        def every_group_delivered() -> bool:
            delivering = {w.spec.group for w in pool.share_consumers() if w.read_upto}
            return delivering >= set(self.scenario.share_groups)

        ctx.wait(
            every_group_delivered,
            FIRST_DELIVERY_TIMEOUT_S,
            f"a share group had no record delivered within {FIRST_DELIVERY_TIMEOUT_S:g}s of the first write",
        )

    def pause_client(self, name: str) -> None:
        """A share consumer is frozen while it holds records, so that their lock is what brings them back: waited for (a
        member of a group just started may not have acquired any yet)."""
        worker = self._pool().workers.get(self.process_of(name))
        if worker is not None and isinstance(worker.spec, ShareConsumerSpec):
            try:
                wait_until(lambda: bool(worker.holding) or not worker.alive(), HOLDING_TIMEOUT_S, "")
            except WaitTimeout:
                raise FaultError(
                    f"share consumer {worker.process} held no record within {HOLDING_TIMEOUT_S:g}s: freezing it would "
                    "show no lock running out"
                ) from None
        super().pause_client(name)

    def readers(self) -> list[Worker]:
        return super().readers() + self._pool().share_consumers()

    def behind(self, ends: dict[tuple[str, int], int]) -> list[str]:
        """The lab's, and GROUP TOPIC-N (settled / log end) for every partition whose records a share group has not all
        accepted or rejected."""
        settled = self._pool().settled_by_group()
        out = super().behind(ends)
        for c in self.scenario.share_consumers:
            done = settled.get(c.group, {})
            out += [
                f"{c.group} {tp[0]}-{tp[1]} ({len(done.get(tp, ()))}/{end} settled)"
                for tp, end in sorted(ends.items())
                if tp[0] in c.topics and end > 0 and len(done.get(tp, ())) < end
            ]
        return sorted(set(out))
