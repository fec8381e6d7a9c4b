from __future__ import annotations

import pytest

from failsafe.checkers.rebalance import check
from tests.unit.test_checker_builders import (
    assign,
    at,
    client_config,
    client_event,
    declare,
    declared,
    fault,
    history,
    membership,
    poll,
    rec,
    revoke,
)

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
    assert (moved["partition"], moved["previous_owner"], moved["new_owner"], moved["reassigned"]) == (
        1,
        "c1",
        "c0",
        True,
    )
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
    assert result["examples"]["never-reassigned"] == [
        {"processes": ["c1"], "group": "g", "kind": "leave", "start_ns": at(100), "topic": "t", "partition": 1}
    ]
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


def test_a_slow_rebalance_must_exceed_the_limit_by_more_than_the_clients_clock_bound() -> None:
    # A pause of 4900 ms measured to the assign of a member on a host whose clock is known within 3 ms.
    on_host = {**client_config("c0"), "host": "h2", "clock_offset_ns": 0, "clock_error_ns": 3_000_000}
    h = [*START, *KILL_C1, assign("c0", [1], ms=5000)]
    assert check(history(*h), {"max_pause_ms": 4898})["counts"]["slow-rebalance"] == 1
    assert check(history(on_host, *h), {"max_pause_ms": 4898})["counts"]["slow-rebalance"] == 0
    assert check(history(on_host, *h), {"max_pause_ms": 4896})["counts"]["slow-rebalance"] == 1


def test_a_survivors_revoke_within_the_clock_bound_of_the_faults_start_does_not_accuse() -> None:
    # c0's revoke came 1 ms after the kill by its host's clock, which is known within 3 ms: it may have come before.
    configs = _configs(partition_assignment_strategy="cooperative-sticky")
    on_host = [{**configs[0], "host": "h2", "clock_offset_ns": 0, "clock_error_ns": 3_000_000}, configs[1]]
    ops = [*START, *KILL_C1, revoke("c0", [0], ms=101), assign("c0", [0, 1], ms=4500)]
    assert check(history(*configs, *ops))["counts"]["survivors-interrupted"] == 1
    assert check(history(*on_host, *ops))["counts"]["survivors-interrupted"] == 0


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


def _configs(**settings: str) -> list[dict]:
    return [client_config("c0", **settings), client_config("c1", **settings)]


# c1 is killed; c0, the survivor, gives up its own partition 0 during the handover and gets it back with partition 1.
SURVIVOR_REVOKED = [
    *START,
    poll("c0", [rec(3, "v", partition=0)], ms=50),
    *KILL_C1,
    revoke("c0", [0], ms=4000),
    assign("c0", [0, 1], ms=4500),
    poll("c0", [rec(4, "v", partition=0)], ms=4600),
]


def test_an_incremental_group_whose_survivor_gave_up_a_partition_is_invalid() -> None:
    result = check(history(*_configs(partition_assignment_strategy="cooperative-sticky"), *SURVIVOR_REVOKED))
    assert result["valid"] is False and "survivors-interrupted" in result["violations"]
    assert result["counts"]["survivors-interrupted"] == 1 and result["counts"]["kept-partitions"] == 1
    [example] = result["examples"]["survivors-interrupted"]
    assert (example["protocol"], example["owner"], example["partition"]) == ("cooperative", "c0", 0)
    assert example["revoked_ms"] == pytest.approx(3900) and example["gap_ms"] == pytest.approx(4550)


def test_the_same_revocation_is_what_the_eager_protocol_does() -> None:
    result = check(history(*_configs(), *SURVIVOR_REVOKED))
    assert result["valid"] is True
    assert result["counts"]["interrupted-kept-partitions"] == 1 and result["counts"]["survivors-interrupted"] == 0
    [event] = result["events"]
    assert event["protocol"] == "eager" and event["survivors_kept_expected"] is False
    assert event["kept_partitions"][0]["revoked"] is True


