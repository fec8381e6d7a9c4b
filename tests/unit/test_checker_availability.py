from __future__ import annotations

import pytest

from failsafe.checkers.availability import check
from failsafe.checkers.evidence import clock_bounds
from failsafe.history.model import History
from tests.unit.test_checker_builders import assign, at, client_config, fault, history, revoke, send, topology

BEFORE = topology(0, [(0, 1, [1, 2, 3], [1, 2, 3]), (1, 2, [2, 3, 1], [2, 3, 1])])
STILL = topology(250, [(0, 1, [1, 2, 3], [1, 2, 3]), (1, 2, [2, 3, 1], [2, 3, 1])])
MOVED = topology(500, [(0, 2, [1, 2, 3], [2, 3]), (1, 2, [2, 3, 1], [2, 3])])
HEALED = topology(2000, [(0, 2, [1, 2, 3], [2, 3, 1]), (1, 2, [2, 3, 1], [2, 3, 1])])
SENDS = [
    *send("p0", 1, "a", 0, ms=9),
    *send("p0", 2, "b", 0, ms=15, partition=1),
    *send("p0", 3, "c", 1, ms=599),
    *send("p0", 4, "d", 1, ms=30, partition=1),
]
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


def test_an_ack_of_a_send_made_before_the_fault_does_not_end_its_window() -> None:
    """A frozen leader's answers already in its socket arrive after the SIGSTOP: the window runs to the first ack of a
    new send."""
    late_ack = send("p0", 5, "e", 1, ms=15, latency_ms=10)  # sent before the fault at 20 ms, acknowledged at 25 ms
    result = check(_failover(*late_ack))
    [partition] = result["faults"][0]["affected_partitions"]
    assert partition["last_ok_before_ns"] == at(25) and partition["first_ok_after_ns"] == at(600)
    assert partition["unavailable_ms"] == pytest.approx(575)


def test_a_send_retried_to_the_new_leader_does_not_shorten_the_window() -> None:
    """Sent before the kill, acknowledged by the new leader 14 ms before the first new send: the window is the gap
    before it."""
    retried = send(
        "p0", 5, "e", 1, ms=15, latency_ms=571
    )  # sent at 15 ms, before the fault at 20 ms; acknowledged at 586 ms
    result = check(_failover(*retried))
    [partition] = result["faults"][0]["affected_partitions"]
    assert partition["last_ok_before_ns"] == at(10) and partition["first_ok_after_ns"] == at(586)
    assert partition["unavailable_ms"] == pytest.approx(576)


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


def test_a_rebalance_within_the_clock_bound_of_the_faults_start_is_undecided() -> None:
    # c0 on a host whose clock is known within 2 ms revoked 1 ms after the fault began by that clock.
    on_host = {**client_config("c0"), "host": "h2", "clock_offset_ns": 0, "clock_error_ns": 2_000_000}
    ops = [assign("c0", [0, 1], ms=0), revoke("c0", [0, 1], ms=21)]
    assert check(_failover(*ops), {"expect_no_rebalance": True})["valid"] is False
    within = check(_failover(on_host, *ops), {"expect_no_rebalance": True})
    # Within the bound it may have been before the fault or after: undecided (never an excuse), and reported as
    # measured.
    assert within["valid"] == "unknown" and within["counts"]["rebalance-during-fault-undecided"] == 1
    assert within["faults"][0]["rebalances_during"] == 1


def test_rebalances_of_a_faulted_consumer_do_not_count() -> None:
    h = _failover(
        *fault(2, start_ms=290, stop_ms=295, nodes=["c0"], fault_name="kill-consumer", target="consumer"),
        revoke("c0", [0], ms=300),
    )
    assert check(h, {"expect_no_rebalance": True})["valid"] is True


def test_a_rebalance_long_after_the_fault_does_not_count() -> None:
    h = _failover(assign("c0", [0], ms=1000 + 10_001))
    assert check(h, {"expect_no_rebalance": True})["valid"] is True


