"""Verdicts that cannot be talked out of a loss, or out of a partition that never came back (issue 26), on hand-written
histories.

The scenarios are the catalog's own, judged as `failsafe check` judges a stored run (scenarios/store/check.py).
"""

from __future__ import annotations

import pytest

from failsafe.checkers.availability import check as availability
from failsafe.checkers.pipeline.judgeable import check as pipeline_run
from failsafe.history.ops import Op, event
from failsafe.scenarios.kinds.lab import CHECKERS as LAB_CHECKERS
from failsafe.scenarios.registry import load_scenario
from failsafe.scenarios.store.check import check_history
from tests.unit.test_checker_builders import (
    assign,
    at,
    client_config,
    declared,
    fault,
    finished,
    history,
    log_read,
    poll,
    rec,
    send,
    topology,
)

TOPIC = "events"


def _leader_isolated_run(truncated: str) -> list[dict]:
    """leader-isolated's two producers each wrote one record to events-0, acknowledged by the isolated leader and read
    by the group; after the heal the log holds another record at ``truncated``'s offset: that write was truncated after
    it was read."""
    acksall, acks1 = ("all-1", "one-1")
    offsets = {acksall: 0, acks1: 1}
    log = [rec(o, "new-1" if v == truncated else v, topic=TOPIC) for v, o in offsets.items()]
    return [
        client_config("acksall", acks="all", enable_idempotence="true"),
        client_config("acks1", acks="1", enable_idempotence="false"),
        *send("acksall", 1, acksall, 0, topic=TOPIC),
        *send("acks1", 1, acks1, 1, topic=TOPIC),
        {**assign("reader-0", [0], group="events-readers"), "partitions": [{"topic": TOPIC, "partition": 0}]},
        poll("reader-0", [rec(0, acksall, topic=TOPIC), rec(1, acks1, topic=TOPIC)], ms=5, group="events-readers"),
        {**log_read(log), "topic": TOPIC, "partition": 0},
        finished(
            declared("acksall", topics=[TOPIC]),
            declared("acks1", topics=[TOPIC], may_lose=True),
            declared("reader-0", "consumer", topics=[TOPIC], group="events-readers"),
        ),
    ]


def test_an_acks_all_write_read_and_then_lost_makes_leader_isolated_invalid() -> None:
    results = check_history(
        history(*_leader_isolated_run(truncated="all-1")), load_scenario("leader-isolated"), LAB_CHECKERS
    )
    delivery = results["checkers"]["delivery"]
    assert results["valid"] is False and results["verdict"] == "INVALID"
    assert "lost-after-read" in delivery["violations"] and delivery["counts"]["lost-after-read-allowed"] == 0
    assert (
        delivery["by_process"]["acksall"]["lost-after-read"] == 1
        and delivery["by_process"]["acksall"]["durable"] is True
    )
    # The scenario's own expectation counts only unread writes: the checker, not the expectation, caught it.
    assert [e["valid"] for e in results["expectations"]] == [True]


@pytest.mark.parametrize("log_read", ["failed", "absent"])
def test_when_the_final_log_read_of_a_read_acks_all_write_failed_the_run_cannot_be_valid(log_read: str) -> None:
    ops = _leader_isolated_run(truncated="all-1")
    ops[-2] = (
        {
            "time_ns": at(100_000),
            "process": "log-reader",
            "type": "fail",
            "f": "log-read",
            "topic": TOPIC,
            "partition": 0,
            "error": "read 0 records but not up to the high watermark 2 within 30s",
        }
        if log_read == "failed"
        else {**log_read_op_of_another_partition()}
    )
    results = check_history(history(*ops), load_scenario("leader-isolated"), LAB_CHECKERS)
    delivery = results["checkers"]["delivery"]
    assert delivery["valid"] == "unknown" and delivery["counts"]["lost-after-read-unverified"] == 2
    assert results["verdict"] == "UNKNOWN"


def log_read_op_of_another_partition() -> dict:
    """The log read happened, for another topic only: nothing says what the log of events holds."""
    return {**log_read([rec(0, "x", topic="other")]), "topic": "other", "partition": 0}


def test_an_acks_1_write_lost_the_same_way_is_counted_against_its_writer_not_the_run() -> None:
    results = check_history(
        history(*_leader_isolated_run(truncated="one-1")), load_scenario("leader-isolated"), LAB_CHECKERS
    )
    delivery = results["checkers"]["delivery"]
    assert delivery["counts"]["lost-after-read"] == delivery["counts"]["lost-after-read-allowed"] == 1
    assert delivery["by_process"]["acks1"]["may_lose"] is True
    # The loss itself is the writer's; that a reader saw offset 1 hold two values is not excused by it.
    assert delivery["violations"] == ["inconsistent-offsets"]


