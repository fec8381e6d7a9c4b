"""Which partition of Kafka's internal topics holds a transactional.id's, a group's or a share-partition's state: its
leader is the coordinator.

Kafka maps the key to a partition with Java's ``String.hashCode``, made non-negative by ``Utils.abs``
(Integer.MIN_VALUE becomes 0), modulo the topic's partition count
(``TransactionStateManager.partitionFor``, ``GroupCoordinatorService.partitionFor``,
``ShareCoordinatorService.partitionFor``). A share group's state of one partition is keyed
``GROUP:TOPIC_ID:PARTITION`` (``SharePartitionKey.asCoordinatorKey``), the topic by its id, not its name.
"""

from __future__ import annotations

from collections.abc import Mapping

TRANSACTION_STATE_TOPIC = "__transaction_state"
CONSUMER_OFFSETS_TOPIC = "__consumer_offsets"
SHARE_GROUP_STATE_TOPIC = "__share_group_state"
# The broker settings that size them, and Kafka's defaults.
PARTITION_COUNT_SETTINGS = {
    TRANSACTION_STATE_TOPIC: "transaction.state.log.num.partitions",
    CONSUMER_OFFSETS_TOPIC: "offsets.topic.num.partitions",
    SHARE_GROUP_STATE_TOPIC: "share.coordinator.state.topic.num.partitions",
}
DEFAULT_PARTITIONS = 50


def java_string_hash(text: str) -> int:
    """Java's String.hashCode: over UTF-16 code units, as a signed 32-bit int."""
    h = 0
    units = text.encode("utf-16-be")
    for i in range(0, len(units), 2):
        h = (31 * h + int.from_bytes(units[i : i + 2], "big")) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def coordinator_partition(key: str, partitions: int = DEFAULT_PARTITIONS) -> int:
    h = java_string_hash(key)
    return (0 if h == -(1 << 31) else abs(h)) % partitions


def coordinator_partition_name(topic: str, key: str, overrides: Mapping[str, str] | None = None) -> str:
    """``__transaction_state-N`` (or ``__consumer_offsets-N``) for ``key``, on a cluster started with ``overrides``."""
    partitions = int((overrides or {}).get(PARTITION_COUNT_SETTINGS[topic], DEFAULT_PARTITIONS))
    return f"{topic}-{coordinator_partition(key, partitions)}"


def share_state_key(group: str, topic_id: str, partition: int) -> str:
    """The key of a share group's state of one partition; ``topic_id`` as Kafka prints it (base64, no padding)."""
    return f"{group}:{topic_id}:{partition}"
