"""Topics through the Admin API, described exactly as kafka-topics.sh --describe prints them."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass

from confluent_kafka import KafkaError, KafkaException, TopicCollection
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource, NewTopic, ResourceType

from failsafe.errors import KafkaClientError, UserError
from failsafe.tools.admin import DEFAULT_TIMEOUT_S, describe_error, fetch_metadata, new_admin

# Kafka's Topic.validate: legal characters and the 249-character limit.
_LEGAL_TOPIC = re.compile(r"[a-zA-Z0-9._-]+")
MAX_TOPIC_NAME_LENGTH = 249
READ_ATTEMPT_S = 2.0


def validate_topic_name(name: str) -> None:
    if name in ("", ".", ".."):
        raise UserError(f"topic name {name!r} is not allowed: use letters, digits, '.', '_' or '-'")
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        raise UserError(
            f"topic name is {len(name)} characters long, Kafka allows {MAX_TOPIC_NAME_LENGTH}: choose a shorter one"
        )
    if not _LEGAL_TOPIC.fullmatch(name):
        bad = sorted(set(re.sub(r"[a-zA-Z0-9._-]", "", name)))
        raise UserError(
            f"topic name {name!r} has illegal characters {''.join(bad)!r}: use only letters, digits, '.', '_' and '-'"
        )


@dataclass(frozen=True)
class PartitionInfo:
    partition: int
    leader: int | None
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


@dataclass(frozen=True)
class TopicInfo:
    name: str
    topic_id: str
    partitions: tuple[PartitionInfo, ...]
    configs: tuple[tuple[str, str], ...]

    @property
    def replication_factor(self) -> int:
        return len(self.partitions[0].replicas) if self.partitions else 0

    @property
    def may_have_elr(self) -> bool:
        """Eligible leader replicas (KIP-966) exist only where the ISR lost a replica: under-replicated or
        leaderless."""
        return any(p.leader is None or len(p.isr) < len(p.replicas) for p in self.partitions)


class Topics:
    def __init__(self, bootstrap_servers: str, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self.bootstrap_servers = bootstrap_servers
        self.timeout_s = timeout_s
        self.admin: AdminClient = new_admin(bootstrap_servers)

    def _result(self, future, what: str):
        try:
            return future.result(timeout=self.timeout_s)
        except KafkaException as e:
            raise KafkaClientError(f"{what}: {describe_error(e)}") from e
        except TimeoutError as e:
            raise KafkaClientError(
                f"{what}: no answer within {self.timeout_s:g}s (is the controller quorum up?)"
            ) from e

    def broker_ids(self) -> list[int]:
        return sorted(fetch_metadata(self.admin, self.bootstrap_servers, self.timeout_s).brokers)

    def list(self) -> list[str]:
        return sorted(fetch_metadata(self.admin, self.bootstrap_servers, self.timeout_s).topics)

    def create(self, name: str, partitions: int, replication_factor: int, configs: dict[str, str]) -> None:
        validate_topic_name(name)
        if partitions < 1:
            raise UserError(f"--partitions {partitions}: a topic needs at least 1 partition")
        brokers = self.broker_ids()
        if replication_factor < 1 or replication_factor > len(brokers):
            raise UserError(
                f"--replication-factor {replication_factor} is not possible with {len(brokers)} live brokers "
                f"({', '.join(map(str, brokers))}): use 1 to {len(brokers)}"
            )
        futures = self.admin.create_topics(
            [NewTopic(name, partitions, replication_factor, config=configs)], request_timeout=self.timeout_s
        )
        self._result(futures[name], f"cannot create topic {name}")

    def delete(self, name: str, missing_ok: bool = False) -> None:
        """Delete ``name``; with ``missing_ok`` a topic already gone (UNKNOWN_TOPIC_OR_PART) is not an error: a broker's
        metadata can still list a topic whose deletion the controller has finished."""
        futures = self.admin.delete_topics([name], request_timeout=self.timeout_s)
        try:
            self._result(futures[name], f"cannot delete topic {name}")
        except KafkaClientError as e:
            cause = e.__cause__
            if not (
                missing_ok
                and isinstance(cause, KafkaException)
                and cause.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART
            ):
                raise

    def alter(self, name: str, configs: dict[str, str]) -> None:
        """Incremental SET of topic configs (what kafka-configs.sh --alter --add-config does)."""
        from confluent_kafka.admin import AlterConfigOpType, ConfigEntry

        resource = ConfigResource(
            ResourceType.TOPIC,
            name,
            incremental_configs=[
                ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in configs.items()
            ],
        )
        futures = self.admin.incremental_alter_configs([resource])
        self._result(futures[resource], f"cannot alter topic {name}")

    def _read_with_retry(self, what: str, request: Callable[[AdminClient, float], dict]) -> dict:
        """A read-only admin request, retried on a fresh client when it times out.

        librdkafka sends DescribeTopics and DescribeConfigs to the broker that metadata names as
        controller, which in KRaft is a random live broker. Right after a broker dies, and until
        it is fenced, it can still be named and the request hangs. A fresh client gets fresh
        metadata, so each attempt is short and uses a new one."""
        deadline = time.monotonic() + self.timeout_s
        admin = self.admin
        while True:
            attempt_s = min(READ_ATTEMPT_S, max(0.1, deadline - time.monotonic()))
            futures = request(admin, attempt_s)
            try:
                result = {key: future.result(timeout=attempt_s + 1) for key, future in futures.items()}
                self.admin = admin
                return result
            except KafkaException as e:
                err = e.args[0] if e.args else None
                timed_out = isinstance(err, KafkaError) and err.code() in (
                    KafkaError._TIMED_OUT,
                    KafkaError.REQUEST_TIMED_OUT,
                )
                if not timed_out or time.monotonic() >= deadline:
                    raise KafkaClientError(f"cannot {what}: {describe_error(e)}") from e
            except TimeoutError as e:
                if time.monotonic() >= deadline:
                    raise KafkaClientError(f"cannot {what}: no answer within {self.timeout_s:g}s") from e
            admin = new_admin(self.bootstrap_servers)

    def describe(self, names: list[str] | None = None) -> list[TopicInfo]:
        names = sorted(names) if names else self.list()
        if not names:
            return []
        for name in names:
            validate_topic_name(name)
        descriptions = self._read_with_retry(
            f"describe topics {', '.join(names)}",
            lambda admin, t: admin.describe_topics(TopicCollection(names), request_timeout=t),
        )
        configs = self._read_with_retry(
            f"describe the configs of topics {', '.join(names)}",
            lambda admin, t: {
                r.name: f
                for r, f in admin.describe_configs(
                    [ConfigResource(ResourceType.TOPIC, n) for n in names], request_timeout=t
                ).items()
            },
        )
        out = []
        for name in names:
            desc = descriptions[name]
            entries = configs[name]
            out.append(
                TopicInfo(
                    name=name,
                    topic_id=kafka_uuid(str(desc.topic_id)),
                    partitions=tuple(
                        PartitionInfo(
                            p.id,
                            p.leader.id if p.leader is not None else None,
                            tuple(r.id for r in p.replicas),
                            tuple(r.id for r in p.isr),
                        )
                        for p in sorted(desc.partitions, key=lambda p: p.id)
                    ),
                    configs=_topic_configs(entries),
                )
            )
        return out


def _topic_configs(entries: dict) -> tuple[tuple[str, str], ...]:
    """The configs kafka-topics.sh shows: every one not at Kafka's default (set on the topic,
    on the brokers, or cluster-wide, like the min.insync.replicas a 4.x controller sets), in
    the order the broker returned them."""
    return tuple(
        (name, "null" if entry.value is None else entry.value)
        for name, entry in entries.items()
        if entry.source != ConfigSource.DEFAULT_CONFIG.value
    )


def kafka_uuid(text: str) -> str:
    """librdkafka prints a Uuid in standard base64; Kafka prints it base64url, unpadded."""
    return text.replace("+", "-").replace("/", "_").rstrip("=")


def format_describe(
    topic: TopicInfo, elr_known: bool = True, elr: dict[tuple[str, int], tuple[str, str]] | None = None
) -> str:
    """The exact text of kafka-topics.sh --describe (Kafka 4.x and 3.9) for one topic.

    ``elr_known`` False: the brokers cannot describe eligible leader replicas (ZooKeeper mode has no
    DescribeTopicPartitions), and Kafka 3.9's tool prints ``Elr: N/A`` there. ``elr``: the eligible
    leader replicas Kafka's own describe gave, per partition; a partition not in it has none.
    """
    none = "" if elr_known else "N/A"
    configs = ",".join(f"{k}={v}" for k, v in topic.configs)
    lines = [
        f"Topic: {topic.name}\tTopicId: {topic.topic_id}\tPartitionCount: {len(topic.partitions)}\t"
        f"ReplicationFactor: {topic.replication_factor}\tConfigs: {configs}"
    ]
    for p in topic.partitions:
        leader = str(p.leader) if p.leader is not None else "none"
        eligible, last_known = (elr or {}).get((topic.name, p.partition), (none, none))
        lines.append(
            f"\tTopic: {topic.name}\tPartition: {p.partition}\tLeader: {leader}\t"
            f"Replicas: {','.join(map(str, p.replicas))}\tIsr: {','.join(map(str, p.isr))}\tElr: "
            f"{eligible}\tLastKnownElr: {last_known}"
        )
    return "\n".join(lines)
