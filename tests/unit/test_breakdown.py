"""Where a failover's time goes (checkers/measure/breakdown.py), on hand-written histories with known timestamps."""

from __future__ import annotations

import pytest

import failsafe.checkers.measure.breakdown as breakdown
import failsafe.checkers.measure.faults as measurements
from failsafe.checkers.availability import check as availability
from failsafe.history.load import history_from_ops
from failsafe.history.model import History
from failsafe.history.ops import Family, NodeEvent, Op, OpType, Process, Target, fault_start, fault_stop, node_event, op

T0 = 1_790_000_000_000_000_000
TOPIC = "t"
CONTROLLER = 1000


def at(ms: float) -> int:
    return T0 + round(ms * 1_000_000)


def samples(until_ms: int, leaders: dict[int, list[tuple[int, int]]]) -> list[dict]:
    """A topology sample every 250 ms from 0 to ``until_ms``; ``leaders``: partition -> [(from ms, leader), ...]."""
    ops = []
    for ms in range(0, until_ms + 1, 250):
        partitions = []
        for partition, changes in leaders.items():
            leader = [lead for since, lead in changes if since <= ms][-1]
            isr = [leader, *sorted({0, 1, 2} - {leader} - ({1} if leader != 1 else set()))]
            partitions.append(
                {"topic": TOPIC, "partition": partition, "leader": leader, "replicas": [0, 1, 2], "isr": isr}
            )
        ops.append(op(Op.TOPOLOGY, process=Process.TOPOLOGY, time_ns=at(ms), partitions=partitions))
    return ops


_ids = iter(range(1, 1_000_000))


def send(process: str, ms: float, done_ms: float, partition: int = 0, outcome: OpType = OpType.OK) -> list[dict]:
    send_id = next(_ids)
    done = {"offset": send_id} if outcome == OpType.OK else {"error": "NOT_LEADER_OR_FOLLOWER"}
    return [
        op(Op.SEND, OpType.INVOKE, process, at(ms), id=send_id, topic=TOPIC, value=f"v{send_id}"),
        op(
            Op.SEND,
            outcome,
            process,
            at(done_ms),
            id=send_id,
            topic=TOPIC,
            value=f"v{send_id}",
            partition=partition,
            **done,
        ),
    ]


def steady(process: str, until_ms: int, partition: int = 0) -> list[dict]:
    """Writes acknowledged every 100 ms up to the fault."""
    return [o for ms in range(0, until_ms, 100) for o in send(process, ms, ms + 2, partition)]


def kill(
    fault_id: int = 1,
    nodes: tuple[int, ...] = (1,),
    start_ms: float = 1000,
    in_force_ms: float = 1010,
    stop_ms: float = 11_000,
) -> list[dict]:
    return [
        fault_start(
            fault_id,
            "kill",
            target=Target.BROKER,
            nodes=nodes,
            family=Family.PROCESS,
            time_ns=at(start_ms),
            in_force_ns=at(in_force_ms),
        ),
        fault_stop(fault_id, "kill", True, 1, time_ns=at(stop_ms)),
    ]


FENCED = node_event(
    CONTROLLER,
    NodeEvent.FENCED,
    at(9510),
    broker=1,
    line="[...] INFO [QuorumController id=1000] Fencing broker 1 at epoch 12 because its session has timed out.",
)
BECAME_LEADER = node_event(2, NodeEvent.BECAME_LEADER, at(9600), broker=2, topic=TOPIC, partition=0)
# t-0 led by 1 until the sample at 9750 ms shows 2; t-1 led by 2 throughout.
KRAFT_TOPOLOGY = samples(12_000, {0: [(0, 1), (9750, 2)], 1: [(0, 2)]})


def kraft_kill(*extra: dict | list[dict]) -> History:
    ops: list[dict] = [*KRAFT_TOPOLOGY, *kill(), *steady("p0", 1000), *steady("p1", 1000)]
    for item in extra:
        ops.extend(item if isinstance(item, list) else [item])
    return history_from_ops(sorted(ops, key=lambda o: o["time_ns"]))


