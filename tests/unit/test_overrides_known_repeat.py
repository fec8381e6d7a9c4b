"""--set overrides, known anomalies (KNOWN, never VALID) and --repeat statistics, without Kafka."""

from __future__ import annotations

import copy
import json

import pytest

from failsafe.checkers.common import Verdict
from failsafe.history.load import history_from_ops
from failsafe.history.model import History
from failsafe.scenarios.base import Scenario, ScenarioError
from failsafe.scenarios.known import classify as classify_with_history
from failsafe.scenarios.overrides import OverrideError, apply_overrides, parse_path
from failsafe.scenarios.registry import load_scenario, parse_scenario
from failsafe.scenarios.store.repeat import aggregate, spread, write_aggregate

KNOWN_DUPLICATE = {
    "anomaly": "delivery.duplicate-acknowledged",
    "client": "librdkafka",
    "reference": "https://github.com/confluentinc/librdkafka/issues/4953",
    "when": {"enable.idempotence": "true"},
}
SCENARIO = {
    "name": "mini",
    "topics": [{"name": "t", "partitions": 2, "replication_factor": 1}],
    "producers": [{"name": "p", "topic": "t", "acks": "all"}],
    "consumers": [{"name": "c", "topics": ["t"], "group": "g"}],
    "known": [KNOWN_DUPLICATE],
}


def _results(**delivery_counts: int) -> dict:
    """A lab run's results whose delivery checker found the given counts (each one a violation)."""
    violations = [name for name, n in delivery_counts.items() if n]
    return {
        "checkers": {
            "delivery": {"valid": not violations, "counts": dict(delivery_counts), "violations": violations},
            "order": {"valid": True, "counts": {}, "violations": []},
        },
        "expectations": [{"name": "nothing-acknowledged-lost", "valid": True}],
        "valid": not violations,
    }


def ran(scenario: Scenario) -> History:
    """The history of a run of ``scenario``'s producers as far as known anomalies look: each worker's client-config op
    (the library and settings it ran with, built as the worker builds it) and a send, which puts it on the producers'
    side."""
    from failsafe.workloads.specs import ProducerSpec
    from failsafe.workloads.verifiable.clients import VerifiableProducerSpec
    from failsafe.workloads.worker import client_config_fields

    ops = []
    for p in scenario.producers:
        for name in p.processes():
            fields = {
                "process": name,
                "topic": p.topic,
                "acks": p.acks,
                "idempotence": p.idempotence,
                "retries": p.retries,
                "linger_ms": p.linger_ms,
                "delivery_timeout_ms": p.delivery_timeout_ms,
                "properties": p.properties,
            }
            spec = (
                VerifiableProducerSpec(**fields, kafka_version="4.3.1")
                if p.driver == "kafka-verifiable"
                else ProducerSpec(**fields)
            )
            ops.append(
                {"time_ns": 1, "process": name, "type": "info", "f": "client-config", **client_config_fields(spec)}
            )
            ops.append(
                {
                    "time_ns": 2,
                    "process": name,
                    "type": "invoke",
                    "f": "send",
                    "id": 1,
                    "topic": p.topic,
                    "value": f"{name}:1",
                }
            )
    return history_from_ops(ops)


def classify(results: dict, scenario: Scenario) -> dict:
    return classify_with_history(results, scenario, ran(scenario))


# -- --set ----------------------------------------------------------------------------------------
def test_paths_read_indexes_stars_and_quoted_names() -> None:
    assert parse_path('producers[0].properties."max.in.flight"') == ["producers", 0, "properties", "max.in.flight"]
    assert parse_path("producers[*].acks") == ["producers", "*", "acks"]
    assert parse_path("phases.chaos_s") == ["phases", "chaos_s"]


def test_overrides_change_a_copy_and_read_values_as_toml() -> None:
    data = copy.deepcopy(SCENARIO)
    changed = apply_overrides(
        data,
        [
            "producers[*].acks=1",
            'producers[0].properties."max.in.flight"=1',
            "phases.chaos_s=7.5",
            "producers[0].driver=kafka-verifiable",
        ],
    )
    assert data == SCENARIO, "the original is not touched"
    assert changed["producers"][0]["acks"] == 1  # TOML: an integer, which the schema reads as acks "1"
    assert changed["producers"][0]["properties"] == {"max.in.flight": 1}
    assert changed["phases"] == {"chaos_s": 7.5}
    assert changed["producers"][0]["driver"] == "kafka-verifiable"  # not TOML: taken as a string


