"""A run deletes what an earlier run of its scenario made, its create-topic actions' topics too: the second of two runs
of controller-outage on one cluster found created-after-outage there (TOPIC_ALREADY_EXISTS) and was judged INVALID."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from failsafe.scenarios.base import TopicSpec
from failsafe.scenarios.engine import setup
from failsafe.scenarios.engine.actions import created_topics
from failsafe.scenarios.registry import load_scenario


def test_the_topics_a_scenarios_actions_create_are_known_before_it_runs() -> None:
    assert created_topics(load_scenario("controller-outage")) == ("created-during-outage", "created-after-outage")
    assert created_topics(load_scenario("broker-failover")) == ()


class Done:
    def result(self, timeout: float | None = None) -> None:
        return None


class FakeAdmin:
    def __init__(self, topics: set[str]) -> None:
        self.topics = set(topics)
        self.deleted: list[str] = []

    def list_topics(self, timeout: float | None = None) -> SimpleNamespace:
        return SimpleNamespace(
            brokers={},  # none to ask alone (tools/broker_metadata.py)
            topics={
                t: SimpleNamespace(error=None, partitions={0: SimpleNamespace(leader=1, isrs=[1], replicas=[1])})
                for t in self.topics
            },
        )

    def delete_topics(self, names: list[str], request_timeout: float | None = None) -> dict:
        self.deleted += names
        self.topics -= set(names)
        return {n: Done() for n in names}

    def create_topics(self, new: list, request_timeout: float | None = None) -> dict:
        self.topics |= {t.topic for t in new}
        return {t.topic: Done() for t in new}


def test_an_earlier_runs_created_topics_are_deleted_with_its_declared_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    admin = FakeAdmin({"events", "created-after-outage", "someone-elses"})
    monkeypatch.setattr(setup, "new_admin", lambda servers: admin)
    monkeypatch.setattr(setup, "list_groups", lambda servers, timeout, complete=False: [])
    setup.fresh_topics(
        "b:9092", (TopicSpec("events", 1, 1),), [], None, ("created-during-outage", "created-after-outage")
    )
    assert sorted(admin.deleted) == ["created-after-outage", "events"]
    assert admin.topics == {"events", "someone-elses"}