def test_the_option_expects_the_survivors_kept_whatever_the_protocol() -> None:
    h = history(*_configs(), *SURVIVOR_REVOKED)
    assert check(h, {"expect_survivors_kept": True})["counts"]["survivors-interrupted"] == 1
    assert check(history(*_configs(group_protocol="consumer"), *SURVIVOR_REVOKED))["valid"] is False


def test_a_kip848_group_that_left_the_survivor_alone_is_valid_with_its_gaps() -> None:
    h = history(
        *_configs(group_protocol="consumer"),
        *START,
        poll("c0", [rec(3, "v", partition=0)], ms=50),
        poll("c1", [rec(8, "v", partition=1)], ms=90),
        *KILL_C1,
        poll("c0", [rec(4, "v", partition=0)], ms=300),
        poll("c0", [rec(5, "v", partition=0)], ms=2000),
        poll("c0", [rec(6, "v", partition=0)], ms=3800),
        assign("c0", [1], ms=5000),
        poll("c0", [rec(9, "v", partition=1)], ms=5200),
        poll("c0", [rec(7, "v", partition=0)], ms=5300),
    )
    result = check(h)
    assert result["valid"] is True and result["counts"]["interrupted-kept-partitions"] == 0
    [event] = result["events"]
    assert event["protocol"] == "consumer-uniform"
    [kept] = event["kept_partitions"]
    # Its longest stretch without a read from before the kill to after the group settled (5000).
    assert (kept["owner"], kept["revoked"], kept["gap_ms"]) == ("c0", False, pytest.approx(1800))
    [moved] = event["moved_partitions"]
    assert moved["gap_ms"] == pytest.approx(5110) and moved["first_poll_after_ms"] == pytest.approx(5100)


def test_a_survivor_that_lost_its_own_session_is_counted_not_judged() -> None:
    lost = membership("revoke", "c0", [0], ms=4000, lost=True)
    h = history(*_configs(group_protocol="consumer"), *START, *KILL_C1, lost, assign("c0", [0, 1], ms=4500))
    result = check(h)
    assert result["valid"] is True
    assert result["counts"]["lost-kept-partitions"] == 1 and result["counts"]["survivors-interrupted"] == 0


def test_a_group_whose_members_ran_different_protocols_expects_nothing() -> None:
    h = history(client_config("c0", group_protocol="consumer"), client_config("c1"), *SURVIVOR_REVOKED)
    result = check(h)
    assert result["valid"] is True and result["events"][0]["protocol"] is None


THREE = [assign("c0", [0], ms=0), assign("c1", [1], ms=0), assign("c2", [2], ms=0)]


def test_a_second_kill_moves_only_what_the_second_member_owned_then() -> None:
    # c1 is killed and never records a revoke; c2 takes its partition, then c2 is killed in turn.
    h = history(
        *_configs(group_protocol="consumer"),
        client_config("c2", group_protocol="consumer"),
        *THREE,
        *KILL_C1,
        assign("c2", [1], ms=3000),
        *fault(2, start_ms=6000, stop_ms=6010, nodes=["c2"], fault_name="kill-consumer", target="consumer"),
        assign("c0", [1, 2], ms=9000),
    )
    result = check(h)
    assert result["valid"] is True
    second = result["events"][1]
    assert sorted((m["partition"], m["previous_owner"]) for m in second["moved_partitions"]) == [(1, "c2"), (2, "c2")]
    assert [(k["partition"], k["owner"]) for k in second["kept_partitions"]] == [(0, "c0")]


def test_the_revokes_of_a_handover_that_never_completed_are_not_judged() -> None:
    # c1 is killed near the end; its partition is never reassigned, and c0 revokes everything when it closes.
    h = history(
        *_configs(group_protocol="consumer"),
        *START,
        *KILL_C1,
        revoke("c0", [0], ms=4000),
        client_event("close", "c0", ms=4001),
    )
    result = check(h)
    assert (
        result["counts"]["survivors-interrupted"] == 0 and result["events"][0]["kept_partitions"][0]["judged"] is False
    )


