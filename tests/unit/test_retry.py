"""Retriable Kafka errors never end a run: the wrapper asks again until its deadline (issue 49)."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException

from failsafe.errors import KafkaClientError
from failsafe.tools import admin
from failsafe.tools.errors import retriable
from failsafe.tools.retry import retrying


class Answers:
    """A fake call: raises each of ``errors`` in turn, then returns ``value``."""

    def __init__(self, *errors: BaseException, value: object = "ok") -> None:
        self.errors, self.value, self.calls = list(errors), value, 0

    def __call__(self) -> object:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return self.value


class Future:
    """An admin future: ``result`` raises the outcome when it is an exception, else returns it."""

    def __init__(self, outcome: object) -> None:
        self.outcome = outcome

    def result(self, timeout: float) -> object:
        if isinstance(self.outcome, BaseException):
            raise self.outcome
        return self.outcome


def kafka(code: int, text: str = "") -> KafkaException:
    return KafkaException(KafkaError(code, text))


def test_unknown_leader_epoch_twice_then_an_answer() -> None:
    call = Answers(
        kafka(KafkaError.UNKNOWN_LEADER_EPOCH, "Leader epoch is newer than broker epoch"),
        kafka(KafkaError.UNKNOWN_LEADER_EPOCH),
    )
    assert retrying(call, "the log end offsets", timeout_s=5, interval_s=0.01) == "ok" and call.calls == 3


@pytest.mark.parametrize(
    "code",
    [
        KafkaError.NOT_COORDINATOR,
        KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
        KafkaError.NOT_LEADER_FOR_PARTITION,
        KafkaError.REQUEST_TIMED_OUT,
        KafkaError.LEADER_NOT_AVAILABLE,
    ],
)
def test_every_retriable_error_is_asked_again(code: int) -> None:
    assert retriable(kafka(code))
    assert retrying(Answers(kafka(code), TimeoutError()), "a call", timeout_s=5, interval_s=0.01) == "ok"


def test_a_non_retriable_error_propagates_at_once() -> None:
    call = Answers(kafka(KafkaError.TOPIC_AUTHORIZATION_FAILED))
    with pytest.raises(KafkaException):
        retrying(call, "a call", timeout_s=5, interval_s=0.01)
    assert call.calls == 1


def test_giving_up_names_the_call_and_the_last_error() -> None:
    always = Answers(*[kafka(KafkaError.NOT_COORDINATOR, "Broker: Not coordinator")] * 1000)
    with pytest.raises(
        KafkaClientError, match=r"deleting group g: gave up after 0.2s of retriable errors, the last: NOT_COORDINATOR"
    ):
        retrying(always, "deleting group g", timeout_s=0.2, interval_s=0.01)


def test_log_end_offsets_asks_again_after_unknown_leader_epoch(monkeypatch: pytest.MonkeyPatch) -> None:
    """The drain's call that ended a pipeline run in CI (issue 49): answered UNKNOWN_LEADER_EPOCH twice, then the
    offsets."""

    class Offset:
        offset = 42

    class FakeAdmin:
        calls = 0

        def list_offsets(self, request, **_: object) -> dict:
            FakeAdmin.calls += 1
            outcome = kafka(KafkaError.UNKNOWN_LEADER_EPOCH) if FakeAdmin.calls <= 2 else Offset()
            return {tp: Future(outcome) for tp in request}

    monkeypatch.setattr(admin, "new_admin", lambda *_a, **_k: FakeAdmin())
    assert admin.log_end_offsets("127.0.0.1:1", [("demo.purchases", 0)], timeout_s=5) == {("demo.purchases", 0): 42}
    assert FakeAdmin.calls == 3


def test_a_timeout_behind_failsafes_own_error_is_retriable_and_a_refusal_is_not() -> None:
    def wrapped(cause: BaseException) -> KafkaClientError:
        try:
            raise KafkaClientError("no answer") from cause
        except KafkaClientError as e:
            return e

    assert (
        retrying(
            Answers(wrapped(TimeoutError()), wrapped(kafka(KafkaError.NOT_COORDINATOR))),
            "a call",
            timeout_s=5,
            interval_s=0.01,
        )
        == "ok"
    )
    refused = Answers(wrapped(kafka(KafkaError.INVALID_CONFIG)))
    with pytest.raises(KafkaClientError, match="no answer"):
        retrying(refused, "a call", timeout_s=5, interval_s=0.01)
    assert refused.calls == 1


def test_setting_group_configs_asks_a_coordinator_not_ready_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """A group's configs on a cluster just started: NOT_COORDINATOR twice, then the describe and the alter answer."""

    class FakeAdmin:
        describes = alters = 0

        def describe_configs(self, resources, **_: object) -> dict:
            FakeAdmin.describes += 1
            return {r: Future(kafka(KafkaError.NOT_COORDINATOR) if FakeAdmin.describes <= 2 else {}) for r in resources}

        def incremental_alter_configs(self, resources, **_: object) -> dict:
            FakeAdmin.alters += 1
            return {r: Future(None) for r in resources}

    monkeypatch.setattr(admin, "new_admin", lambda *_a, **_k: FakeAdmin())
    admin.set_group_configs("127.0.0.1:1", "g", {"share.auto.offset.reset": "earliest"}, timeout_s=5)
    assert (FakeAdmin.describes, FakeAdmin.alters) == (3, 1)


def test_creating_topics_asks_again_after_a_timeout_and_takes_its_own_earlier_creation(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The first create timed out (it took effect all the same); the second answers TOPIC_ALREADY_EXISTS: created. A
    topic that exists without an earlier try of ours is refused."""
    from failsafe.scenarios.engine import setup

    class FakeAdmin:
        def __init__(self, first: BaseException) -> None:
            self.answers = [first, kafka(KafkaError.TOPIC_ALREADY_EXISTS, "Topic 't' already exists.")]

        def create_topics(self, new, **_: object) -> dict:
            return {t.topic: Future(self.answers.pop(0)) for t in new}

    fake = FakeAdmin(kafka(KafkaError.REQUEST_TIMED_OUT))
    setup._create_when_deleted(fake, [setup.NewTopic("t", 1, 1)])
    assert fake.answers == []
    with pytest.raises(KafkaClientError, match="cannot create topic t: TOPIC_ALREADY_EXISTS"):
        setup._create_when_deleted(
            FakeAdmin(kafka(KafkaError.TOPIC_ALREADY_EXISTS, "Topic 't' already exists.")), [setup.NewTopic("t", 1, 1)]
        )
