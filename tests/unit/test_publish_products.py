"""The catalogue's publishing: what one producer leaves unacknowledged a new one sends again, until the timeout; a
producer's error ends it; a purge at the end of an attempt is no error."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError

from failsafe.errors import KafkaClientError
from failsafe.workloads.sales.catalogue import PRODUCTS
from failsafe.workloads.sales.run import publish_products


class FakeProducer:
    """Acknowledges the first ``acks`` records it is given (all when None); reports ``error`` for the others, or holds
    them until purged."""

    def __init__(self, acks: int | None, error: int | None = None) -> None:
        self.acks, self.error = acks, error
        self.held: list[tuple[bytes, object]] = []
        self.keys: list[str] = []

    def produce(self, topic: str, value: bytes, key: str, on_delivery: object) -> None:
        self.keys.append(key)
        self.held.append((key, on_delivery))

    def flush(self, timeout: float) -> int:
        n = len(self.held) if self.acks is None else self.acks
        delivered, self.held = self.held[:n], self.held[n:]
        for _, report in delivered:
            report(None, None)
        self.acks = 0
        if self.error is not None:
            for _, report in self.held:
                report(KafkaError(self.error), None)
            self.held = []
        return len(self.held)

    def purge(self) -> None:
        for _, report in self.held:
            report(KafkaError(KafkaError._PURGE_QUEUE), None)
        self.held = []


def _factory(*producers: FakeProducer):
    made: list[FakeProducer] = []

    def new_producer(config: dict) -> FakeProducer:
        assert config["acks"] == "all" and config["enable.idempotence"] is True
        made.append(producers[len(made)] if len(made) < len(producers) else FakeProducer(acks=0))
        return made[-1]

    return new_producer, made


def test_a_stuck_producer_is_replaced_and_only_what_it_left_is_sent_again() -> None:
    new_producer, made = _factory(FakeProducer(acks=5), FakeProducer(acks=None))
    publish_products("b:9092", "demo.products", 5.0, attempt_s=0.01, new_producer=new_producer)
    assert len(made) == 2
    assert made[0].keys == [p.product_id for p in PRODUCTS]
    assert made[1].keys == [p.product_id for p in PRODUCTS[5:]]


def test_records_nobody_acknowledged_within_the_timeout_end_it_in_one_line() -> None:
    new_producer, made = _factory()
    with pytest.raises(KafkaClientError, match=f"{len(PRODUCTS)} records not acknowledged within 0.05s"):
        publish_products("b:9092", "demo.products", 0.05, attempt_s=0.01, new_producer=new_producer)
    assert len(made) >= 2  # each attempt a new producer


def test_an_error_the_producer_reports_ends_it() -> None:
    new_producer, made = _factory(FakeProducer(acks=3, error=KafkaError.TOPIC_AUTHORIZATION_FAILED))
    with pytest.raises(KafkaClientError, match="cannot publish the products to demo.products: .*(?i:authoriz)"):
        publish_products("b:9092", "demo.products", 5.0, attempt_s=0.01, new_producer=new_producer)
    assert len(made) == 1
