"""The librdkafka transactional session's rule for which errors mean fenced (stop, a zombie) and which replace the
producer."""

from __future__ import annotations

import io
import threading

import pytest
from confluent_kafka import KafkaError

from failsafe.history.recorder import OpWriter
from failsafe.workloads.txn.session import SUPERSEDED, Fenced, TxnSession


def session() -> tuple[TxnSession, list[str]]:
    s = TxnSession({"transactional.id": "writer-0"}, OpWriter(io.BytesIO(), "writer-0"), threading.Event(), 1.0)
    replaced: list[str] = []
    s.replace = lambda: replaced.append("replaced")  # type: ignore[method-assign]
    return s, replaced


@pytest.fixture
def superseded():
    SUPERSEDED.set()
    yield
    SUPERSEDED.clear()


@pytest.mark.parametrize("code", [KafkaError._FENCED, KafkaError.PRODUCER_FENCED])
def test_a_worker_a_newer_instance_superseded_stops_when_fenced(code: int, superseded) -> None:
    s, replaced = session()
    with pytest.raises(Fenced, match="writer-0 was fenced"):
        s._fatal_or_replace(KafkaError(code, fatal=True))
    assert replaced == []


def test_a_fence_without_a_newer_instance_replaces_the_producer() -> None:
    # librdkafka says _FENCED also when the coordinator aborted a transaction that outlived its timeout (a coordinator
    # killed for longer than transaction.timeout.ms): no other instance holds the id, so this one goes on with a new
    # producer.
    s, replaced = session()
    s._fatal_or_replace(KafkaError(KafkaError._FENCED, fatal=True))
    assert replaced == ["replaced"]


@pytest.mark.parametrize(
    "error",
    [
        KafkaError(KafkaError.INVALID_PRODUCER_EPOCH, fatal=True),
        KafkaError(KafkaError.INVALID_PRODUCER_EPOCH),
        KafkaError(KafkaError._TIMED_OUT, retriable=True),
        KafkaError(KafkaError.TRANSACTION_ABORTABLE),
    ],
)
def test_an_epoch_bumped_by_a_timed_out_transaction_or_another_error_replaces_the_producer(error: KafkaError) -> None:
    # The coordinator bumps the epoch when it aborts a transaction that outlived transaction.timeout.ms: not a fence.
    s, replaced = session()
    s._fatal_or_replace(error)
    assert replaced == ["replaced"]


@pytest.mark.parametrize(
    ("error", "what"),
    [
        (KafkaError(KafkaError._TIMED_OUT, retriable=True), "was superseded: TIMED_OUT"),
        (KafkaError(KafkaError.INVALID_PRODUCER_EPOCH), "was fenced: INVALID_PRODUCER_EPOCH"),
    ],
)
def test_a_superseded_worker_stops_on_any_error_rather_than_fence_the_newer_instance(
    error: KafkaError, what: str, superseded
) -> None:
    # Campaign txn-librdkafka-tv1, seed 2913, run 44: the zombie writer-0's commit timed out after its SIGCONT, it
    # opened a new producer, and its init_transactions fenced writer-0.1, the instance that had replaced it.
    s, replaced = session()
    with pytest.raises(Fenced, match=f"writer-0 {what}"):
        s._fatal_or_replace(error)
    with pytest.raises(Fenced, match="no new producer"):
        s.open()
    assert replaced == []
