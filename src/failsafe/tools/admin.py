"""One way to build a confluent-kafka AdminClient, and to tell "nobody answered" apart."""

from __future__ import annotations

import logging

from confluent_kafka import IsolationLevel, KafkaError, KafkaException, TopicCollection, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ClusterMetadata,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    OffsetSpec,
    ResourceType,
)

from failsafe.errors import BrokerUnreachable, KafkaClientError
from failsafe.tools import connections
from failsafe.tools.errors import describe_error
from failsafe.tools.retry import retrying
from failsafe.tools.security import ClientSecurityError

__all__ = ["describe_error"]  # where the run path has always taken it from

DEFAULT_TIMEOUT_S = 10.0

# librdkafka logs every refused connection; route that into Python logging, silent by default.
_librdkafka_log = logging.getLogger("failsafe.librdkafka")
_librdkafka_log.addHandler(logging.NullHandler())
_librdkafka_log.propagate = False


def client_config(bootstrap_servers: str, user: str = connections.ADMIN, **extra: object) -> dict[str, object]:
    """A librdkafka client's configuration, as failsafe's ``user`` on a secured cluster (tools/connections.py): the
    admin user unless the client is a workload's."""
    return connections.secured({"bootstrap.servers": bootstrap_servers, "logger": _librdkafka_log, **extra}, user)


def new_admin(bootstrap_servers: str, **extra: object) -> AdminClient:
    return AdminClient(client_config(bootstrap_servers, **extra))


# What librdkafka says when a broker refused the client's credentials or the TLS handshake failed: no retry mends it.
REFUSALS = (KafkaError._AUTHENTICATION, KafkaError._SSL, KafkaError.SASL_AUTHENTICATION_FAILED)


