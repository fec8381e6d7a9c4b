"""Kafka's errors as failsafe reads them: named as Kafka names them, and told retriable or not. Imports nothing of
failsafe's."""

from __future__ import annotations

from confluent_kafka import KafkaError, KafkaException

# Retriable by what they say, whatever librdkafka's flag (it does not mark every one of these on every path).
RETRIABLE_CODES = frozenset(
    {
        KafkaError.UNKNOWN_LEADER_EPOCH,
        KafkaError.FENCED_LEADER_EPOCH,
        KafkaError.NOT_LEADER_FOR_PARTITION,
        KafkaError.LEADER_NOT_AVAILABLE,
        KafkaError.NOT_COORDINATOR,
        KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
        KafkaError.COORDINATOR_NOT_AVAILABLE,
        KafkaError.REQUEST_TIMED_OUT,
        KafkaError._TIMED_OUT,
        KafkaError._TRANSPORT,
        KafkaError.NOT_ENOUGH_REPLICAS,
        KafkaError.UNKNOWN_TOPIC_OR_PART,
        KafkaError.OFFSET_NOT_AVAILABLE,
        KafkaError._WAIT_COORD,
    }
)


def describe_error(error: object) -> str:
    """A KafkaError or KafkaException as Kafka names it: 'NOT_ENOUGH_REPLICAS: message'."""
    if isinstance(error, KafkaException) and error.args and isinstance(error.args[0], KafkaError):
        error = error.args[0]
    if isinstance(error, KafkaError):
        name = error.name().lstrip("_")
        text = error.str()
        return f"{name}: {text}" if text and text != name else name
    return str(error)


def kafka_error(error: BaseException | None) -> KafkaError | None:
    """The KafkaError an exception carries, directly or as the cause (at any depth) of failsafe's own."""
    while error is not None:
        if isinstance(error, KafkaException) and error.args and isinstance(error.args[0], KafkaError):
            return error.args[0]
        error = error.__cause__
    return None


def retriable(error: BaseException) -> bool:
    """Whether asking again may succeed: a Kafka error Kafka marks retriable (or one of RETRIABLE_CODES)."""
    found = kafka_error(error)
    return found is not None and (found.retriable() or found.code() in RETRIABLE_CODES)
