"""The faults of a secured cluster (faults/security.py) as a scenario declares them, the cluster they need, and the
producer's record of a send refused before it was queued (an ACL removed: TOPIC_AUTHORIZATION_FAILED)."""

from __future__ import annotations

import io
import threading
from pathlib import Path

import orjson
import pytest
from confluent_kafka import KafkaError, KafkaException

from failsafe.cluster.security import secured
from failsafe.cluster.spec import ClusterSpec
from failsafe.errors import UserError
from failsafe.faults import FAULT_TYPES, FaultContext
from failsafe.history.recorder import OpWriter
from failsafe.tools import connections
from failsafe.workloads import producer as producer_module
from failsafe.workloads.specs import ProducerSpec


def test_each_fault_fits_only_a_cluster_that_has_what_it_changes() -> None:
    scram, acl = FAULT_TYPES["scram-password-change"], FAULT_TYPES["acl-removed"]
    assert scram.fits(ClusterSpec(security="sasl-ssl")) is None
    assert scram.fits(ClusterSpec(security="sasl-scram")) is None
    assert "no SCRAM users" in str(scram.fits(ClusterSpec(security="mtls")))
    assert "no SCRAM users" in str(scram.fits(ClusterSpec()))
    assert acl.fits(ClusterSpec(security="mtls")) is None
    assert "no authorizer" in str(acl.fits(ClusterSpec(security="tls")))


def test_an_acl_fault_names_an_operation_failsafe_grants() -> None:
    ctx = FaultContext(where="faults[0]")
    assert FAULT_TYPES["acl-removed"].parse({}, ctx).operation == "WRITE"
    assert FAULT_TYPES["acl-removed"].parse({"operation": "READ"}, ctx).operation == "READ"
    with pytest.raises(UserError, match="'ALTER' is not one of WRITE, READ"):
        FAULT_TYPES["acl-removed"].parse({"operation": "ALTER"}, ctx)
    with pytest.raises(UserError, match="is not a field of this fault"):
        FAULT_TYPES["scram-password-change"].parse({"password": "x"}, ctx)


def test_a_changed_password_reaches_the_clients_file(tmp_path: Path) -> None:
    spec = ClusterSpec(security="sasl-scram").validate()
    store = secured.ensure_secrets(tmp_path, spec)
    assert store is not None
    store.set_password("failsafe-client", "new-one")
    secured.ensure_secrets(tmp_path, spec)
    assert "new-one" in secured.client_file(tmp_path, "failsafe-client").read_text()
    assert store.password("failsafe-admin") != "new-one"


class RefusingProducer:
    """A producer whose topic's metadata says TOPIC_AUTHORIZATION_FAILED for sends 2 and 3: produce() raises."""

    def __init__(self, config: dict) -> None:
        self.config, self.calls = config, 0

    def produce(self, topic: str, value: str, key: object, on_delivery) -> None:  # noqa: ANN001
        self.calls += 1
        if self.calls in (2, 3):
            raise KafkaException(KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED))
        on_delivery(None, _Delivered(topic))

    def poll(self, timeout: float = 0) -> int:
        return 0

    def flush(self, timeout: float = 0) -> int:
        return 0


class _Delivered:
    def __init__(self, topic: str) -> None:
        self._topic = topic

    def topic(self) -> str:
        return self._topic

    def partition(self) -> int:
        return 0

    def offset(self) -> int:
        return 7


def test_a_send_refused_before_it_was_queued_is_a_failure_and_the_producer_goes_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(connections.ENV, raising=False)
    monkeypatch.setattr(producer_module, "Producer", RefusingProducer)
    stream = io.BytesIO()
    spec = ProducerSpec(process="producer", topic="t", bootstrap_servers="127.0.0.1:1", count=5)
    sent = producer_module.run_producer(spec, OpWriter(stream, "producer"), threading.Event())
    ops = [orjson.loads(line) for line in stream.getvalue().splitlines()]
    outcomes = {op["id"]: (op["type"], op.get("error")) for op in ops if op["f"] == "send" and op["type"] != "invoke"}
    assert sent == 5
    assert outcomes == {
        0: ("ok", None),
        1: ("fail", "TOPIC_AUTHORIZATION_FAILED"),
        2: ("fail", "TOPIC_AUTHORIZATION_FAILED"),
        3: ("ok", None),
        4: ("ok", None),
    }