def test_a_survivor_that_closed_during_the_handover_is_not_judged() -> None:
    h = history(
        *_configs(group_protocol="consumer"),
        client_config("c2", group_protocol="consumer"),
        *THREE,
        *KILL_C1,
        revoke("c0", [0], ms=2000),
        client_event("close", "c0", ms=2100),
        assign("c2", [0, 1], ms=5000),
    )
    result = check(h)
    assert result["valid"] is True and result["counts"]["interrupted-kept-partitions"] == 1


def test_kip848s_range_assignor_is_not_expected_to_keep_the_survivors_partitions() -> None:
    result = check(history(*_configs(group_protocol="consumer", group_remote_assignor="range"), *SURVIVOR_REVOKED))
    assert result["valid"] is True and result["events"][0]["protocol"] == "consumer-range"


def test_a_java_survivors_revoke_while_a_node_was_down_is_not_judged() -> None:
    java = [
        client_config("c0", client="kafka-java", group_protocol="consumer"),
        client_config("c1", client="kafka-java", group_protocol="consumer"),
    ]
    broker = fault(2, start_ms=50, stop_ms=3000, nodes=["1"], fault_name="kill", target="broker")
    assert check(history(*java, *SURVIVOR_REVOKED, *broker))["valid"] is True
    assert check(history(*java, *SURVIVOR_REVOKED))["valid"] is False


def test_a_fault_on_a_share_groups_member_is_no_rebalance_and_not_unknown() -> None:
    share_poll = {
        "time_ns": at(50),
        "process": "s0",
        "type": "ok",
        "f": "share-poll",
        "group": "sg",
        "records": [{"topic": "t", "partition": 0, "offset": 0, "key": None, "value": "v0", "delivery_count": 1}],
    }
    h = history(
        share_poll, *fault(1, start_ms=100, stop_ms=110, nodes=["s0"], fault_name="kill-consumer", target="consumer")
    )
    result = check(h)
    assert result["valid"] is True and result["counts"]["unmeasured-consumer-faults"] == 0


PAUSE_C1 = fault(1, start_ms=100, stop_ms=3000, nodes=["c1"], fault_name="pause-consumer", target="consumer")


def test_a_member_frozen_within_its_session_moves_nothing_and_need_not() -> None:
    result = check(history(*START, *PAUSE_C1))
    assert result["valid"] is True
    assert result["counts"]["not-rebalanced"] == 1 and result["counts"]["never-reassigned"] == 0
    assert result["events"][0]["rebalanced"] is False


def test_a_member_frozen_past_its_session_is_measured_like_a_kill() -> None:
    result = check(history(*START, *PAUSE_C1, assign("c0", [1], ms=10_000)))
    assert result["valid"] is True and result["counts"]["not-rebalanced"] == 0
    assert result["events"][0]["pause_ms"] == pytest.approx(9900)


def test_a_member_frozen_past_its_session_whose_partition_nobody_took_is_invalid() -> None:
    frozen_long = fault(1, start_ms=100, stop_ms=30_000, nodes=["c1"], fault_name="pause-consumer", target="consumer")
    result = check(history(*START, *frozen_long), {"session_timeout_ms_by_group": {"g": 10_000}})
    assert (
        result["valid"] is False
        and result["counts"]["never-reassigned"] == 1
        and result["counts"]["not-rebalanced"] == 0
    )
    # The same freeze within a 45 s session (Kafka's default) moved nothing, and need not have.
    assert check(history(*START, *frozen_long))["counts"]["not-rebalanced"] == 1


def test_without_a_scenario_session_the_one_its_members_ran_with_judges_the_freeze() -> None:
    # A cluster profile gave every member session.timeout.ms 10000: their client-config ops say so.
    frozen_long = fault(1, start_ms=100, stop_ms=30_000, nodes=["c1"], fault_name="pause-consumer", target="consumer")
    result = check(history(*_configs(session_timeout_ms="10000"), *START, *frozen_long))
    assert result["valid"] is False and result["counts"]["never-reassigned"] == 1
    # The scenario's own session wins; members that disagree say nothing (Kafka's 45 s then).
    assert (
        check(
            history(*_configs(session_timeout_ms="10000"), *START, *frozen_long),
            {"session_timeout_ms_by_group": {"g": 45_000}},
        )["counts"]["not-rebalanced"]
        == 1
    )
    mixed = [client_config("c0", session_timeout_ms="10000"), client_config("c1", session_timeout_ms="60000")]
    assert check(history(*mixed, *START, *frozen_long))["counts"]["not-rebalanced"] == 1


