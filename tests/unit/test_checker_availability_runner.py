"""Availability on histories shaped as the runner writes them: phases, acks=0 sends, consumers closed in the drain."""

from __future__ import annotations

import pytest

from failsafe.checkers.availability import check
from failsafe.checkers.measure.faults import measure
from tests.unit.test_checker_builders import TOPIC, assign, at, fault, history, revoke, send, topology

BEFORE = topology(0, [(0, 1, [1, 2, 3], [1, 2, 3])])
MOVED = topology(500, [(0, 2, [1, 2, 3], [2, 3])])
KILL = fault(1, start_ms=20, stop_ms=1000, nodes=[1])


def phase(name: str, ms: float) -> dict:
    return {"time_ns": at(ms), "process": "runner", "type": "info", "f": "phase", "phase": name}


def test_members_leaving_in_the_drain_are_not_a_rebalance_caused_by_the_fault() -> None:
    drained = history(
        BEFORE,
        MOVED,
        *send("p0", 1, "a", 0, ms=9),
        *send("p0", 2, "b", 1, ms=600),
        *KILL,
        phase("drain", 1200),
        revoke("c0", [0], ms=1300),
        assign("c1", [0], ms=1400),
    )
    result = check(drained, {"expect_no_rebalance": True})
    assert result["valid"] is True and result["faults"][0]["rebalances_during"] == 0


def test_a_rebalance_before_the_drain_still_counts() -> None:
    rebalanced = history(
        BEFORE,
        MOVED,
        *send("p0", 1, "a", 0, ms=9),
        *send("p0", 2, "b", 1, ms=600),
        *KILL,
        revoke("c0", [0], ms=700),
        assign("c1", [0], ms=800),
        phase("drain", 1200),
    )
    result = check(rebalanced, {"expect_no_rebalance": True})
    assert result["valid"] is False and result["faults"][0]["rebalances_during"] == 2


def test_an_acks0_ok_is_not_evidence_that_the_partition_was_available() -> None:
    # acks=0 sends "succeed" while the leader is dead; only the acks=1 send at 600 ms was acknowledged by a leader.
    sends = [
        *send("p0", 1, "a", 0, ms=9),
        *send("z", 2, "z1", None, ms=100),
        *send("z", 3, "z2", None, ms=300),
        *send("p0", 4, "b", 1, ms=600),
    ]
    result = check(history(BEFORE, MOVED, *sends, *KILL))
    assert result["max_unavailable_ms"] == pytest.approx(591)


def test_measurements_count_what_happened_during_each_fault() -> None:
    sends = [
        *send("p0", 1, "a", 0, ms=9),
        *send("p0", 2, "b", None, ms=100, outcome="fail"),
        *send("p0", 3, "c", None, ms=200, outcome="info"),
        *send("p0", 4, "d", 1, ms=600),
    ]
    m = measure(history(BEFORE, MOVED, topology(700, [(0, -1, [1, 2, 3], [])]), *sends, *KILL))
    assert m["faults"] == [
        {
            "fault_id": 1,
            "fault": "kill",
            # The one acknowledged during the fault, 1 ms after it was sent (the builder's latency): its latency.
            "ack_latency_ms": {"acknowledged": 1, "p50": 1.0, "p99": 1.0, "max": 1.0},
            "acknowledged_during": 1,
            "failed_during": 1,
            "unknown_during": 1,
        }
    ]
    assert m["send_errors"] == {"NOT_ENOUGH_REPLICAS": 1, "_MSG_TIMED_OUT": 1}
    assert m["unacknowledged"] == 2
    assert m["leaderless_partitions"] == [f"{TOPIC}-0"]


def test_create_topic_attempts_are_split_by_the_quorum_outage() -> None:
    outage = fault(1, start_ms=100, stop_ms=1000, nodes=[1000], fault_name="quorum-loss", target="quorum")

    def attempt(op_id: int, ms: float, outcome: str) -> list[dict]:
        base = {"process": "admin", "f": "create-topic", "id": op_id, "topic": f"t{op_id}"}
        return [{**base, "time_ns": at(ms), "type": "invoke"}, {**base, "time_ns": at(ms + 5), "type": outcome}]

    m = measure(history(*outage, *attempt(1, 50, "ok"), *attempt(2, 500, "info"), *attempt(3, 1500, "ok")))
    assert m["create_topic"]["during_outage"] == {"attempts": 1, "ok": 0, "fail": 0, "info": 1}
    assert m["create_topic"]["after_outage"] == {"attempts": 1, "ok": 1, "fail": 0, "info": 0}
