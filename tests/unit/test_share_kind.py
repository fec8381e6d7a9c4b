"""The share kind: its scenarios parse, what they get wrong is one line, and what the checkers are told."""

from __future__ import annotations

import tomllib
from importlib.resources import files

import pytest

from failsafe.cluster.observe.coordinators import coordinator_partition, share_state_key
from failsafe.scenarios.base import ScenarioError
from failsafe.scenarios.kinds import parse_table
from failsafe.tools.admin import kafka_uuid

CATALOG = files("failsafe.scenarios") / "catalog"
SHARE_SCENARIOS = (
    "share-queue",
    "share-consumer-killed",
    "share-consumer-paused",
    "share-leader-killed",
    "share-coordinator-killed",
)


def table(name: str) -> dict:
    return tomllib.loads((CATALOG / f"{name}.toml").read_text())


def test_the_catalogs_share_scenarios_parse_as_the_share_kind() -> None:
    for name in SHARE_SCENARIOS:
        scenario = parse_table(table(name), name)
        assert scenario.kind == "share"
        assert scenario.share_groups["myqueue"]["share.auto.offset.reset"] == "earliest"


def test_the_checker_takes_no_setting_from_the_scenario_only_what_the_cluster_described() -> None:
    killed = parse_table(table("share-consumer-killed"), "t")
    assert "share" not in killed.checker_options()
    assert killed.share_setting("share.record.lock.duration.ms") == 15_000, "what the drain is sized by"
    data = table("share-queue")
    data["checkers"] = {"share": {"lock_duration_ms": 25_000}}
    with pytest.raises(ScenarioError, match="no checker option can excuse a violation"):
        parse_table(data, "t")
    assert [c["role"] for c in killed.declared_clients()].count("share-consumer") == sum(
        c.count for c in killed.share_consumers
    )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda d: d.update(share_groups={"other": {"share.record.lock.duration.ms": "15000"}}),
            "no [[share_consumers]] is in group 'other'",
        ),
        (
            lambda d: d.update(share_groups={"myqueue": {"session.timeout.ms": "15000"}}),
            "is not a share group's config",
        ),
        (lambda d: d["phases"].update(drain_timeout_s=20), "too short to see a killed member's records"),
        (
            lambda d: d["share_consumers"][0].update(release_per_mille=600, reject_per_mille=500),
            "add up to more than 1000",
        ),
        (lambda d: d["share_consumers"][0].update(processing_ms=-1), "must not be negative"),
        (
            lambda d: d.update(consumers=[{"name": "c", "topics": ["my-failsafe-topic"], "group": "myqueue"}]),
            "a group is one or the other",
        ),
        (lambda d: d.pop("share_consumers"), "needs [[share_consumers]]"),
        (
            lambda d: d.update(share_groups={"myqueue": {"share.record.lock.duration.ms": "1500"}}),
            "leaves the checker nothing to judge",
        ),
        (
            lambda d: d.update(share_groups={"myqueue": {"share.auto.offset.reset": "oldest"}}),
            "must be earliest, latest or by_duration",
        ),
        (lambda d: d["share_consumers"][0].update(topics="my-failsafe-topic"), "expected a list of topic names"),
        (
            lambda d: d["cluster"].update(overrides={"group.share.record.lock.duration.ms": "soon"}),
            "must be a whole number",
        ),
        (lambda d: d["share_consumers"][0].update(driver="kafka-java"), "is not one of failsafe, kafka-verifiable"),
        (
            lambda d: d["share_consumers"][0].update(driver="kafka-verifiable", processing_ms=100),
            "accepts every record at once",
        ),
    ],
)
def test_a_wrong_share_scenario_is_one_line(change, message: str) -> None:
    data = table("share-queue")
    change(data)
    with pytest.raises(ScenarioError, match=None) as raised:
        parse_table(data, "t")
    assert message in str(raised.value) and "\n" not in str(raised.value)


def test_a_consumer_fault_may_name_a_share_consumer() -> None:
    scenario = parse_table(table("share-consumer-killed"), "t")
    assert scenario.faults[0].params.consumer == "worker-0"
    data = table("share-consumer-killed")
    data["faults"][0]["consumer"] = "worker-9"
    with pytest.raises(Exception, match="worker-0, worker-1, worker-2, worker-3"):
        parse_table(data, "t")


def test_the_share_coordinators_key_uses_kafkas_url_safe_topic_id() -> None:
    # Measured on a 4.3.1 cluster: the __share_group_state partitions that grew while share group myqueue read
    # my-failsafe-topic (id printed by confluent-kafka as QgokMiyWTV+g/Y2FC9s84w) were 13 and 12; jshell's
    # Math.abs("myqueue:QgokMiyWTV-g_Y2FC9s84w:0".hashCode()) % 50 says 13 too.
    topic_id = kafka_uuid("QgokMiyWTV+g/Y2FC9s84w")
    assert topic_id == "QgokMiyWTV-g_Y2FC9s84w"
    assert [coordinator_partition(share_state_key("myqueue", topic_id, p)) for p in (0, 1)] == [13, 12]
    assert [coordinator_partition(share_state_key("myqueue", "QgokMiyWTV+g/Y2FC9s84w", p)) for p in (0, 1)] == [29, 28]


@pytest.mark.parametrize("name", ["share-consumer-killed", "txn-coordinator-kill"])
def test_what_a_run_stores_parses_again_to_the_same_scenario(name: str) -> None:
    # scenario.json is the scenario's raw table: failsafe check parses it again, so it must hold every table of the
    # kind.
    scenario = parse_table(table(name), name)
    again = parse_table(dict(scenario.raw), name)
    assert again == scenario


def test_kafkas_java_consumers_may_be_frozen_like_failsafes() -> None:
    # The worker stops the JVM it started (verifiable.py FREEZE_SIGNAL), so pause-consumer takes either driver.
    data = table("rebalance-member-paused")
    data["consumers"][0]["driver"] = "kafka-verifiable"
    assert parse_table(data, "t").consumers[0].driver == "kafka-verifiable"
    data = table("share-consumer-paused")
    data["share_consumers"][0].update(driver="kafka-verifiable", processing_ms=0)
    assert parse_table(data, "t").share_consumers[0].driver == "kafka-verifiable"


def test_the_lab_tells_the_rebalance_checker_each_groups_session() -> None:
    assert parse_table(table("rebalance-member-paused"), "t").checker_options()["rebalance"] == {
        "session_timeout_ms_by_group": {"mygroup": 10_000}
    }
    data = table("consumer-failover-kip848")
    data["consumers"][0].pop("session_timeout_ms")
    # A KIP-848 group without its own session has the cluster's group.consumer.session.timeout.ms.
    assert parse_table(data, "t").checker_options()["rebalance"]["session_timeout_ms_by_group"] == {"mygroup": 10_000}