# p0's send made before the fault, retried by the client and acknowledged by the new leader at 9790 ms; p1 fails once
# against the old leader's metadata at 9760 ms, sends again at 9800 ms, acknowledged at 9805 ms.
CLIENTS = [*send("p0", 1005, 9790), *send("p1", 9700, 9760, outcome=OpType.FAIL), *send("p1", 9800, 9805)]


def only(history: History) -> dict:
    [row] = breakdown.measure(history)["partitions"]
    return row


def test_a_kraft_leader_kill_is_split_into_detection_election_and_propagation() -> None:
    row = only(kraft_kill(FENCED, BECAME_LEADER, CLIENTS))
    assert (row["fault_id"], row["topic"], row["partition"], row["old_leader"], row["new_leader"]) == (
        1,
        TOPIC,
        0,
        1,
        2,
    )
    assert row["in_force_s"] == pytest.approx(1.010)
    assert row["detection_s"] == pytest.approx(8.5)  # 1010 ms in force -> 9510 ms fenced
    assert row["election_s"] == pytest.approx(0.24)  # -> 9750 ms, the first sample with leader 2
    assert row["propagation_s"] == pytest.approx(0.04)  # -> 9790 ms, p0's retried send
    assert row["detected_by"]["event"] == "fenced" and row["detected_by"]["node"] == CONTROLLER
    assert row["leader_sample_error_s"] == pytest.approx(0.25)
    assert row["became_leader_s"] == pytest.approx(9.6)
    assert row["first_writer"] == "p0"
    # p0's write was in flight across the failover: its backoff is inside the client, not in the history.
    assert row["client_backoff_s"] is None and row["why"]["client_backoff_s"] == breakdown.WHY_IN_FLIGHT
    p0, p1 = row["clients"]
    assert (p0["process"], p0["gap_s"], p0["backoff_s"], p0["failed_after_leader"]) == (
        "p0",
        pytest.approx(0.04),
        None,
        0,
    )
    assert (p1["process"], p1["gap_s"], p1["backoff_s"], p1["failed_after_leader"]) == (
        "p1",
        pytest.approx(0.055),
        pytest.approx(0.05),
        1,
    )
    assert set(row["why"]) == {"client_backoff_s"}


def test_client_visible_is_availabilitys_own_window() -> None:
    history = kraft_kill(FENCED, CLIENTS)
    [partition] = availability(history)["faults"][0]["affected_partitions"]
    assert only(history)["client_visible_s"] == pytest.approx(partition["unavailable_ms"] / 1000)
    assert partition["unavailable_ms"] is not None


def test_the_clients_backoff_is_known_when_the_first_write_was_sent_after_the_new_leader() -> None:
    row = only(kraft_kill(FENCED, *send("p1", 9800, 9805)))
    assert row["propagation_s"] == pytest.approx(0.055) and row["client_backoff_s"] == pytest.approx(0.05)
    assert "client_backoff_s" not in row["why"]


def test_without_node_events_detection_and_election_are_unknown_and_say_why() -> None:
    row = only(kraft_kill(CLIENTS))
    assert row["detection_s"] is None and row["why"]["detection_s"] == breakdown.WHY_NO_EVENTS
    assert row["election_s"] is None and row["why"]["election_s"].startswith("detection unknown")
    assert row["detected_by"] is None
    # What does not need the logs is still measured.
    assert row["propagation_s"] == pytest.approx(0.04) and row["new_leader"] == 2


def test_events_about_other_brokers_or_outside_the_failover_do_not_count() -> None:
    unreadable = node_event(
        1, NodeEvent.LOG_UNREADABLE, at(12_000), line="logs/server-1.log: No such file or directory"
    )
    before = node_event(CONTROLLER, NodeEvent.FENCED, at(900), broker=1)  # an earlier fault's fence
    after = node_event(CONTROLLER, NodeEvent.FENCED, at(9800), broker=1)  # after the new leader's sample
    other = node_event(CONTROLLER, NodeEvent.FENCED, at(9510), broker=0)
    row = only(kraft_kill(before, after, other, unreadable, CLIENTS))
    assert row["detection_s"] is None
    why = row["why"]["detection_s"]
    assert "no fence of broker 1" in why and "new leader's sample" in why and "logs/server-1.log: No such file" in why


