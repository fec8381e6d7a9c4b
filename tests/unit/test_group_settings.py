"""A consumer group's protocol and assignor in a scenario: refused where the clients would refuse them, and given to
each client in its own words."""

from __future__ import annotations

import pytest

from failsafe.scenarios.base import ScenarioError
from failsafe.scenarios.kinds.lab.workload import LabWorkload
from failsafe.scenarios.registry import parse_scenario
from failsafe.workloads.verifiable.clients import VerifiableConsumerSpec
from tests.unit.test_scenarios import MINIMAL


def _consumer(**fields: object) -> dict:
    return {**MINIMAL, "consumers": [{"name": "c", "topics": ["t"], "group": "g", **fields}]}


@pytest.mark.parametrize(
    "fields, message",
    [
        ({"group_protocol": "modern"}, "consumers[0].group_protocol: 'modern' is not one of classic, consumer"),
        (
            {"assignment_strategy": "sticky-ish"},
            "assignment_strategy: 'sticky-ish' is not one of range, roundrobin, cooperative-sticky",
        ),
        ({"group_protocol": "consumer", "assignment_strategy": "range"}, "use remote_assignor"),
        (
            {"group_protocol": "consumer", "properties": {"heartbeat.interval.ms": "1000"}},
            "heartbeat.interval.ms is refused with group_protocol",
        ),
        ({"remote_assignor": "uniform"}, 'remote_assignor: only with group_protocol = "consumer"'),
        (
            {"group_protocol": "consumer", "properties": {"group.remote.assignor": "range"}},
            "group.remote.assignor is set by group_protocol",
        ),
        (
            {"properties": {"partition.assignment.strategy": "cooperative-sticky"}},
            "partition.assignment.strategy is set by group_protocol",
        ),
    ],
)
def test_settings_the_clients_would_refuse_are_refused_naming_the_field(fields: dict, message: str) -> None:
    with pytest.raises(ScenarioError) as e:
        parse_scenario(_consumer(**fields))
    assert message in str(e.value)


def test_manual_assignment_has_no_protocol() -> None:
    with pytest.raises(ScenarioError, match="need a group"):
        parse_scenario({**MINIMAL, "consumers": [{"name": "c", "topics": ["t"], "assignment_strategy": "range"}]})


class _Ctx:
    bootstrap_servers = "127.0.0.1:9092"
    kafka_version = "4.3.1"


def _spec(**fields: object):
    scenario = parse_scenario(_consumer(**fields))
    return LabWorkload(scenario).consumer_spec(scenario.consumers[0], 0, _Ctx())


def test_librdkafka_gets_the_protocol_and_assignors_as_its_properties() -> None:
    config = _spec(group_protocol="consumer", remote_assignor="range").consumer_config()
    assert (config["group.protocol"], config["group.remote.assignor"]) == ("consumer", "range")
    assert "session.timeout.ms" not in config and "partition.assignment.strategy" not in config
    config = _spec(assignment_strategy="cooperative-sticky", session_timeout_ms=10000).consumer_config()
    assert (config["partition.assignment.strategy"], config["session.timeout.ms"]) == ("cooperative-sticky", 10000)


def test_the_java_consumer_gets_them_in_its_words() -> None:
    spec = _spec(driver="kafka-verifiable", assignment_strategy="cooperative-sticky")
    assert isinstance(spec, VerifiableConsumerSpec)
    assert (
        spec.effective_properties()["partition.assignment.strategy"]
        == "org.apache.kafka.clients.consumer.CooperativeStickyAssignor"
    )
    spec = _spec(driver="kafka-verifiable", group_protocol="consumer", remote_assignor="uniform")
    assert spec.effective_properties()["group.remote.assignor"] == "uniform"
    assert "partition.assignment.strategy" not in spec.java_properties()


def test_a_kip848_groups_session_is_a_group_config_not_the_clients() -> None:
    scenario = parse_scenario(_consumer(group_protocol="consumer", session_timeout_ms=10000))
    settings = scenario.consumers[0].group_settings()
    assert settings.group_configs(10000) == {"consumer.session.timeout.ms": "10000"}
    assert "session.timeout.ms" not in _spec(group_protocol="consumer", session_timeout_ms=10000).consumer_config()
    java = _spec(driver="kafka-verifiable", group_protocol="consumer", session_timeout_ms=10000)
    assert java.session_timeout_ms is None
    assert parse_scenario(_consumer(session_timeout_ms=10000)).consumers[0].group_settings().group_configs(10000) == {}
