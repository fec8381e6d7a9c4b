"""Scenarios of the txn kind: the catalog's parse, bad ones are refused naming the field, consumers say their
isolation."""

from __future__ import annotations

import pytest

from failsafe.cluster.observe.coordinators import coordinator_partition, coordinator_partition_name, java_string_hash
from failsafe.scenarios.base import ScenarioError
from failsafe.scenarios.registry import load_scenario, parse_scenario

MINIMAL = {
    "kind": "txn",
    "name": "tx",
    "topics": [
        {"name": "a", "partitions": 2, "replication_factor": 1},
        {"name": "in", "partitions": 1, "replication_factor": 1},
        {"name": "out", "partitions": 1, "replication_factor": 1},
    ],
    "writers": [{"name": "writer", "topics": ["a"], "count": 2}],
    "processors": [{"name": "ctp", "input": "in", "output": "out", "group": "g"}],
    "consumers": [
        {"name": "r", "topics": ["a"]},
        {"name": "dirty", "topics": ["a"], "properties": {"isolation.level": "read_uncommitted"}},
    ],
}


def test_the_catalogs_txn_scenarios_parse_with_their_faults() -> None:
    kill = load_scenario("txn-coordinator-kill")
    assert kill.kind == "txn" and kill.faults[0].params.role == "txn-coordinator"
    zombie = load_scenario("txn-zombie-fencing")
    assert [f.fault for f in zombie.faults] == ["zombie-txn-client", "kill-txn-client"]
    pause = load_scenario("txn-coordinator-pause")
    assert pause.faults[0].fault == "pause" and pause.faults[0].params.role == "txn-coordinator"
    # Frozen past writer-0's transaction.timeout.ms, which findings.sh txn-fence compares with a pause it outlives.
    assert pause.faults[0].duration_s * 1000 > pause.writers[0].transaction_timeout_ms
    short = load_scenario(
        "txn-coordinator-pause", ("faults[0].duration_s=5", 'writers[*].driver="kafka-java"', "transactions.version=1")
    )
    assert short.faults[0].duration_s * 1000 < short.writers[0].transaction_timeout_ms
    assert short.writers[0].driver == "kafka-java" and short.transactions.version == 1


def test_consumers_state_their_isolation_and_clients_are_named_by_index() -> None:
    s = parse_scenario(MINIMAL)
    assert [c.properties["isolation.level"] for c in s.consumers] == ["read_committed", "read_uncommitted"]
    assert s.txn_clients() == ["writer-0", "writer-1", "ctp-0"]
    assert s.transactions.version is None