def test_an_acks_all_producer_may_never_be_declared_lossy() -> None:
    with pytest.raises(Exception, match=r"producers\[0\]\.may_lose: an acks=all producer promises durability"):
        load_scenario("leader-isolated", ("producers[0].may_lose=true",))


# -- liveness -----------------------------------------------------------------------------------
def _healed_but_leaderless() -> list[dict]:
    """A broker killed and restarted; after the heal the last topology sample still shows t-1 without a leader."""
    return [
        topology(0, [(0, 0, [0, 1], [0, 1]), (1, 1, [1, 0], [1, 0])]),
        *send("p0", 1, "v1", 0),
        *send("p0", 2, "v2", 0, partition=1, ms=1),
        *fault(1, start_ms=10, stop_ms=20, nodes=[1]),
        *send("p0", 3, "v3", 1, ms=30),
        *send("p0", 4, "v4", 1, partition=1, ms=31),
        topology(40, [(0, 0, [0, 1], [0]), (1, -1, [1, 0], [])]),
    ]


def test_a_partition_leaderless_after_the_heal_is_never_recovered() -> None:
    result = availability(history(*_healed_but_leaderless()))
    assert result["valid"] is False and "never-recovered" in result["violations"]
    (row,) = result["examples"]["never-recovered"]
    assert row["partition"] == "t-1" and row["seen"] == "no leader in the last topology sample"
    # A scenario that expects it by name (every replica removed on purpose) says so; nothing else does.
    assert (
        "never-recovered"
        not in availability(history(*_healed_but_leaderless()), {"expect_unrecovered": ["t-1"]})["violations"]
    )


def test_a_recover_timeout_is_never_recovered_even_when_the_last_sample_looks_fine() -> None:
    timeout = {
        **event(Op.RECOVER_TIMEOUT, time_ns=at(35), timeout_s=90.0),
        "leaderless": [],
        "under_replicated": ["t-0"],
    }
    ops = [*_healed_but_leaderless()[:-1], timeout, topology(40, [(0, 0, [0, 1], [0, 1]), (1, 1, [1, 0], [1, 0])])]
    result = availability(history(*ops))
    assert result["violations"] == ["never-recovered"]
    assert [(r["partition"], r["seen"]) for r in result["examples"]["never-recovered"]] == [
        ("t-0", "ISR not full at the recover timeout")
    ]


def test_a_partition_written_before_a_fault_and_never_again_is_never_recovered() -> None:
    ops = [
        topology(0, [(0, 1, [1, 0], [1, 0])]),
        *send("p0", 1, "v1", 0),
        *fault(1, start_ms=10, stop_ms=20, nodes=[1]),
        *send("p0", 2, "v2", None, ms=30, outcome="info"),
        topology(40, [(0, 0, [1, 0], [0])]),
    ]
    result = availability(history(*ops))
    assert (
        result["violations"] == ["never-recovered"]
        and result["examples"]["never-recovered"][0]["seen"] == "no write acknowledged after the fault"
    )


def test_the_pipeline_and_dr_kinds_also_fail_a_run_that_never_recovered() -> None:
    ops = [
        topology(0, [(0, -1, [0, 1], [])]),
        {**event(Op.DRAINED, process="pipeline", ok=True, drain_s=1.0)},
        {**event(Op.SIMULATOR_EXIT, process="simulator", exit_code=0)},
    ]
    result = pipeline_run(history(*ops))
    assert result["valid"] is False and result["violations"] == ["never-recovered"]


# -- checker options are the scenario's input: refused when it is parsed, never a checker turned UNKNOWN at run time
# ----------
@pytest.mark.parametrize(
    ("checkers", "message"),
    [
        (
            {"delivery": {"allow_loss": True}},
            "checkers.delivery.allow_loss: there is no checker-wide allowance of loss",
        ),
        ({"delivery": {"lossy_writers": [".*"]}}, "checkers.delivery.lossy_writers: is derived from the producers"),
        ({"order": {"no_such_option": 1}}, r"checkers.order: order: unknown option\(s\) \['no_such_option'\]"),
        ({"availability": {"max_unavailable_ms": "soon"}}, "option 'max_unavailable_ms' has the wrong type or value"),
        ({"dr": {}}, "'dr' is not a checker of lab scenarios"),
    ],
)
def test_a_bad_checker_option_is_refused_when_the_scenario_is_parsed(checkers: dict, message: str) -> None:
    from failsafe.scenarios.base import ScenarioError
    from failsafe.scenarios.registry import parse_scenario

    data = {"name": "opts", "topics": [{"name": "t", "partitions": 1, "replication_factor": 1}], "checkers": checkers}
    with pytest.raises(ScenarioError, match=message):
        parse_scenario(data)