def test_a_quorum_fault_affects_every_partition() -> None:
    h = history(
        BEFORE,
        MOVED,
        *SENDS,
        *fault(1, start_ms=20, stop_ms=1000, nodes=[1000], fault_name="quorum-loss", target="quorum"),
    )
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


# Write stalls by replica role: brokers 1, 2, 3, RF 2; broker 1 is killed at 1,050 ms and back at 12,000 ms.
# Partition 0 is led by 1, partition 1 has 1 as a follower (in its ISR), partition 2 has no replica on 1.
ROLES = [(0, 1, [1, 2], [1, 2]), (1, 2, [2, 1], [2, 1]), (2, 2, [2, 3], [2, 3])]
ROLES_AFTER = [(0, 2, [1, 2], [2]), (1, 2, [2, 1], [2]), (2, 2, [2, 3], [2, 3])]
STALL_KILL = fault(1, start_ms=1050, stop_ms=12_000, nodes=[1])


def _acks(partition: int, times_ms: list[float], first_id: int) -> list[dict]:
    ops: list[dict] = []
    for i, ms in enumerate(times_ms):
        ops += send("p0", first_id + i, f"v{first_id + i}", i, ms=ms - 1, partition=partition)  # acknowledged at ms
    return ops


def _every_100ms(start_ms: int, stop_ms: int) -> list[float]:
    return [float(ms) for ms in range(start_ms, stop_ms + 1, 100)]


# Led and follower: nothing acknowledged from 1,000 ms to 10,000 ms; unreplicated: every 100 ms throughout.
STALLED = _every_100ms(0, 1000) + _every_100ms(10_000, 12_500)


def _stall_history(*extra: dict | list[dict], sample_ms: float = 0) -> History:
    return history(
        topology(sample_ms, ROLES),
        topology(10_500, ROLES_AFTER),
        *_acks(0, STALLED, 1_000),
        *_acks(1, STALLED, 2_000),
        *_acks(2, _every_100ms(0, 12_500), 3_000),
        *extra,
    )


def _by_partition(stalls: dict) -> dict[int, tuple[str, dict]]:
    return {row["partition"]: (group, row) for group, summary in stalls.items() for row in summary["examples"]}


def test_stalls_are_grouped_by_the_killed_brokers_replica_role() -> None:
    result = check(_stall_history(*STALL_KILL))
    [measured] = result["faults"]
    by_partition = _by_partition(measured["stalls"])
    assert {p: group for p, (group, _) in by_partition.items()} == {0: "led", 1: "follower", 2: "unreplicated"}
    for partition, stall_ms in ((0, 9000), (1, 9000), (2, 100)):
        row = by_partition[partition][1]
        assert row["stall_ms"] == pytest.approx(stall_ms), partition
        assert row["never_acked_after"] is False
    led, follower = by_partition[0][1], by_partition[1][1]
    assert (led["gap_start_ns"], led["gap_end_ns"]) == (at(1000), at(10_000))
    assert follower["in_isr"] is True and by_partition[2][1]["in_isr"] is False
    assert measured["stalls"]["follower"]["in_isr"] == 1
    groups = result["stall_by_group"]
    assert list(groups) == ["led", "follower", "unreplicated"]
    assert {g: (s["partitions"], s["max_stall_ms"]) for g, s in groups.items()} == {
        "led": (1, pytest.approx(9000)),
        "follower": (1, pytest.approx(9000)),
        "unreplicated": (1, pytest.approx(100)),
    }
    assert result["baseline_gap_ms"] == pytest.approx(100)
    # The led partition's own measurement is unchanged.
    assert [p["partition"] for p in measured["affected_partitions"]] == [0]
    assert result["counts"]["affected-partitions"] == 1


def test_a_follower_out_of_the_isr_is_still_a_follower() -> None:
    out_of_isr = [(0, 1, [1, 2], [1, 2]), (1, 2, [2, 1], [2]), (2, 2, [2, 3], [2, 3])]
    h = history(topology(0, out_of_isr), *_acks(1, STALLED, 2_000), *STALL_KILL)
    [measured] = check(h)["faults"]
    assert measured["stalls"]["follower"]["in_isr"] == 0
    assert measured["stalls"]["follower"]["examples"][0]["in_isr"] is False