@pytest.mark.parametrize(
    "change, message",
    [
        (
            {"writers": [{"name": "w", "topics": ["nope"]}]},
            "tx.writers[0].topics: ['nope'] must name the scenario's topics",
        ),
        (
            {"writers": [{"name": "w", "topics": ["a"], "min_writes": 3, "max_writes": 2}]},
            "needs 1 <= min_writes <= max_writes",
        ),
        ({"writers": [{"name": "w", "topics": ["a"], "abort_probability": 2}]}, "abort_probability: 2 is not valid"),
        (
            {"processors": [{"name": "p", "input": "in", "output": "in", "group": "g"}]},
            "input and output must be different topics",
        ),
        (
            {"processors": [{"name": "p", "input": "in", "output": "x", "group": "g"}]},
            "tx.processors[0].output: 'x' is not one of",
        ),
        ({"transactions": {"version": 5}}, "tx.transactions.version: 5 must be 0, 1 or 2"),
        (
            {"processors": [{"name": "p", "input": "a", "output": "out", "group": "g"}]},
            "tx.processors[0].input: 'a' is written in transactions",
        ),
        (
            {"consumers": [{"name": "r", "topics": ["a"], "properties": {"isolation.level": "dirty"}}]},
            "isolation.level must be one of",
        ),
        ({"writers": [], "processors": []}, "needs [[writers]] or [[processors]]"),
        (
            {"faults": [{"fault": "kill", "role": "txn-coordinator", "transactional_id": "ghost", "at_s": 1}]},
            "faults[0].transactional_id: 'ghost' must name one of the scenario's transactional ids: writer-0, "
            "writer-1, ctp-0",
        ),
        (
            {"faults": [{"fault": "kill-txn-client", "client": "r-0", "at_s": 1, "duration_s": 1}]},
            "faults[0].client: 'r-0' must name a transactional client",
        ),
        (
            {"faults": [{"fault": "kill", "role": "group-coordinator", "group": "ghost", "at_s": 1}]},
            "faults[0].group: 'ghost' must name one of the scenario's consumer groups: g",
        ),
        (
            {"writers": [{"name": "w", "topics": "a"}]},
            "tx.writers[0].topics: 'a' is not valid: expected a list of topic names",
        ),
        (
            {"writers": [{"name": "w", "topics": ["a"], "transaction_timeout_ms": 0}]},
            "tx.writers[0].transaction_timeout_ms: 0 must be positive",
        ),
        (
            {"writers": [{"name": "w", "topics": ["a"], "properties": {"enable.idempotence": False}}]},
            "tx.writers[0].properties: enable.idempotence = 'false': a transactional producer needs true",
        ),
        (
            {"processors": [{"name": "p", "input": "in", "output": "out", "group": "g", "properties": {"acks": 1}}]},
            "tx.processors[0].properties: acks = '1': a transactional producer needs all or -1",
        ),
    ],
)
def test_bad_txn_scenarios_are_refused_naming_the_field(change: dict, message: str) -> None:
    with pytest.raises(ScenarioError) as e:
        parse_scenario({**MINIMAL, **change})
    assert message in str(e.value)


def test_a_lab_scenario_cannot_take_a_transactional_clients_fault() -> None:
    lab = {
        "name": "mini",
        "topics": [{"name": "t", "partitions": 1, "replication_factor": 1}],
        "producers": [{"name": "p", "topic": "t"}],
        "faults": [{"fault": "kill-txn-client", "client": "p", "at_s": 1, "duration_s": 1}],
    }
    with pytest.raises(ScenarioError, match="kill-txn-client"):
        parse_scenario(lab)


def test_the_coordinator_partition_is_javas_hash_as_kafka_takes_it() -> None:
    # Java: "hello".hashCode() == 99162322; "polygenelubricants".hashCode() == Integer.MIN_VALUE, which Utils.abs makes
    # 0.
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("polygenelubricants") == -(2**31) and coordinator_partition("polygenelubricants") == 0
    assert java_string_hash("é") == 233  # one UTF-16 unit
    assert (
        coordinator_partition_name("__transaction_state", "writer-0")
        == f"__transaction_state-{coordinator_partition('writer-0')}"
    )
    assert (
        coordinator_partition_name("__consumer_offsets", "g", {"offsets.topic.num.partitions": "3"})
        == f"__consumer_offsets-{java_string_hash('g') % 3}"
    )


def test_a_group_coordinator_fault_names_a_group_of_the_scenarios_consumers_or_processors() -> None:
    grouped = {**MINIMAL, "consumers": [{"name": "r", "topics": ["a"], "group": "readers"}]}
    for group in ("readers", "g"):
        s = parse_scenario(
            {**grouped, "faults": [{"fault": "kill", "role": "group-coordinator", "group": group, "at_s": 1}]}
        )
        assert s.faults[0].params.group == group
    lab = {
        "name": "mini",
        "topics": [{"name": "t", "partitions": 1, "replication_factor": 1}],
        "producers": [{"name": "p", "topic": "t"}],
        "consumers": [{"name": "c", "topics": ["t"]}],
        "faults": [{"fault": "pause", "role": "group-coordinator", "group": "g", "at_s": 1}],
    }
    with pytest.raises(ScenarioError, match="'g' must name one of the scenario's consumer groups: it has none"):
        parse_scenario(lab)