def test_a_leader_that_never_changed_leaves_election_and_propagation_unknown() -> None:
    topology = samples(12_000, {0: [(0, 1)]})  # RF 1 or no ISR replica: leader 1 in every sample
    ops = [*topology, *kill(), *steady("p0", 1000), FENCED]
    row = only(history_from_ops(sorted(ops, key=lambda o: o["time_ns"])))
    assert row["new_leader"] is None
    assert row["detection_s"] == pytest.approx(8.5), "the fence is still measured"
    for component in ("election_s", "propagation_s", "client_backoff_s"):
        assert row[component] is None and row["why"][component] == breakdown.WHY_NO_NEW_LEADER
    assert row["client_visible_s"] is None and row["why"]["client_visible_s"] == breakdown.WHY_NO_WINDOW


def test_two_partitions_led_by_the_killed_broker_get_a_row_each_and_the_summary_counts_both() -> None:
    topology = samples(12_000, {0: [(0, 1), (9750, 2)], 1: [(0, 2)], 2: [(0, 1), (10_000, 0)]})
    ops = [
        *topology,
        *kill(),
        *steady("p0", 1000),
        *steady("p0", 1000, partition=2),
        FENCED,
        *send("p0", 9760, 9770),
        *send("p0", 10_100, 10_400, partition=2),
    ]
    result = breakdown.measure(history_from_ops(sorted(ops, key=lambda o: o["time_ns"])))
    first, second = result["partitions"]
    assert (first["partition"], first["new_leader"], second["partition"], second["new_leader"]) == (0, 2, 2, 0)
    assert first["election_s"] == pytest.approx(0.24) and second["election_s"] == pytest.approx(0.49)
    assert first["propagation_s"] == pytest.approx(0.02) and second["propagation_s"] == pytest.approx(0.4)
    summary = result["summary"]
    assert summary["detection_s"] == {
        "count": 2,
        "unknown": 0,
        "p50": pytest.approx(8.5),
        "p95": pytest.approx(8.5),
        "max": pytest.approx(8.5),
    }
    assert summary["election_s"]["p50"] == pytest.approx(0.24) and summary["election_s"]["max"] == pytest.approx(0.49)
    assert summary["propagation_s"]["p95"] == pytest.approx(0.4)
    assert result["sample_interval_s"] == pytest.approx(0.25)


def test_a_fault_on_a_follower_has_no_row_and_is_listed_as_skipped() -> None:
    ops = [*KRAFT_TOPOLOGY, *kill(nodes=(0,)), *steady("p0", 1000)]
    result = breakdown.measure(history_from_ops(sorted(ops, key=lambda o: o["time_ns"])))
    assert result["partitions"] == []
    [skipped] = result["skipped_faults"]
    assert skipped["fault_id"] == 1 and "led no partition" in skipped["why"]
    assert result["summary"]["detection_s"] == {"count": 0, "unknown": 0, "p50": None, "p95": None, "max": None}


def test_controller_and_client_faults_are_not_failovers() -> None:
    ops = [
        *KRAFT_TOPOLOGY,
        *steady("p0", 1000),
        fault_start(
            1, "quorum-loss", target=Target.QUORUM, nodes=[CONTROLLER], family=Family.PROCESS, time_ns=at(1000)
        ),
        fault_start(2, "kill-consumer", target=Target.CONSUMER, nodes=["c0"], family=Family.CLIENT, time_ns=at(1000)),
    ]
    result = breakdown.measure(history_from_ops(sorted(ops, key=lambda o: o["time_ns"])))
    assert result["partitions"] == [] and result["skipped_faults"] == []


