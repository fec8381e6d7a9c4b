from __future__ import annotations

import pytest

from failsafe.checkers.availability import check
from tests.unit.test_checker_builders import assign, fault, history, revoke, send, topology

BEFORE = topology(0, [(0, 1, [1, 2, 3], [1, 2, 3]), (1, 2, [2, 3, 1], [2, 3, 1])])
STILL = topology(250, [(0, 1, [1, 2, 3], [1, 2, 3]), (1, 2, [2, 3, 1], [2, 3, 1])])
MOVED = topology(500, [(0, 2, [1, 2, 3], [2, 3]), (1, 2, [2, 3, 1], [2, 3])])
HEALED = topology(2000, [(0, 2, [1, 2, 3], [2, 3, 1]), (1, 2, [2, 3, 1], [2, 3, 1])])
SENDS = [*send("p0", 1, "a", 0, ms=9), *send("p0", 2, "b", 0, ms=15, partition=1), *send("p0", 3, "c", 1, ms=599), *send("p0", 4, "d", 1, ms=30, partition=1)]
KILL = fault(1, start_ms=20, stop_ms=1000, nodes=[1])


def _failover(*extra: dict | list[dict]):
    return history(BEFORE, STILL, MOVED, HEALED, *SENDS, *KILL, *extra)


def test_a_leader_kill_is_measured_per_affected_partition() -> None:
    result = check(_failover())
    assert result["valid"] is True
    [measured] = result["faults"]
    assert measured["nodes"] == ["1"] and measured["rebalances_during"] == 0
    [partition] = measured["affected_partitions"]
    assert partition["partition"] == 0 and partition["leader_before"] == 1
    assert partition["unavailable_ms"] == pytest.approx(590)
    assert partition["new_leader"] == 2 and partition["new_leader_ms"] == pytest.approx(480)
    assert partition["new_leader_in_isr"] is True
    assert partition["isr_shrank"] is True and partition["isr_shrank_ms"] == pytest.approx(480)
    assert result["max_unavailable_ms"] == pytest.approx(590) and result["median_new_leader_ms"] == pytest.approx(480)
    assert result["max_sample_gap_ms"] == pytest.approx(1500)


def test_end_state_is_reported() -> None:
    result = check(_failover())
    assert result["isr_full_at_end"] is True
    assert result["preferred_leaders_at_end"] is False
    assert result["leaderless_at_end"] == 0


def test_exceeding_max_unavailable_ms_is_invalid() -> None:
    result = check(_failover(), {"max_unavailable_ms": 100})
    assert result["valid"] is False
    assert result["counts"]["slow-failover"] == 1
    assert result["examples"]["slow-failover"][0]["unavailable_ms"] == pytest.approx(590)
    assert check(_failover(), {"max_unavailable_ms": 1000})["valid"] is True


def test_a_partition_never_available_again_exceeds_any_limit() -> None:
    h = history(BEFORE, MOVED, *send("p0", 1, "a", 0, ms=9), *KILL)
    result = check(h, {"max_unavailable_ms": 60_000})
    assert result["valid"] is False and result["counts"]["never-available-again"] == 1


def test_a_rebalance_during_a_broker_fault_is_counted_and_can_be_forbidden() -> None:
    h = _failover(assign("c0", [0, 1], ms=0), revoke("c0", [0, 1], ms=300), assign("c0", [0, 1], ms=310))
    assert check(h)["valid"] is True
    result = check(h, {"expect_no_rebalance": True})
    assert result["valid"] is False
    assert result["faults"][0]["rebalances_during"] == 2
    assert result["examples"]["rebalance-during-fault"] == [{"fault_id": 1, "rebalances_during": 2}]


def test_rebalances_of_a_faulted_consumer_do_not_count() -> None:
    h = _failover(*fault(2, start_ms=290, stop_ms=295, nodes=["c0"], fault_name="kill-consumer", target="consumer"), revoke("c0", [0], ms=300))
    assert check(h, {"expect_no_rebalance": True})["valid"] is True


def test_a_rebalance_long_after_the_fault_does_not_count() -> None:
    h = _failover(assign("c0", [0], ms=1000 + 10_001))
    assert check(h, {"expect_no_rebalance": True})["valid"] is True


def test_a_quorum_fault_affects_every_partition() -> None:
    h = history(BEFORE, MOVED, *SENDS, *fault(1, start_ms=20, stop_ms=1000, nodes=[1000], fault_name="quorum-loss", target="quorum"))
    [measured] = check(h)["faults"]
    assert [p["partition"] for p in measured["affected_partitions"]] == [0, 1]


def test_faults_without_topology_are_unknown() -> None:
    assert check(history(*SENDS, *KILL))["valid"] == "unknown"


def test_faults_without_acknowledged_sends_are_unknown() -> None:
    assert check(history(BEFORE, MOVED, *KILL))["valid"] == "unknown"


def test_no_faults_is_valid() -> None:
    result = check(history(BEFORE, *SENDS))
    assert result["valid"] is True and result["faults"] == []


def test_leaderless_at_end_is_counted() -> None:
    result = check(history(topology(0, [(0, -1, [1, 2, 3], [])])))
    assert result["leaderless_at_end"] == 1 and result["isr_full_at_end"] is False


def test_an_empty_history_is_valid() -> None:
    result = check(history())
    assert result["valid"] is True and result["isr_full_at_end"] is None