def test_a_partition_no_producer_tried_again_is_not_called_never_recovered() -> None:
    """A sparse writer that sent nothing to t-0 after the fault says nothing about whether t-0 would have taken it."""
    ops = [
        topology(0, [(0, 1, [1, 0], [1, 0])]),
        *send("p0", 1, "v1", 0),
        *fault(1, start_ms=10, stop_ms=20, nodes=[1]),
        topology(40, [(0, 0, [1, 0], [0, 1])]),
    ]
    result = availability(history(*ops))
    assert (
        result["counts"]["never-available-again"] == 1
        and result["counts"]["never-recovered"] == 0
        and result["valid"] is True
    )


# -- whose loss may be allowed: exactly the writers a scenario names ------------------------------------------------
def _lossy(scenario, processes: list[str], acks: str = "1") -> set[str]:
    """The writers evidence.lossy_writers lets lose, of a run of ``scenario`` whose ``processes`` each wrote with
    ``acks``."""
    from failsafe.checkers.evidence import lossy_writers
    from failsafe.history.ops import declare

    ops = [declare(scenario.declared_clients(), time_ns=at(0))]
    for i, process in enumerate(processes):
        ops += [client_config(process, acks=acks), *send(process, i, f"v{i}", i)]
    return lossy_writers(history(*ops))


def test_the_writers_that_may_lose_are_named_exactly() -> None:
    from failsafe.scenarios.registry import parse_scenario

    base = {"name": "w", "topics": [{"name": "t", "partitions": 1, "replication_factor": 1}]}
    lab = parse_scenario(
        {
            **base,
            "producers": [
                {"name": "a", "topic": "t", "acks": "1", "may_lose": True},
                {"name": "a-s1", "topic": "t", "acks": "1"},
                {"name": "b", "topic": "t", "acks": "0", "count": 2, "may_lose": True},
            ],
        }
    )
    assert [(c["process"], c["may_lose"]) for c in lab.declared_clients()] == [
        ("a", True),
        ("a-s1", False),
        ("b-0", True),
        ("b-1", True),
    ]
    assert _lossy(lab, ["a", "a-s1", "b-0", "b-1", "b-10", "a.1"]) == {"a", "b-0", "b-1", "a.1"}
    assert _lossy(lab, ["a", "b-0"], acks="all") == set(), "what it recorded (acks=all) wins over any declaration"


def test_two_groups_that_would_run_one_worker_name_are_refused() -> None:
    from failsafe.scenarios.base import ScenarioError
    from failsafe.scenarios.registry import parse_scenario

    with pytest.raises(ScenarioError, match="two producers or consumers would run a worker named b-1"):
        parse_scenario(
            {
                "name": "w",
                "topics": [{"name": "t", "partitions": 1, "replication_factor": 1}],
                "producers": [{"name": "b", "topic": "t", "count": 2}, {"name": "b-1", "topic": "t"}],
            }
        )


def test_a_dr_worker_matches_its_restarts_on_either_cluster_and_nothing_else() -> None:
    dr = load_scenario("dr-failover", ("producers[0].acks=1", "producers[0].may_lose=true"))
    name = dr.producers[0].name
    names = [f"{name}@primary", f"{name}-s2@backup", f"{name}x@primary", f"{name}@primary@backup", name]
    assert _lossy(dr, names) == {names[0], names[1]}


def test_kafkas_java_producer_with_acks_minus_one_is_durable() -> None:
    from failsafe.checkers.evidence import durable_writers
    from failsafe.history.load import history_from_ops
    from failsafe.workloads.verifiable.clients import VerifiableProducerSpec
    from failsafe.workloads.worker import client_config_fields

    java = VerifiableProducerSpec(process="j", topic="t", acks="all", kafka_version="4.3.1")
    op = {"time_ns": 1, "process": "j", "type": "info", "f": "client-config", **client_config_fields(java)}
    assert {e["name"]: e["value"] for e in op["config"]}["acks"] == "-1"
    assert durable_writers(history_from_ops([op])) == {"j"}
