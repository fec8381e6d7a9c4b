"""Scenario files: every catalog scenario parses, bad ones are refused with the field and value named."""

from __future__ import annotations

import pytest

from failsafe.scenarios.base import Expectation, ScenarioError
from failsafe.scenarios.expectations import evaluate, resolve
from failsafe.scenarios.kinds.pipeline.schema import PipelineScenario
from failsafe.scenarios.registry import SEED_LAB, catalog_names, load_scenario, parse_scenario

MINIMAL = {
    "name": "mini",
    "topics": [{"name": "t", "partitions": 2, "replication_factor": 1}],
    "producers": [{"name": "p", "topic": "t"}],
    "consumers": [{"name": "c", "topics": ["t"], "group": "g"}],
}


def test_every_seed_lab_scenario_is_in_the_catalog_and_parses() -> None:
    assert set(SEED_LAB) <= set(catalog_names())
    for name in catalog_names():
        scenario = load_scenario(name)
        assert scenario.name == name
        if isinstance(scenario, PipelineScenario):
            continue  # its claim is fixed: the sink equals the ledger and the queries never stop
        assert scenario.expect, f"{name} has no expectations: a scenario must claim something"


def test_a_consumer_without_group_is_manual_assignment() -> None:
    data = {**MINIMAL, "consumers": [{"name": "c", "topics": ["t"]}]}
    assert parse_scenario(data).consumers[0].group is None


@pytest.mark.parametrize(
    "change, message",
    [
        (
            {"topics": [{"name": "t", "partitions": 0, "replication_factor": 1}]},
            "mini.topics[0].partitions: 0 must be at least 1",
        ),
        (
            {"topics": [{"name": "t", "partitions": 1, "replication_factor": 4}]},
            "replication_factor: 4 must be between 1 and the 3 brokers",
        ),
        (
            {"producers": [{"name": "p", "topic": "nope"}]},
            "mini.producers[0].topic: 'nope' is not one of the scenario's topics",
        ),
        ({"producers": [{"name": "p", "topic": "t", "acks": "2"}]}, "acks: '2' must be 0, 1 or all"),
        ({"producers": [{"name": "p", "topic": "t", "rate": 5}]}, "unknown field 'rate'"),
        ({"faults": [{"fault": "explode", "at_s": 1}]}, "faults[0].fault: 'explode' is not one of"),
        (
            {"faults": [{"fault": "kill", "role": "leader", "at_s": 1}]},
            "faults[0].partition: None must name a partition",
        ),
        ({"faults": [{"fault": "kill", "role": "any", "at_s": 100}]}, "at_s: 100 is after the chaos phase ends"),
        (
            {"faults": [{"fault": "kill-consumer", "consumer": "ghost-0", "at_s": 1}]},
            "faults[0].consumer: 'ghost-0' must name a consumer",
        ),
        ({"expect": [{"name": "x", "check": "a.b", "op": "~"}]}, "expect[0].op: '~' is not one of"),
        ({"phases": {"chaos_s": -1}}, "mini.phases.chaos_s: -1 is not valid"),
        (
            {"cluster": {"combined": True}, "faults": [{"fault": "quorum-loss", "at_s": 1}]},
            "quorum-loss needs separate controllers",
        ),
        (
            {"producers": [{"name": "p", "topic": "t", "host": "h2"}]},
            'mini.producers[0].host: only driver = "kafka-verifiable" runs on a host',
        ),
        (
            {"consumers": [{"name": "c", "topics": ["t"], "group": "g", "host": "h2"}]},
            "mini.consumers[0].host: only driver",
        ),
    ],
)
def test_bad_scenarios_are_refused_naming_the_field(change: dict, message: str) -> None:
    with pytest.raises(ScenarioError) as e:
        parse_scenario({**MINIMAL, **change})
    assert message in str(e.value)


def test_a_verifiable_client_may_run_on_a_host_and_faults_that_cut_clients_say_so() -> None:
    from failsafe.faults.network import cuts_clients

    data = {
        **MINIMAL,
        "producers": [{"name": "p", "topic": "t", "driver": "kafka-verifiable", "host": "h2"}],
        "faults": [
            {"fault": "isolate", "role": "any", "at_s": 1},
            {"fault": "isolate", "role": "any", "clients": True, "at_s": 1},
            {"fault": "cut-clients", "role": "any", "at_s": 1},
            {"fault": "partition", "sides": "{0} | {1,clients}", "at_s": 1},
            {"fault": "partition", "sides": "{0} | {1,controllers}", "at_s": 1},
        ],
    }
    scenario = parse_scenario(data)
    assert scenario.producers[0].host == "h2"
    assert [cuts_clients(f) for f in scenario.faults] == [False, True, True, True, False]


def test_unknown_catalog_name_lists_the_choices() -> None:
    with pytest.raises(ScenarioError, match="no scenario named 'nope': choose one of .*broker-failover"):
        load_scenario("nope")


RESULTS = {
    "delivery": {
        "valid": True,
        "counts": {"lost": 0},
        "by_process": {"acksall-misr1": {"lost": 0}, "acks1-misr1": {"lost": 3}},
    },
    "availability": {
        "faults": [
            {
                "affected_partitions": [
                    {"isr_shrank": True, "new_leader_ms": 8100},
                    {"isr_shrank": False, "new_leader_ms": None},
                ]
            }
        ]
    },
}


def test_paths_resolve_with_wildcards_and_prefixes() -> None:
    assert resolve(RESULTS, "delivery.counts.lost") == [0]
    assert resolve(RESULTS, "delivery.by_process.acksall-*.lost") == [0]
    assert resolve(RESULTS, "availability.faults.*.affected_partitions.*.isr_shrank") == [True, False]
    assert resolve(RESULTS, "availability.faults.0.affected_partitions.1.new_leader_ms") == [None]
    assert resolve(RESULTS, "delivery.counts.nothing") == []


@pytest.mark.parametrize(
    "check, op, value, valid",
    [
        ("delivery.counts.lost", "==", 0, True),
        ("delivery.by_process.*.lost", "==", 0, False),
        ("delivery.by_process.acksall-*.lost", "==", 0, True),
        ("availability.faults.*.affected_partitions.*.isr_shrank", "all", None, False),
        ("availability.faults.*.affected_partitions.*.isr_shrank", "any", None, True),
        ("availability.faults.*.affected_partitions.*.new_leader_ms", "<", 10000, "unknown"),
        ("delivery.counts.missing", "==", 0, "unknown"),
    ],
)
def test_expectations_are_true_false_or_unknown(check: str, op: str, value: object, valid: object) -> None:
    assert evaluate(Expectation("e", check, op, value), RESULTS)["valid"] == valid