def test_a_partition_never_acknowledged_after_the_fault_has_an_open_stall() -> None:
    h = history(
        topology(0, ROLES),
        *_acks(0, _every_100ms(0, 1000), 1_000),
        *_acks(2, _every_100ms(0, 12_500), 3_000),
        *STALL_KILL,
    )
    result = check(h)
    led = result["faults"][0]["stalls"]["led"]
    assert led["partitions"] == 1 and led["open"] == 1 and led["max_stall_ms"] is None
    [example] = led["examples"]
    assert example["stall_ms"] is None and example["never_acked_after"] is True
    assert (example["gap_start_ns"], example["gap_end_ns"]) == (at(1000), None)
    assert result["stall_by_group"]["led"]["open"] == 1
    assert result["stall_by_group"]["unreplicated"]["max_stall_ms"] == pytest.approx(100)


def test_without_a_sample_before_the_fault_the_first_sample_stands_in() -> None:
    result = check(_stall_history(*STALL_KILL, sample_ms=5000))
    groups = {p: group for p, (group, _) in _by_partition(result["faults"][0]["stalls"]).items()}
    assert groups == {0: "led", 1: "follower", 2: "unreplicated"}


def test_a_gap_before_the_fault_does_not_count_and_one_ending_after_it_does() -> None:
    # Partition 2: a 1 s gap that ends before the fault starts (ignored), then one from 11,900 ms to 13,000 ms across
    # its stop.
    acks = [0.0, 1000.0, *_every_100ms(1100, 11_900), 13_000.0]
    h = history(topology(0, ROLES), *_acks(2, acks, 3_000), *STALL_KILL)
    [row] = check(h)["faults"][0]["stalls"]["unreplicated"]["examples"]
    assert row["stall_ms"] == pytest.approx(1100)
    assert (row["gap_start_ns"], row["gap_end_ns"]) == (at(11_900), at(13_000))


def test_a_quorum_fault_puts_every_partition_in_group_all() -> None:
    result = check(
        _stall_history(
            *fault(1, start_ms=1050, stop_ms=12_000, nodes=[1000], fault_name="quorum-loss", target="quorum")
        )
    )
    assert list(result["stall_by_group"]) == ["all"]
    assert result["stall_by_group"]["all"]["partitions"] == 3
    assert result["stall_by_group"]["all"]["max_stall_ms"] == pytest.approx(9000)
    assert result["stall_by_group"]["all"]["median_stall_ms"] == pytest.approx(9000)


def test_stall_by_group_counts_every_fault_and_takes_the_max_over_faults() -> None:
    # Broker 3 only replicates partition 2 (led by 2 in the sample at 10,500 ms); every partition acks each 100 ms then.
    second = fault(2, start_ms=10_550, stop_ms=11_000, nodes=[3])
    result = check(_stall_history(*STALL_KILL, *second))
    assert {g: s["partitions"] for g, s in result["faults"][1]["stalls"].items()} == {"follower": 1, "unreplicated": 2}
    groups = result["stall_by_group"]
    assert {g: s["partitions"] for g, s in groups.items()} == {"led": 1, "follower": 2, "unreplicated": 3}
    assert groups["follower"]["max_stall_ms"] == pytest.approx(9000)
    assert groups["follower"]["median_stall_ms"] == pytest.approx(4550)
    assert groups["unreplicated"]["max_stall_ms"] == pytest.approx(100)


def test_acknowledgements_at_one_instant_count_once_in_the_baseline() -> None:
    twice = _every_100ms(0, 1000)
    h = history(topology(0, ROLES), *_acks(2, twice, 3_000), *_acks(2, twice, 4_000), *STALL_KILL)
    assert check(h)["baseline_gap_ms"] == pytest.approx(100)