def test_zookeeper_mode_detection_is_the_first_of_the_session_expiry_and_the_controller_seeing_the_broker_gone() -> (
    None
):
    # Broker 1 was the controller too: ZooKeeper expired its session, broker 2 became controller and found it gone.
    expired = {**node_event(1, NodeEvent.ZK_SESSION_EXPIRED, at(9400), broker=1), "process": "zookeeper-1"}
    elected = node_event(2, NodeEvent.CONTROLLER_ELECTED, at(9425), broker=2)
    gone = node_event(2, NodeEvent.BROKER_GONE, at(9494), broker=1)
    controllers = [op(Op.CONTROLLER, time_ns=at(0), controller=1), op(Op.CONTROLLER, time_ns=at(9500), controller=2)]
    row = only(kraft_kill(expired, elected, gone, controllers, CLIENTS))
    assert row["detection_s"] == pytest.approx(8.39) and row["detected_by"]["event"] == "zk-session-expired"
    assert row["election_s"] == pytest.approx(0.35)
    assert row["was_controller"] is True
    # Without ZooKeeper's log, the controller's own view of the broker gone is the detection.
    row = only(kraft_kill(elected, gone, controllers, CLIENTS))
    assert row["detection_s"] == pytest.approx(8.484) and row["detected_by"]["event"] == "broker-gone"


def test_a_controlled_shutdown_is_detected_when_the_controller_grants_it() -> None:
    granted = node_event(CONTROLLER, NodeEvent.CONTROLLED_SHUTDOWN, at(1030), broker=1)
    fenced_later = node_event(CONTROLLER, NodeEvent.FENCED, at(1500), broker=1)
    row = only(kraft_kill(granted, fenced_later, CLIENTS))
    assert row["detection_s"] == pytest.approx(0.02) and row["detected_by"]["event"] == "controlled-shutdown"
    assert row["was_controller"] is None, "no controller op: unknown"


def test_no_write_after_the_new_leader_leaves_propagation_unknown() -> None:
    row = only(kraft_kill(FENCED))
    assert row["propagation_s"] is None and row["why"]["propagation_s"] == breakdown.WHY_NO_WRITE
    assert row["clients"] == [] and row["first_writer"] is None


def test_the_breakdown_lands_in_the_measurements() -> None:
    measured = measurements.measure(kraft_kill(FENCED, CLIENTS))
    summary = measured["failover_breakdown"]["summary"]
    assert set(summary) == set(breakdown.COMPONENTS)
    assert summary["detection_s"]["count"] == 1 and summary["detection_s"]["max"] == pytest.approx(8.5)


def test_a_breakdown_that_raises_leaves_the_other_measurements(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(history: History) -> dict:
        raise ValueError("boom")

    monkeypatch.setattr(breakdown, "measure", broken)
    measured = measurements.measure(kraft_kill(FENCED, CLIENTS))
    assert measured["failover_breakdown"] == {"error": "ValueError: boom"}
    assert measured["faults"][0]["fault_id"] == 1


def test_a_fault_on_two_brokers_times_each_partition_by_its_own_leaders_fence() -> None:
    """Brokers 0 and 1 killed at once, broker 0 fenced at 4 s, broker 1 (t-0's leader) at 9.51 s: t-0's detection is
    broker 1's."""
    fenced_0 = node_event(CONTROLLER, NodeEvent.FENCED, at(4000), broker=0, line="Fencing broker 0")
    ops = [*KRAFT_TOPOLOGY, *kill(nodes=(1, 0)), *steady("p0", 1000), *steady("p1", 1000), fenced_0, FENCED, *CLIENTS]
    row = only(history_from_ops(sorted(ops, key=lambda o: o["time_ns"])))
    assert row["detected_by"]["line"].startswith("[...] INFO [QuorumController id=1000] Fencing broker 1")
    assert row["detection_s"] == pytest.approx(8.5) and row["election_s"] == pytest.approx(0.24)
