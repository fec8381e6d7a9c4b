"""set_group_configs against a broker that has no GROUP config resource (ZooKeeper mode answers INVALID_REQUEST)."""

from __future__ import annotations

from concurrent.futures import Future

import pytest
from confluent_kafka import KafkaError, KafkaException

from failsafe.errors import KafkaClientError
from failsafe.tools import admin


class _RefusingAdmin:
    def __init__(self, code: int) -> None:
        self.code = code
        self.altered = False

    def describe_configs(self, resources: list, request_timeout: float) -> dict:
        future: Future = Future()
        future.set_exception(KafkaException(KafkaError(self.code, "refused")))
        return {resources[0]: future}

    def incremental_alter_configs(self, resources: list, request_timeout: float) -> dict:
        self.altered = True
        raise AssertionError("nothing to alter")


def _with(monkeypatch: pytest.MonkeyPatch, code: int) -> _RefusingAdmin:
    fake = _RefusingAdmin(code)
    monkeypatch.setattr(admin, "new_admin", lambda bootstrap_servers: fake)
    return fake


def test_nothing_to_set_on_a_broker_without_group_configs_is_no_error(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _with(monkeypatch, KafkaError.INVALID_REQUEST)
    admin.set_group_configs("127.0.0.1:1", "g", {})
    assert not fake.altered


def test_a_config_a_broker_cannot_keep_is_one_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    _with(monkeypatch, KafkaError.INVALID_REQUEST)
    with pytest.raises(KafkaClientError, match="cannot read group g's configs: INVALID_REQUEST"):
        admin.set_group_configs("127.0.0.1:1", "g", {"consumer.session.timeout.ms": "10000"})


def test_other_refusals_stay_errors_with_nothing_to_set(monkeypatch: pytest.MonkeyPatch) -> None:
    _with(monkeypatch, KafkaError.GROUP_AUTHORIZATION_FAILED)
    with pytest.raises(KafkaClientError, match="GROUP_AUTHORIZATION_FAILED"):
        admin.set_group_configs("127.0.0.1:1", "g", {})
