"""Asking Kafka again what it says may succeed if asked again: one wrapper for the admin calls of the run path.

After a fault, and on a cluster just started, Kafka answers admin requests with errors it marks retriable: a leader
epoch newer than the broker's (UNKNOWN_LEADER_EPOCH), a leader or a coordinator that moved (NOT_LEADER_OR_FOLLOWER,
NOT_COORDINATOR), a coordinator still loading, a request that timed out. None of these ends a run: ``retrying`` asks
again until its deadline, then raises one KafkaClientError that names the call and the last answer. Anything else
propagates at once (a topic that does not exist, a refused config)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from confluent_kafka import KafkaException

from failsafe.errors import KafkaClientError
from failsafe.tools import errors
from failsafe.tools.errors import describe_error, kafka_error
from failsafe.waiting import WaitTimeout, wait_until

T = TypeVar("T")
RETRY_TIMEOUT_S = 60.0
RETRY_INTERVAL_S = 0.5


def retriable(error: BaseException) -> bool:
    """errors.retriable, and no answer in time (a future that timed out, itself or as the cause of failsafe's own
    error)."""
    cause: BaseException | None = error
    while cause is not None:
        if isinstance(cause, TimeoutError) and not isinstance(cause, WaitTimeout):
            return True
        cause = cause.__cause__
    return errors.retriable(error)


def retrying(
    call: Callable[[], T], what: str, timeout_s: float = RETRY_TIMEOUT_S, interval_s: float = RETRY_INTERVAL_S
) -> T:
    """``call()``, asked again while it fails with a retriable error, until ``timeout_s``; then one KafkaClientError
    naming ``what`` and the last error. A non-retriable error propagates at once."""
    answers: list[T] = []
    last: list[BaseException] = []

    def attempt() -> bool:
        try:
            answers.append(call())
        except (KafkaException, KafkaClientError, TimeoutError) as e:
            if not retriable(e):
                raise
            last[:] = [e]
            return False
        return True

    try:
        wait_until(attempt, timeout_s, what, poll_interval_s=interval_s)
    except WaitTimeout as e:
        cause = last[0] if last else e
        raise KafkaClientError(
            f"{what}: gave up after {timeout_s:g}s of retriable errors, the last: "
            f"{describe_error(kafka_error(cause) or cause)}"
        ) from cause
    return answers[-1]
