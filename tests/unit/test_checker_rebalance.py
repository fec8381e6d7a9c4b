from __future__ import annotations

import pytest

from failsafe.checkers.rebalance import check
from tests.unit.test_checker_builders import assign, client_event, fault, history, poll, rec, revoke

START = [assign("c0", [0], ms=0), assign("c1", [1], ms=0)]
KILL_C1 = fault(1, start_ms=100, stop_ms=110, nodes=["c1"], fault_name="kill-consumer", target="consumer")


def test_a_killed_members_partition_moving_to_a_survivor_is_measured() -> None:
    h = history(*START, *KILL_C1, assign("c0", [1], ms=5000), poll("c0", [rec(7, "v", partition=1)], ms=5100))
    result = check(h)
    assert result["valid"] is True
    [event] = result["events"]
    assert (event["source"], event["fault_id"], event["group"], event["processes"]) == ("fault", 1, "g", ["c1"])
    assert event["pause_ms"] == pytest.approx(4900) and event["all_reassigned"] is True
    [moved] = event["moved_partitions"]
    assert (moved["partition"], moved["previous_owner"], moved["new_owner"], moved["reassigned"]) == (1, "c1", "c0", True)
    assert moved["reassigned_ms"] == pytest.approx(4900) and moved["first_poll_after_ms"] == pytest.approx(5000)
    assert result["max_pause_ms"] == pytest.approx(4900)


def test_with_the_eager_protocol_the_survivors_partitions_count_too() -> None:
    h = history(*START, *KILL_C1, revoke("c0", [0], ms=4000), assign("c0", [0, 1], ms=4500), assign("c0", [0], ms=9000))
    [event] = check(h)["events"]
    assert event["pause_ms"] == pytest.approx(4400)


def test_a_partition_never_reassigned_while_a_member_lives_is_invalid() -> None:
    result = check(history(*START, *KILL_C1))
    assert result["valid"] is False
    assert result["counts"]["never-reassigned"] == 1
    assert result["examples"]["never-reassigned"] == [{"processes": ["c1"], "group": "g", "topic": "t", "partition": 1}]
    assert result["events"][0]["members_alive_at_end"] == ["c0"]


def test_no_reassignment_is_fine_when_every_member_stopped() -> None:
    h = history(*START, client_event("crash", "c1", ms=100), client_event("close", "c0", ms=150))
    result = check(h)
    assert result["valid"] is True
    assert [event["source"] for event in result["events"]] == ["crash", "close"]


def test_a_pause_over_max_pause_ms_is_invalid() -> None:
    h = history(*START, *KILL_C1, assign("c0", [1], ms=5000))
    result = check(h, {"max_pause_ms": 1000})
    assert result["valid"] is False and result["counts"]["slow-rebalance"] == 1
    assert check(h, {"max_pause_ms": 10_000})["valid"] is True


def test_a_crash_without_a_fault_is_an_event() -> None:
    h = history(*START, client_event("crash", "c1", ms=100), assign("c0", [1], ms=3000))
    [event] = check(h)["events"]
    assert event["source"] == "crash" and event["pause_ms"] == pytest.approx(2900)


def test_the_crash_a_fault_caused_is_not_a_second_event() -> None:
    h = history(*START, *KILL_C1, client_event("crash", "c1", ms=101), assign("c0", [1], ms=3000))
    assert len(check(h)["events"]) == 1


def test_a_consumer_fault_on_a_process_in_no_group_is_unknown() -> None:
    h = history(*fault(1, start_ms=100, stop_ms=110, nodes=["c9"], fault_name="kill-consumer", target="consumer"))
    result = check(h)
    assert result["valid"] == "unknown" and result["counts"]["unmeasured-consumer-faults"] == 1


def test_an_empty_history_is_valid() -> None:
    assert check(history())["valid"] is True