@pytest.mark.parametrize(
    "assignment, message",
    [
        ("producers[0].acks", "expected PATH=VALUE"),
        ("producers[3].acks=1", "index 3 is out of range (the list has 1 entries)"),
        ("name.first=1", "inside something that is not a table"),
        ('producers[0]."unclosed=1', "an opening quote without its closing one"),
        ("=1", "an empty path"),
    ],
)
def test_bad_overrides_say_what_is_wrong(assignment: str, message: str) -> None:
    with pytest.raises(OverrideError, match=message.replace("(", r"\(").replace(")", r"\)")):
        apply_overrides(SCENARIO, [assignment])


def test_an_override_is_validated_with_the_scenario_and_kept_in_its_raw_data() -> None:
    scenario = load_scenario("broker-failover", ("producers[*].acks=1",))
    assert all(p.acks == "1" for p in scenario.producers)
    assert all(p["acks"] == 1 for p in scenario.raw["producers"])  # what scenario.json records
    with pytest.raises(ScenarioError, match="acks: '2' must be 0, 1 or all"):
        load_scenario("broker-failover", ("producers[0].acks=2",))


# -- known anomalies ------------------------------------------------------------------------------
def test_a_run_whose_only_violation_is_known_is_known_never_valid() -> None:
    results = classify(_results(**{"duplicate-acknowledged": 3}), parse_scenario(copy.deepcopy(SCENARIO)))
    assert results["verdict"] == "KNOWN"
    assert results["valid"] is False, "the checkers' own verdict is kept"
    assert results["known"][0]["anomaly"] == "delivery.duplicate-acknowledged" and results["known"][0]["count"] == 3
    assert Verdict.of_run(results) is Verdict.KNOWN and Verdict.KNOWN.exit_code == 4


def test_a_lost_acknowledged_write_is_never_known() -> None:
    results = classify(_results(lost=1, **{"duplicate-acknowledged": 3}), parse_scenario(copy.deepcopy(SCENARIO)))
    assert results["verdict"] == "INVALID"
    assert results["unexplained"] == ["delivery.lost"]
    for loss in ("delivery.lost", "delivery.lost-after-read", "semantics.missing", "availability.never-recovered"):
        with pytest.raises(
            ScenarioError, match=r"a lost acknowledged write \(or a partition that never came back\) is never a known"
        ):
            parse_scenario({**copy.deepcopy(SCENARIO), "known": [{**KNOWN_DUPLICATE, "anomaly": loss}]})


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"when": {}}, r"known\[0\]\.when: a known anomaly needs its condition"),
        (
            {"anomaly": "delivery.duplicate-acknowleged"},
            r"the delivery checker reports no violation 'duplicate-acknowleged': it reports lost,",
        ),
        ({"anomaly": "dr.mirror-reordered"}, r"'dr' is not a checker of lab scenarios"),
        ({"anomaly": "deliverylost"}, "must be CHECKER.VIOLATION"),
        ({"client": "kafka-go"}, "is not one of librdkafka, kafka-java"),
    ],
)
def test_a_known_entry_is_checked_against_what_the_checkers_report_at_parse_time(entry: dict, message: str) -> None:
    with pytest.raises(ScenarioError, match=message):
        parse_scenario({**copy.deepcopy(SCENARIO), "known": [{**KNOWN_DUPLICATE, **entry}]})


def test_a_known_entry_without_when_is_refused() -> None:
    without = {k: v for k, v in KNOWN_DUPLICATE.items() if k != "when"}
    with pytest.raises(ScenarioError, match=r"known\[0\]\.when: a known anomaly needs its condition"):
        parse_scenario({**copy.deepcopy(SCENARIO), "known": [without]})


