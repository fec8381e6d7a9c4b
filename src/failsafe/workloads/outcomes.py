"""Which producer errors prove a write was not appended (``fail``) and which leave it unknown (``info``).

Jepsen's rule: an op is ``fail`` only when it certainly did not take effect. A timeout or a lost
connection may come after the leader appended the batch, so those are ``info``. Kafka's
NOT_ENOUGH_REPLICAS is checked before the append; NOT_ENOUGH_REPLICAS_AFTER_APPEND is not.
"""

from __future__ import annotations

from confluent_kafka import KafkaError

DEFINITE_FAILURES = frozenset(
    {
        KafkaError.NOT_ENOUGH_REPLICAS,
        KafkaError.MSG_SIZE_TOO_LARGE,
        KafkaError.RECORD_LIST_TOO_LARGE,
        KafkaError.INVALID_RECORD,
        KafkaError.INVALID_REQUIRED_ACKS,
        KafkaError.TOPIC_AUTHORIZATION_FAILED,
        KafkaError.CLUSTER_AUTHORIZATION_FAILED,
        KafkaError.UNKNOWN_TOPIC_OR_PART,
        KafkaError._UNKNOWN_TOPIC,
        KafkaError._UNKNOWN_PARTITION,
        KafkaError.TOPIC_EXCEPTION,
    }
)


def error_name(error: KafkaError) -> str:
    return error.name().lstrip("_")


def send_outcome(error: KafkaError) -> str:
    """``fail`` or ``info`` for a delivery report with this error."""
    return "fail" if error.code() in DEFINITE_FAILURES else "info"