def check_access(bootstrap_servers: str, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
    """Metadata from the cluster at ``bootstrap_servers`` as failsafe's admin user sees it, or one line: the broker's
    refusal of the client's settings (ClientSecurityError, exit 2: a wrong password, an untrusted certificate), else
    that nobody answered. What the refusal says holds no secret (librdkafka names the mechanism, not the password)."""
    refusals: list[KafkaError] = []
    admin = AdminClient(
        client_config(bootstrap_servers, error_cb=lambda e: refusals.append(e) if e.code() in REFUSALS else None)
    )
    try:
        admin.list_topics(timeout=timeout_s)
    except KafkaException as e:
        admin.poll(0.5)  # serves error_cb with what went wrong on the connections
        if refusals:
            raise ClientSecurityError(
                f"the cluster at {bootstrap_servers} refused failsafe's client: {refusals[0].str()}"
            ) from None
        raise unreachable(bootstrap_servers, timeout_s, e) from e


def fetch_metadata(
    admin: AdminClient, bootstrap_servers: str, timeout_s: float, topic: str | None = None
) -> ClusterMetadata:
    """Cluster metadata, or one clear error when no broker answered in time."""
    try:
        return admin.list_topics(topic=topic, timeout=timeout_s)
    except KafkaException as e:
        raise unreachable(bootstrap_servers, timeout_s, e) from e


def unreachable(bootstrap_servers: str, timeout_s: float, cause: Exception) -> KafkaClientError:
    err = cause.args[0] if cause.args and isinstance(cause.args[0], KafkaError) else None
    if err is not None and err.code() in (KafkaError._TRANSPORT, KafkaError._TIMED_OUT, KafkaError._ALL_BROKERS_DOWN):
        return BrokerUnreachable(
            f"no Kafka broker answered at {bootstrap_servers} within {timeout_s:g}s: "
            "start the cluster ('failsafe up') or pass the right --bootstrap-server"
        )
    return KafkaClientError(f"Kafka at {bootstrap_servers}: {describe_error(cause)}")


def log_end_offsets(
    bootstrap_servers: str, partitions: list[tuple[str, int]], timeout_s: float = 30.0, committed: bool = False
) -> dict[tuple[str, int], int]:
    """Each partition's log end offset (ListOffsets latest), or one clear error. ``committed``: asked at read_committed,
    so the last stable offset (below the first record of a transaction still open)."""
    if not partitions:
        return {}
    # The admin client must outlive its futures: a client collected early never completes them.
    admin = new_admin(bootstrap_servers)
    isolation = IsolationLevel.READ_COMMITTED if committed else IsolationLevel.READ_UNCOMMITTED

    def ask() -> dict[tuple[str, int], int]:
        futures = admin.list_offsets(
            {TopicPartition(t, p): OffsetSpec.latest() for t, p in partitions},
            request_timeout=timeout_s,
            isolation_level=isolation,
        )
        return {(tp.topic, tp.partition): future.result(timeout=timeout_s + 5).offset for tp, future in futures.items()}

    # Right after a leader change a broker may answer UNKNOWN_LEADER_EPOCH or NOT_LEADER_OR_FOLLOWER: asked again, not
    # an end.
    try:
        return retrying(
            ask, f"the log end offsets of {len(partitions)} partitions at {bootstrap_servers}", 2 * timeout_s
        )
    except KafkaException as e:
        raise KafkaClientError(f"cannot read the log end offsets at {bootstrap_servers}: {describe_error(e)}") from e


_URL_SAFE = str.maketrans("+/", "-_")


def kafka_uuid(printed: object) -> str:
    """A Uuid as Kafka writes it (URL-safe base64, no padding) from confluent-kafka's (standard base64)."""
    return str(printed).translate(_URL_SAFE)


def topic_id(bootstrap_servers: str, topic: str, timeout_s: float = DEFAULT_TIMEOUT_S) -> str:
    """The topic's id as Kafka writes it (Uuid.toString: URL-safe base64, no padding), or one clear error.

    confluent-kafka's Uuid prints standard base64 ('+' and '/' where Kafka has '-' and '_'): a key built from that
    string hashes elsewhere than Kafka's."""
    admin = new_admin(bootstrap_servers)
    try:
        described = admin.describe_topics(TopicCollection([topic]), request_timeout=timeout_s)[topic].result(
            timeout=timeout_s + 5
        )
        return kafka_uuid(described.topic_id)
    except KafkaException as e:
        raise KafkaClientError(f"cannot describe topic {topic} at {bootstrap_servers}: {describe_error(e)}") from e
    except TimeoutError as e:
        raise KafkaClientError(
            f"topic {topic} was not described within {timeout_s + 5:g}s by {bootstrap_servers}"
        ) from e


def _no_group_configs(e: KafkaException) -> bool:
    """Whether DescribeConfigs was refused because the broker has no GROUP config resource: a ZooKeeper-mode broker
    answers INVALID_REQUEST, one older than group configs UNSUPPORTED_VERSION."""
    error = e.args[0] if e.args and isinstance(e.args[0], KafkaError) else None
    return error is not None and error.code() in (
        KafkaError.INVALID_REQUEST,
        KafkaError._UNSUPPORTED_FEATURE,
        KafkaError.UNSUPPORTED_VERSION,
    )


def describe_group_configs(bootstrap_servers: str, group: str, timeout_s: float = DEFAULT_TIMEOUT_S) -> dict[str, str]:
    """A group's configs as the cluster describes them: every one in force (its own, else the broker's group.*
    default)."""
    admin = new_admin(bootstrap_servers)
    try:
        described = admin.describe_configs([ConfigResource(ResourceType.GROUP, group)], request_timeout=timeout_s)
        found = next(iter(described.values())).result(timeout=timeout_s + 5)
    except KafkaException as e:
        raise KafkaClientError(f"cannot read group {group}'s configs: {describe_error(e)}") from e
    except TimeoutError as e:
        raise KafkaClientError(
            f"group {group}'s configs were not described within {timeout_s + 5:g}s by {bootstrap_servers}"
        ) from e
    return {name: entry.value for name, entry in found.items() if entry.value is not None}


def set_group_configs(
    bootstrap_servers: str, group: str, configs: dict[str, str], timeout_s: float = DEFAULT_TIMEOUT_S
) -> None:
    """Make ``configs`` a group's only dynamic configs (``share.auto.offset.reset``, ``share.record.lock.duration.ms``,
    ``consumer.session.timeout.ms``, ...), as ``kafka-configs.sh --entity-type groups --alter`` does: the others are
    deleted, since Kafka keeps a group's configs when the group itself is deleted. One clear error naming what Kafka
    refused. A coordinator not ready yet (a cluster just started, a broker just back) is asked again
    (tools/retry.py)."""
    retrying(
        lambda: _set_group_configs_once(bootstrap_servers, group, configs, timeout_s),
        f"setting group {group}'s configs",
    )


def _set_group_configs_once(bootstrap_servers: str, group: str, configs: dict[str, str], timeout_s: float) -> None:
    admin = new_admin(bootstrap_servers)
    try:
        current = admin.describe_configs([ConfigResource(ResourceType.GROUP, group)], request_timeout=timeout_s)
        found = next(iter(current.values())).result(timeout=timeout_s + 5)
    except KafkaException as e:
        if not configs and _no_group_configs(e):
            return  # a broker without group configs (ZooKeeper mode) keeps none to clear
        raise KafkaClientError(f"cannot read group {group}'s configs: {describe_error(e)}") from e
    except TimeoutError as e:
        raise KafkaClientError(
            f"group {group}'s configs were not described within {timeout_s + 5:g}s by {bootstrap_servers}"
        ) from e
    stale = sorted(
        name for name, entry in found.items() if entry.source == ConfigSource.GROUP_CONFIG.value and name not in configs
    )
    entries = [ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET) for name, value in configs.items()]
    entries += [ConfigEntry(name, "", incremental_operation=AlterConfigOpType.DELETE) for name in stale]
    if not entries:
        return
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=entries)
    try:
        admin.incremental_alter_configs([resource], request_timeout=timeout_s)[resource].result(timeout=timeout_s + 5)
    except KafkaException as e:
        raise KafkaClientError(f"Kafka refused group {group}'s configs {configs}: {describe_error(e)}") from e
    except TimeoutError as e:
        raise KafkaClientError(
            f"group {group}'s configs were not set within {timeout_s + 5:g}s by {bootstrap_servers}"
        ) from e