def test_a_known_entry_never_covers_a_client_that_recorded_no_settings() -> None:
    """broker-restart's librdkafka duplicates are known; a second writer whose client-config is missing is outside
    it."""
    scenario = load_scenario("broker-restart")
    results = _results(**{"duplicate-acknowledged": 1})
    history = ran(scenario)
    assert classify_with_history(copy.deepcopy(results), scenario, history)["verdict"] == "KNOWN"
    stranger = {
        "time_ns": 3,
        "process": "other",
        "type": "invoke",
        "f": "send",
        "id": 1,
        "topic": "my-failsafe-topic",
        "value": "other:1",
    }
    mixed = history_from_ops([*(r for r in _ops_of(history)), stranger])
    assert classify_with_history(copy.deepcopy(results), scenario, mixed)["verdict"] == "INVALID"


def _ops_of(history: History) -> list[dict]:
    """The client-config and send ops a History from ``ran`` was built of."""
    configs = [
        {
            "time_ns": r["time_ns"],
            "process": r["process"],
            "type": "info",
            "f": "client-config",
            "client": r["client"],
            "client_version": r["client_version"],
            "config": r["config"],
            "log": r["log"],
        }
        for r in history.clients.to_dicts()
    ]
    sends = [
        {
            "time_ns": r["invoke_ns"],
            "process": r["process"],
            "type": "invoke",
            "f": "send",
            "id": r["id"],
            "topic": r["topic"],
            "value": r["value"],
        }
        for r in history.sends.to_dicts()
    ]
    return configs + sends


def test_a_consumer_side_anomaly_is_matched_against_the_consumers_not_the_producers() -> None:
    from failsafe.workloads.specs import ConsumerSpec
    from failsafe.workloads.worker import client_config_fields

    entry = {
        "anomaly": "order.nonmonotonic-poll",
        "client": "librdkafka",
        "reference": "https://example.org/issue",
        "when": {"group.protocol": "consumer"},
    }
    scenario = parse_scenario({**copy.deepcopy(SCENARIO), "known": [entry]})
    results = {
        "checkers": {
            "order": {"valid": False, "counts": {"nonmonotonic-poll": 1}, "violations": ["nonmonotonic-poll"]}
        },
        "expectations": [],
        "valid": False,
    }

    def history_with_consumer(protocol: str) -> History:
        spec = ConsumerSpec(process="c-0", topics=("t",), group="g", properties={"group.protocol": protocol})
        consumer = {"time_ns": 1, "process": "c-0", "type": "info", "f": "client-config", **client_config_fields(spec)}
        poll = {"time_ns": 2, "process": "c-0", "type": "ok", "f": "poll", "group": "g", "records": []}
        assign = {
            "time_ns": 2,
            "process": "c-0",
            "type": "info",
            "f": "assign",
            "group": "g",
            "partitions": [{"topic": "t", "partition": 0}],
        }
        return history_from_ops([consumer, poll, assign])

    known = classify_with_history(copy.deepcopy(results), scenario, history_with_consumer("consumer"))
    assert (
        known["verdict"] == "KNOWN"
        and known["known"][0]["side"] == "consumers"
        and known["known"][0]["clients"] == ["c-0"]
    )
    classic = classify_with_history(copy.deepcopy(results), scenario, history_with_consumer("classic"))
    assert classic["verdict"] == "INVALID" and classic["unexplained"] == ["order.nonmonotonic-poll"]


def test_a_run_outside_the_condition_stays_invalid() -> None:
    no_idempotence = copy.deepcopy(SCENARIO)
    no_idempotence["producers"][0]["idempotence"] = False
    results = classify(_results(**{"duplicate-acknowledged": 3}), parse_scenario(no_idempotence))
    assert results["verdict"] == "INVALID" and results["unexplained"] == ["delivery.duplicate-acknowledged"]

    java = copy.deepcopy(SCENARIO)
    java["producers"][0]["driver"] = "kafka-verifiable"
    results = classify(_results(**{"duplicate-acknowledged": 3}), parse_scenario(java))
    assert results["verdict"] == "INVALID", "the entry is of librdkafka; the Java producer is outside it"


def test_another_kind_of_violation_or_a_failed_expectation_is_not_covered() -> None:
    scenario = parse_scenario(copy.deepcopy(SCENARIO))
    results = classify(_results(**{"duplicate-unacknowledged": 2}), scenario)
    assert results["verdict"] == "INVALID" and results["unexplained"] == ["delivery.duplicate-unacknowledged"]
    failed = _results(**{"duplicate-acknowledged": 3})
    failed["expectations"][0]["valid"] = False
    results = classify(failed, scenario)
    assert results["verdict"] == "INVALID" and "expectation nothing-acknowledged-lost" in results["unexplained"]