def test_a_producer_acknowledged_by_a_cut_off_leader_does_not_hide_another_that_could_not_write() -> None:
    """acks=1 keeps being acknowledged by an isolated leader while acks=all waits for followers that cannot fetch: the
    partition's window is the acks=all producer's, and a limit sees it."""
    acks1 = [op for i, ms in enumerate(range(5, 1000, 50)) for op in send("acks1", 10 + i, f"x{i}", 0, ms=ms)]
    h = _failover(*acks1)
    [partition] = check(h)["faults"][0]["affected_partitions"]
    assert partition["unavailable_ms"] == pytest.approx(590), "p0's window, from its ack at 10 ms to 600 ms"
    assert check(h, {"max_unavailable_ms": 100})["counts"]["slow-failover"] == 1
    # The acks=1 producer alone saw no gap longer than its send interval.
    [alone] = check(history(BEFORE, STILL, MOVED, HEALED, *acks1, *KILL))["faults"][0]["affected_partitions"]
    assert alone["unavailable_ms"] == pytest.approx(50)


def test_a_send_made_while_the_fault_was_being_applied_does_not_end_its_window() -> None:
    """leader-isolated: the nft rules took 12 ms to install; a send made in that time was acknowledged at once, then
    nothing for 20 s."""
    start = fault(1, start_ms=100, stop_ms=20_200, nodes=[1], target="network")
    start[0]["in_force_ns"] = at(112)
    h = history(
        topology(0, [(0, 1, [1, 2], [1, 2])]),
        *send("p0", 1, "v1", 0, ms=90),
        *send("p0", 2, "v2", 1, ms=105, latency_ms=5),
        *start,
        *send("p0", 3, "v3", 2, ms=120, latency_ms=20_000),
        *send("p0", 4, "v4", 3, ms=20_200),
        topology(20_300, [(0, 2, [1, 2], [2])]),
    )
    (partition,) = check(h)["faults"][0]["affected_partitions"]
    assert partition["unavailable_ms"] == pytest.approx(20_010, abs=1), (
        "from the ack at 110 ms to the first ack of a send made in force"
    )
    start[0].pop("in_force_ns")
    older = check(
        history(
            topology(0, [(0, 1, [1, 2], [1, 2])]),
            *send("p0", 1, "v1", 0, ms=90),
            *send("p0", 2, "v2", 1, ms=105, latency_ms=5),
            *start,
            *send("p0", 3, "v3", 2, ms=120, latency_ms=20_000),
            *send("p0", 4, "v4", 3, ms=20_200),
        )
    )
    assert older["faults"][0]["affected_partitions"][0]["unavailable_ms"] == pytest.approx(19, abs=1), (
        "without it: the old, short reading"
    )


def test_a_slow_failover_must_exceed_the_limit_by_more_than_the_clients_clock_bound() -> None:
    # The window (590 ms) runs between acknowledgements of a client on a host whose clock is known within 2 ms.
    on_host = {**client_config("p0"), "host": "h2", "clock_offset_ns": 0, "clock_error_ns": 2_000_000}
    assert check(_failover(), {"max_unavailable_ms": 589})["counts"]["slow-failover"] == 1
    within = check(_failover(on_host), {"max_unavailable_ms": 589})
    # Over the limit, but not by more than the bound: undecided, never an excuse.
    assert (
        within["counts"]["slow-failover"] == 0
        and within["counts"]["slow-failover-undecided"] == 1
        and within["valid"] == "unknown"
    )
    assert check(_failover(on_host), {"max_unavailable_ms": 587})["counts"]["slow-failover"] == 1


def test_each_client_has_its_own_clock_bound_and_failsafes_clock_none() -> None:
    bounds = [{**client_config(p), "clock_error_ns": ns} for p, ns in (("a", 3), ("b", 5), ("c", 4))]
    assert clock_bounds(history(client_config("here"), *bounds)) == {"a": 3, "b": 5, "c": 4}
    assert clock_bounds(history(client_config("here"))) == {}