def test_a_member_frozen_earlier_still_owns_its_partitions_when_another_is_killed() -> None:
    frozen = fault(1, start_ms=100, stop_ms=3000, nodes=["c1"], fault_name="pause-consumer", target="consumer")
    kill_c0 = fault(2, start_ms=5000, stop_ms=5010, nodes=["c0"], fault_name="kill-consumer", target="consumer")
    result = check(history(*START, *frozen, *kill_c0))
    assert result["valid"] is False and result["counts"]["never-reassigned"] == 1
    [kill] = [e for e in result["events"] if e["fault_id"] == 2]
    assert kill["members_alive_at_end"] == ["c1"]


def test_the_killed_members_own_reads_recorded_after_the_kill_are_not_the_groups_first() -> None:
    # A killed Java consumer's last reads come in as the JVM printed them, a few ms into the kill: the gap runs to the
    # survivor's first read.
    h = history(
        *START,
        poll("c1", [rec(6, "v6", partition=1)], ms=50),
        *KILL_C1,
        poll("c1", [rec(7, "v7", partition=1)], ms=103),
        assign("c0", [1], ms=5000),
        poll("c0", [rec(8, "v8", partition=1)], ms=5100),
    )
    [moved] = check(h)["events"][0]["moved_partitions"]
    assert moved["gap_ms"] == pytest.approx(5100 - 50 - 0, abs=60) and moved["first_poll_after_ms"] == pytest.approx(
        5000
    )


def test_an_eager_survivors_gap_is_the_pause_around_its_revocation_not_its_first_read_after_the_event() -> None:
    # The survivor c0 reads its own partition 0 every 200 ms until the group revokes it at 4000, and again after 6000.
    reads = [poll("c0", [rec(i, "v", partition=0)], ms=50 + 200 * i) for i in range(19)]  # up to 3650
    h = history(
        *START,
        *reads,
        *KILL_C1,
        revoke("c0", [0], ms=4000),
        assign("c0", [0, 1], ms=6000),
        poll("c0", [rec(20, "v", partition=0)], ms=6100),
    )
    [event] = check(h)["events"]
    [kept] = event["kept_partitions"]
    assert kept["revoked"] is True and kept["gap_ms"] == pytest.approx(6100 - 3650)


def _restart(start_ms: float, stop_ms: float) -> list[dict]:
    return [
        *fault(1, start_ms=start_ms, stop_ms=stop_ms, nodes=["c0"], fault_name="restart-consumer", target="consumer"),
        client_event("close", "c0", ms=start_ms + 1),
    ]


def _rejoin(survivor_revoked: bool) -> list[dict]:
    """c0 closes at 100 (restart-consumer) and c1 takes its partition 0; c0 comes back as c0.1 at 3000 and gets
    partition 0 back from c1; c1 keeps partition 1 unless ``survivor_revoked``."""
    survivor = [revoke("c1", [1], ms=3500), assign("c1", [1], ms=4000)] if survivor_revoked else []
    return [
        *START,
        *_restart(100, 3000),
        revoke("c0", [0], ms=150),
        assign("c1", [0], ms=1000),
        poll("c1", [rec(5, "v", partition=0)], ms=2950),
        poll("c1", [rec(6, "v", partition=1)], ms=2900),
        revoke("c1", [0], ms=3500),
        *survivor,
        assign("c0.1", [0], ms=4000),
        poll("c0.1", [rec(7, "v", partition=0)], ms=4100),
        poll("c1", [rec(8, "v", partition=1)], ms=4200),
    ]