def test_a_valid_run_is_valid_whatever_it_declares() -> None:
    assert classify(_results(), parse_scenario(copy.deepcopy(SCENARIO)))["verdict"] == "VALID"


# -- --repeat -------------------------------------------------------------------------------------
def test_repeat_counts_runs_per_anomaly_and_spreads_the_times(tmp_path) -> None:
    scenario = parse_scenario(copy.deepcopy(SCENARIO))
    runs = []
    for i, duplicates in enumerate((0, 4, 0, 1)):
        results = classify(_results(**{"duplicate-acknowledged": duplicates}), scenario)
        results["checkers"]["availability"] = {
            "valid": True,
            "max_unavailable_ms": 9000.0 + 100 * i,
            "stall_by_group": {"follower": {"max_stall_ms": 8000.0 + i}},
        }
        runs.append((f"run-{i}", results))
    stats = aggregate("mini", runs, ["producers[0].acks=all"])
    assert stats["runs"] == 4 and stats["verdicts"] == {"VALID": 2, "KNOWN": 2} and stats["verdict"] == "KNOWN"
    assert stats["anomalies"]["delivery.duplicate-acknowledged"] == {
        "runs": 2,
        "total": 5,
        "run_dirs": ["run-1", "run-3"],
    }
    assert stats["times"]["availability.max_unavailable_ms"]["median"] == 9150.0
    assert stats["times"]["availability.stall_by_group.follower"]["max"] == 8003.0
    path = write_aggregate(tmp_path / "mini", stats)
    assert json.loads(path.read_text())["overrides"] == ["producers[0].acks=all"]


def test_repeat_spreads_a_dr_runs_rpo_and_rto() -> None:
    runs = []
    for i, (rpo, twice) in enumerate(((0, 180), (12, 200), (3, 150))):
        dr = {
            "valid": True,
            "counts": {"rpo-records": rpo, "consumed-twice": twice},
            "rpo_seconds": rpo / 200,
            "rto_first_read_s": 0.3 + i / 10,
            "rto_caught_up_s": 1.0 + i,
            "violations": [],
        }
        runs.append((f"run-{i}", {"valid": True, "checkers": {"dr": dr}}))
    times = aggregate("dr-failover", runs)["times"]
    assert times["dr.rpo-records (records)"]["median"] == 3.0 and times["dr.consumed-twice (records)"]["max"] == 200.0
    assert times["dr.rpo_ms"]["max"] == 60.0 and times["dr.rto_first_read_ms"]["median"] == 400.0
    assert times["dr.rto_caught_up_ms"] == {"n": 3, "median": 2000.0, "p95": 3000.0, "min": 1000.0, "max": 3000.0}


def test_spread_uses_the_nearest_rank_p95() -> None:
    assert spread([]) is None
    assert spread([float(v) for v in range(1, 21)]) == {"n": 20, "median": 10.5, "p95": 19.0, "min": 1.0, "max": 20.0}


@pytest.mark.parametrize("name", ["two-brokers-down", "broker-restart", "leader-pause-timeout"])
def test_the_catalogs_idempotent_duplicates_are_known_for_librdkafka_only(name: str) -> None:
    duplicates = {"duplicate-acknowledged": 5, "duplicate-unacknowledged": 2}
    assert classify(_results(**duplicates), load_scenario(name))["verdict"] == "KNOWN"
    java = load_scenario(name, ("producers[*].driver=kafka-verifiable",))
    results = classify(_results(**duplicates), java)
    assert results["verdict"] == "INVALID"
    assert results["unexplained"] == ["delivery.duplicate-acknowledged", "delivery.duplicate-unacknowledged"]
    no_idempotence = load_scenario(name, ("producers[*].idempotence=false",))
    assert classify(_results(**duplicates), no_idempotence)["verdict"] == "INVALID"
    assert classify(_results(lost=1, **duplicates), load_scenario(name))["verdict"] == "INVALID"
