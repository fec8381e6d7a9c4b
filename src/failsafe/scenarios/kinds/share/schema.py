"""Share-group scenarios (KIP-932): the lab's topics, producers and consumers, with share consumers.

    [[share_consumers]]  name, topics, group, count, processing_ms, release_per_mille, reject_per_mille, properties,
                         driver ("failsafe": confluent-kafka's ShareConsumer; "kafka-verifiable": Kafka's
                         VerifiableShareConsumer, one topic, every record accepted, no delivery counts)
    [share_groups.NAME]  the group's dynamic configs (kafka-configs --entity-type groups), e.g.
                         "share.record.lock.duration.ms" = "15000"

Every share group starts at ``share.auto.offset.reset = "earliest"`` unless its table says otherwise (Kafka's default,
latest, would skip what the producers wrote before the group's first member joined). The share checker judges lock
expiry with the groups' ``share.record.lock.duration.ms`` (else the cluster's ``group.share.record.lock.duration.ms``,
else Kafka's 30 s) and archiving with their ``share.delivery.count.limit``, each as the cluster describes it for the
group when the run is set up (a ``group-config`` op)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any

from failsafe.checkers.share.deliveries import LOCK_SLACK_MS
from failsafe.cluster.spec import KRAFT_MODE, ZOOKEEPER_MODE
from failsafe.faults import Need
from failsafe.faults.nodes import CONSUMER_GROUPS
from failsafe.history.ops import Role, declared_client
from failsafe.scenarios.base import (
    MAX_WORKERS,
    KindInfo,
    fail,
    group_name,
    refuse_unknown,
    scenario_name,
    str_dict,
    tables,
    take,
    topic_names,
    worker_name,
)
from failsafe.scenarios.kit.clients import DRIVERS, ClientsScenario, parse_clients
from failsafe.scenarios.kit.clients import TOP as KIT_TOP

TOP = KIT_TOP | {"share_consumers", "share_groups"}
AUTO_OFFSET_RESET = "share.auto.offset.reset"
LOCK_DURATION = "share.record.lock.duration.ms"
DELIVERY_COUNT_LIMIT = "share.delivery.count.limit"
# The broker's defaults of the same (group.share.*), and Kafka's own.
BROKER_SETTINGS = {
    LOCK_DURATION: ("group.share.record.lock.duration.ms", 30_000),
    DELIVERY_COUNT_LIMIT: ("group.share.delivery.count.limit", 5),
}
# The settings the share checker judges by, which the kind records as the cluster describes them
# (checkers/share/deliveries.py).
JUDGED_SETTINGS = (LOCK_DURATION, DELIVERY_COUNT_LIMIT)
# Long enough for a killed member's records to come back after their lock: the drain waits for every record to be
# accepted or rejected, by this much more than the lock duration.
DRAIN_MARGIN_S = 30.0


@dataclass(frozen=True)
class ShareConsumers:
    name: str
    topics: tuple[str, ...]
    group: str
    count: int = 1
    # Records (chosen by where they are, alike in every member) released at their first delivery, or rejected.
    release_per_mille: int = 0
    reject_per_mille: int = 0
    # How long each batch is worked on before it is acknowledged: the records a member holds meanwhile.
    processing_ms: int = 0
    properties: dict[str, str] = field(default_factory=dict)
    driver: str = "failsafe"

    def processes(self) -> list[str]:
        return [f"{self.name}-{i}" for i in range(self.count)]


@dataclass(frozen=True)
class ShareScenario(ClientsScenario):
    share_consumers: tuple[ShareConsumers, ...] = ()
    # Each share group's dynamic configs, with share.auto.offset.reset filled in.
    share_groups: dict[str, dict[str, str]] = field(default_factory=dict)

    def share_setting(self, name: str) -> int:
        """The groups' value of ``name`` (the highest, when they differ), else the cluster's, else Kafka's default."""
        values = {int(configs[name]) for configs in self.share_groups.values() if name in configs}
        if values:
            return max(values)
        broker, default = BROKER_SETTINGS[name]
        return int(self.cluster.overrides.get(broker, default))

    def declared_clients(self) -> list[dict[str, Any]]:
        return [
            *super().declared_clients(),
            *(
                declared_client(n, Role.SHARE_CONSUMER, topics=c.topics, group=c.group, matches=self.incarnations(n))
                for c in self.share_consumers
                for n in c.processes()
            ),
        ]

    def manifest(self) -> dict[str, Any]:
        manifest = super().manifest()
        names = [n for c in self.share_consumers for n in c.processes()]
        return {
            **manifest,
            "share_consumers": [asdict(c) for c in self.share_consumers],
            "share_groups": self.share_groups,
            "client_logs": {**manifest["client_logs"], **{n: f"logs/{n}.client.log" for n in names}},
        }