def test_a_restarted_member_is_a_leave_then_a_join_of_its_new_process() -> None:
    result = check(
        history(
            *_configs(partition_assignment_strategy="cooperative-sticky"),
            client_config("c0.1", partition_assignment_strategy="cooperative-sticky"),
            *_rejoin(survivor_revoked=False),
        )
    )
    assert result["valid"] is True, result["violations"]
    leave, join = result["events"]
    assert (leave["kind"], leave["processes"], leave["pause_ms"]) == ("leave", ["c0"], pytest.approx(900))
    assert leave["moved_partitions"][0]["new_owner"] == "c1"
    assert (join["kind"], join["processes"], join["left"], join["start_ns"]) == (
        "join",
        ["c0.1"],
        ["c0"],
        leave["stop_ns"],
    )
    [moved] = join["moved_partitions"]
    assert (moved["partition"], moved["previous_owner"], moved["new_owner"]) == (0, "c1", "c0.1")
    assert moved["first_poll_after_ms"] == pytest.approx(1100) and moved["gap_ms"] == pytest.approx(4100 - 2950)
    [kept] = join["kept_partitions"]
    assert (kept["partition"], kept["owner"], kept["revoked"]) == (1, "c1", False)
    assert join["pause_ms"] == pytest.approx(1000) and result["counts"]["joins"] == 1


def test_an_incremental_join_that_takes_a_survivors_other_partition_is_invalid() -> None:
    cooperative = [
        *_configs(partition_assignment_strategy="cooperative-sticky"),
        client_config("c0.1", partition_assignment_strategy="cooperative-sticky"),
    ]
    result = check(history(*cooperative, *_rejoin(survivor_revoked=True)))
    assert result["valid"] is False and result["counts"]["survivors-interrupted"] == 1
    [example] = result["examples"]["survivors-interrupted"]
    assert (example["processes"], example["owner"], example["partition"]) == (["c0.1"], "c1", 1)
    # The eager protocol revokes everything on a join: counted, not judged.
    eager = check(history(*_configs(), *_rejoin(survivor_revoked=True)))
    assert eager["valid"] is True and eager["counts"]["interrupted-kept-partitions"] == 1


def test_a_restarted_member_that_never_gets_a_partition_is_counted() -> None:
    h = history(*START, *_restart(100, 3000), revoke("c0", [0], ms=150), assign("c1", [0], ms=1000))
    result = check(h)
    assert result["counts"]["joins"] == 1 and result["counts"]["joins-without-assignment"] == 1
    assert result["events"][1]["pause_ms"] is None


def test_a_join_ends_where_the_next_consumer_event_begins() -> None:
    # c0 restarts (back as c0.1 at 3000, given partition 0); c1 then closes at 6000 and c0.1 takes partition 1 too: that
    # is the close's handover, not the join's.
    h = history(
        *_configs(partition_assignment_strategy="cooperative-sticky"),
        client_config("c0.1", partition_assignment_strategy="cooperative-sticky"),
        *_rejoin(survivor_revoked=False),
        client_event("close", "c1", ms=6000),
        revoke("c1", [1], ms=6001),
        assign("c0.1", [1], ms=6500),
    )
    result = check(h)
    join = next(e for e in result["events"] if e["kind"] == "join")
    assert [m["partition"] for m in join["moved_partitions"]] == [0] and join["pause_ms"] == pytest.approx(1000)
    close = result["events"][-1]
    assert (close["source"], [(m["partition"], m["new_owner"]) for m in close["moved_partitions"]]) == (
        "close",
        [(1, "c0.1")],
    )


def test_a_share_consumer_killed_before_its_first_delivery_is_no_rebalance_and_not_unknown() -> None:
    """Its scenario declared it a share group's member; it had no delivery or ack to say so (a slow start, then the
    kill): not a group member whose rebalance went unmeasured. A declared classic consumer stays unknown."""
    kill = fault(1, start_ms=100, stop_ms=110, nodes=["s0"], fault_name="kill-consumer", target="consumer")
    share = check(history(declare(declared("s0", "share-consumer", group="sg")), *kill))
    assert share["valid"] is True and share["counts"]["unmeasured-consumer-faults"] == 0
    classic = check(history(declare(declared("s0", "consumer", group="g")), *kill))
    assert classic["valid"] == "unknown" and classic["counts"]["unmeasured-consumer-faults"] == 1
