"""An earlier run's group is found (and so deleted) also while a coordinator is loading: on a cluster restarted with its
data, a broker answers ListConsumerGroups with COORDINATOR_LOAD_IN_PROGRESS and its groups are left out of the answer.
Setup asks again until every broker answered (seen in the app findings: the first run of each 'failsafe run --repeat'
on a restarted cluster kept the app group's committed offsets, and whole input partitions went unprocessed)."""

from __future__ import annotations

from concurrent.futures import Future
from types import SimpleNamespace

import pytest
from confluent_kafka import KafkaError

from failsafe.scenarios.engine import setup
from failsafe.tools import groups


class _Admin:
    """Answers as a cluster just restarted: first broker 1's coordinator still loading, then every group."""

    def __init__(self) -> None:
        self.answers = [
            SimpleNamespace(valid=[], errors=[KafkaError(KafkaError.COORDINATOR_LOAD_IN_PROGRESS, "Broker [1] load")]),
            SimpleNamespace(valid=[SimpleNamespace(group_id="app-streams-map", state=None)], errors=[]),
        ]

    def list_consumer_groups(self, request_timeout: float) -> Future:
        future: Future = Future()
        future.set_result(self.answers.pop(0) if len(self.answers) > 1 else self.answers[0])
        return future


def test_a_group_a_loading_coordinator_left_out_is_found_when_it_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    admin = _Admin()
    monkeypatch.setattr(groups, "new_admin", lambda bootstrap: admin)
    monkeypatch.setattr(groups, "fetch_metadata", lambda *a: None)
    assert setup.existing_groups("127.0.0.1:9") == {"app-streams-map"}


def test_the_console_still_gets_the_partial_list() -> None:
    assert groups.list_groups("127.0.0.1:9", admin=_Admin()) == []