def _per_mille(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 1000:
        raise ValueError("must be a whole number from 0 to 1000")
    return value


def _group_tables(value: object, where: str) -> dict[str, dict[str, str]]:
    if not isinstance(value, dict):
        raise fail(f"{where}.share_groups", "must be a table of groups, e.g. [share_groups.queue]")
    out = {}
    for group, configs in value.items():
        try:
            out[group] = str_dict(configs)
        except (TypeError, ValueError) as e:
            raise fail(f"{where}.share_groups.{group}", str(e)) from None
        wrong = [k for k in out[group] if not k.startswith("share.")]
        if wrong:
            raise fail(
                f"{where}.share_groups.{group}",
                f"{wrong[0]!r} is not a share group's config (they start with 'share.', "
                "e.g. share.record.lock.duration.ms)",
            )
    return out


def parse_share(data: dict, kind: KindInfo) -> ShareScenario:
    name = scenario_name(data)
    refuse_unknown(data, name, TOP)
    members = tuple(
        take(
            c,
            f"{name}.share_consumers[{i}]",
            ShareConsumers,
            ("name", "topics", "group"),
            {
                "name": worker_name,
                "group": group_name,
                "topics": topic_names,
                "properties": str_dict,
                "release_per_mille": _per_mille,
                "reject_per_mille": _per_mille,
            },
        )
        for i, c in enumerate(tables(data, "share_consumers", name))
    )
    configs = _group_tables(data.get("share_groups", {}), name)
    groups = {c.group: {AUTO_OFFSET_RESET: "earliest", **configs.get(c.group, {})} for c in members}
    kit_data = {k: v for k, v in data.items() if k not in ("share_consumers", "share_groups")}
    processes = tuple(n for c in members for n in c.processes())
    scenario = parse_clients(
        kit_data,
        kind,
        ShareScenario,
        TOP,
        clients={Need.CONSUMERS: processes, CONSUMER_GROUPS: tuple(groups)},
        share_consumers=members,
        share_groups=groups,
    )
    # What scenario.json stores, so that a stored run is parsed again whole (failsafe check): every table, not the lab's
    # alone.
    scenario = replace(scenario, raw=data)
    _validate(scenario, configs)
    # Share groups are Kafka 4's, on KRaft: a run asking for ZooKeeper mode (--mode zookeeper) is refused before
    # anything starts.
    return (
        replace(scenario, cluster=replace(scenario.cluster, mode=KRAFT_MODE)) if not scenario.cluster.mode else scenario
    )


def _validate(s: ShareScenario, configs: dict[str, dict[str, str]]) -> None:
    where = s.name
    if not s.share_consumers:
        raise fail(where, "a share scenario needs [[share_consumers]]")
    if s.cluster.mode == ZOOKEEPER_MODE:
        raise fail(
            f"{where}.cluster.mode",
            "share groups (KIP-932) are Kafka 4's, on KRaft: a ZooKeeper-mode cluster (Kafka 3.9) has none",
        )
    topics = {t.name for t in s.topics}
    for i, c in enumerate(s.share_consumers):
        if not c.topics or any(t not in topics for t in c.topics):
            raise fail(
                f"{where}.share_consumers[{i}].topics",
                f"{list(c.topics)!r} must name the scenario's topics {sorted(topics)}",
            )
        if not 1 <= c.count <= MAX_WORKERS:
            raise fail(f"{where}.share_consumers[{i}].count", f"{c.count} must be between 1 and {MAX_WORKERS}")
        if c.processing_ms < 0:
            raise fail(f"{where}.share_consumers[{i}].processing_ms", f"{c.processing_ms} must not be negative")
        if c.release_per_mille + c.reject_per_mille > 1000:
            raise fail(
                f"{where}.share_consumers[{i}]", "release_per_mille and reject_per_mille add up to more than 1000"
            )
        if c.group in {g.group for g in s.consumers}:
            raise fail(
                f"{where}.share_consumers[{i}].group",
                f"{c.group!r} is a consumer group of [[consumers]]: a group is one or the other",
            )
        if c.driver not in DRIVERS:
            raise fail(f"{where}.share_consumers[{i}].driver", f"{c.driver!r} is not one of {', '.join(DRIVERS)}")
        if c.driver == "kafka-verifiable" and (
            len(c.topics) != 1 or c.processing_ms or c.release_per_mille or c.reject_per_mille
        ):
            raise fail(
                f"{where}.share_consumers[{i}]",
                "Kafka's VerifiableShareConsumer (driver kafka-verifiable) reads one topic and "
                "accepts every record at once: no processing_ms, release_per_mille or reject_per_mille",
            )
    unknown = sorted(set(configs) - set(s.share_groups))
    if unknown:
        raise fail(f"{where}.share_groups.{unknown[0]}", f"no [[share_consumers]] is in group {unknown[0]!r}")
    for setting in JUDGED_SETTINGS:
        values = {g: c[setting] for g, c in s.share_groups.items() if setting in c}
        for group, value in values.items():
            if not value.isdigit() or int(value) < 1:
                raise fail(f"{where}.share_groups.{group}.{setting}", f"{value!r} must be a positive whole number")
    names = [p.name for p in s.producers] + [c.name for c in s.consumers] + [c.name for c in s.share_consumers]
    if len(names) != len(set(names)):
        raise fail(where, f"producer, consumer and share consumer names must be unique: {names}")
    for setting, (broker, _) in BROKER_SETTINGS.items():
        value = s.cluster.overrides.get(broker)
        if value is not None and not str(value).isdigit():
            raise fail(
                f"{where}.cluster.overrides.{broker}",
                f"{value!r} must be a whole number (the default of every group's {setting})",
            )
    for group, configs in s.share_groups.items():
        reset = configs[AUTO_OFFSET_RESET]
        if reset not in ("earliest", "latest") and not reset.startswith("by_duration:"):
            raise fail(
                f"{where}.share_groups.{group}.{AUTO_OFFSET_RESET}",
                f"{reset!r} must be earliest, latest or by_duration:DURATION",
            )
    if s.share_setting(LOCK_DURATION) <= LOCK_SLACK_MS:
        raise fail(
            f"{where}.share_groups",
            f"a {LOCK_DURATION} of {s.share_setting(LOCK_DURATION)} ms leaves the checker nothing to judge lock "
            f"expiry by: it must exceed {LOCK_SLACK_MS} ms (Kafka's minimum is 15000)",
        )
    lock_s = s.share_setting(LOCK_DURATION) / 1000
    if s.phases.drain_timeout_s < lock_s + DRAIN_MARGIN_S:
        raise fail(
            f"{where}.phases.drain_timeout_s",
            f"{s.phases.drain_timeout_s:g} s is too short to see a killed member's records delivered again: make it "
            f"at least the lock duration plus {DRAIN_MARGIN_S:g} s ({lock_s + DRAIN_MARGIN_S:g} s)",
        )
