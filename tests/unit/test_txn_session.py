"""The librdkafka transactional session's rule for which errors mean fenced (stop, a zombie) and which replace the producer."""

from __future__ import annotations

import io
import threading

import pytest
from confluent_kafka import KafkaError

from failsafe.history.recorder import OpWriter
from failsafe.workloads.txn_session import Fenced, TxnSession


def session() -> tuple[TxnSession, list[str]]:
    s = TxnSession({"transactional.id": "writer-0"}, OpWriter(io.BytesIO(), "writer-0"), threading.Event(), 1.0)
    replaced: list[str] = []
    s.replace = lambda: replaced.append("replaced")  # type: ignore[method-assign]
    return s, replaced


@pytest.mark.parametrize("code", [KafkaError._FENCED, KafkaError.PRODUCER_FENCED])
def test_a_newer_instance_fences_this_one(code: int) -> None:
    s, replaced = session()
    with pytest.raises(Fenced, match="writer-0 was fenced"):
        s._fatal_or_replace(KafkaError(code, fatal=True))
    assert replaced == []


@pytest.mark.parametrize("error", [KafkaError(KafkaError.INVALID_PRODUCER_EPOCH, fatal=True), KafkaError(KafkaError.INVALID_PRODUCER_EPOCH),
                                   KafkaError(KafkaError._TIMED_OUT, retriable=True), KafkaError(KafkaError.TRANSACTION_ABORTABLE)])
def test_an_epoch_bumped_by_a_timed_out_transaction_or_another_error_replaces_the_producer(error: KafkaError) -> None:
    # The coordinator bumps the epoch when it aborts a transaction that outlived transaction.timeout.ms: not a fence.
    s, replaced = session()
    s._fatal_or_replace(error)
    assert replaced == ["replaced"]
