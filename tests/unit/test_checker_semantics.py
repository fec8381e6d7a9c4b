from __future__ import annotations

import pytest

from failsafe.checkers.common import CheckerOptionError
from failsafe.checkers.semantics import check
from failsafe.scenarios.known import classify
from failsafe.scenarios.registry import load_scenario
from tests.unit.test_checker_builders import (
    assign,
    client_config,
    declare,
    declared,
    history,
    membership,
    poll,
    rec,
    revoke,
    send,
)

SENDS = [*send("p0", 1, "v1", 0), *send("p0", 2, "v2", 0, partition=1)]


def test_each_record_to_one_member_and_all_read_is_valid() -> None:
    h = history(
        *SENDS,
        assign("c0", [0]),
        assign("c1", [1]),
        poll("c0", [rec(0, "v1")], ms=5),
        poll("c1", [rec(0, "v2", partition=1)], ms=5),
    )
    result = check(h)
    assert result["valid"] is True
    assert result["groups"] == ["g"] and result["missing_by_group"] == {"g": 0}


def test_one_record_to_two_members_without_rebalance_is_a_double_delivery() -> None:
    h = history(
        *SENDS,
        assign("c0", [0, 1], ms=0),
        assign("c1", [0], ms=0),
        poll("c0", [rec(0, "v1"), rec(0, "v2", partition=1)], ms=5),
        poll("c1", [rec(0, "v1")], ms=6),
    )
    result = check(h)
    assert result["valid"] is False
    assert result["counts"]["double-delivery"] == 1
    example = result["examples"]["double-delivery"][0]
    assert (example["previous_process"], example["process"], example["offset"]) == ("c0", "c1", 0)


def test_redelivery_after_a_rebalance_is_tolerated_and_counted() -> None:
    h = history(
        *SENDS,
        assign("c0", [0, 1], ms=0),
        poll("c0", [rec(0, "v1"), rec(0, "v2", partition=1)], ms=5),
        revoke("c0", [0, 1], ms=10),
        assign("c0", [1], ms=11),
        assign("c1", [0], ms=11),
        poll("c1", [rec(0, "v1")], ms=12),
    )
    result = check(h)
    assert result["valid"] is True
    assert result["counts"]["redelivered-across-rebalance"] == 1 and result["counts"]["double-delivery"] == 0


def test_another_group_rebalancing_does_not_excuse_a_double_delivery() -> None:
    h = history(
        *SENDS,
        assign("c0", [0, 1]),
        poll("c0", [rec(0, "v1"), rec(0, "v2", partition=1)], ms=5),
        assign("x0", [0], ms=6, group="other"),
        poll("c1", [rec(0, "v1")], ms=7),
    )
    assert check(h)["counts"]["double-delivery"] == 1


def test_a_group_that_missed_an_acknowledged_write_is_invalid() -> None:
    h = history(
        *SENDS,
        assign("c0", [0, 1]),
        poll("c0", [rec(0, "v1"), rec(0, "v2", partition=1)], ms=5),
        assign("d0", [0, 1], group="late"),
        poll("d0", [rec(0, "v1")], ms=5, group="late"),
    )
    result = check(h)
    assert result["valid"] is False
    assert result["missing_by_group"] == {"g": 0, "late": 1}
    assert result["examples"]["missing"][0] | {"id": None} == {
        "group": "late",
        "id": None,
        "process": "p0",
        "topic": "t",
        "partition": 1,
        "offset": 0,
        "value": "v2",
    }
    lossy = declare(declared("p0", may_lose=True))
    assert (
        check(
            history(
                lossy,
                client_config("p0", acks="1"),
                *SENDS,
                assign("d0", [0, 1], group="late"),
                poll("d0", [rec(0, "v1")], ms=5, group="late"),
            )
        )["valid"]
        is True
    ), "a writer that promised nothing may be missed"
    with pytest.raises(CheckerOptionError):
        check(h, {"groups": ["g"]})  # no option chooses which groups are judged
    durable = history(
        lossy,
        client_config("p0", acks="all"),
        *SENDS,
        assign("d0", [0, 1], group="late"),
        poll("d0", [rec(0, "v1")], ms=5, group="late"),
    )
    assert check(durable)["violations"] == ["missing"], "an acks=all writer's missed write never is"


def test_a_declared_group_that_read_nothing_misses_everything() -> None:
    """Hole 5: a group the scenario declares that never read is judged, not skipped."""
    h = history(
        declare(declared("c0", "consumer", group="g"), declared("x0", "consumer", group="absent")),
        *SENDS,
        assign("c0", [0, 1]),
        poll("c0", [rec(0, "v1"), rec(0, "v2", partition=1)], ms=5),
    )
    result = check(h)
    assert result["valid"] is False and result["missing_by_group"] == {"absent": 2, "g": 0}


def test_a_group_is_only_expected_to_read_its_topics() -> None:
    h = history(
        *SENDS,
        *send("p0", 3, "w1", 0, topic="elsewhere"),
        assign("c0", [0, 1]),
        poll("c0", [rec(0, "v1"), rec(0, "v2", partition=1)], ms=5),
    )
    assert check(h)["valid"] is True


def test_an_empty_history_is_valid() -> None:
    assert check(history())["valid"] is True


def _on_host(process: str, error_ms: float) -> dict:
    """The client-config op of a client that ran on a host whose clock is known within ``error_ms``."""
    return {**client_config(process), "host": "h2", "clock_offset_ns": 250_000, "clock_error_ns": round(error_ms * 1e6)}


def test_a_rebalance_within_the_clock_bound_of_a_client_on_a_host_leaves_a_redelivery_undecided() -> None:
    # c1 read the record at 6 ms by its host's clock; the group's rebalance came at 8 ms by c0's (failsafe's clock).
    ops = [
        *SENDS,
        assign("c0", [0, 1], ms=0),
        poll("c0", [rec(0, "v1"), rec(0, "v2", partition=1)], ms=5),
        poll("c1", [rec(0, "v1")], ms=6),
        revoke("c0", [0], ms=8),
    ]
    assert check(history(*ops))["counts"]["double-delivery"] == 1, "one clock: the read came before the rebalance"
    assert check(history(_on_host("c1", 1), *ops))["counts"]["double-delivery"] == 1, "2 ms apart, known within 1 ms"
    result = check(history(_on_host("c1", 3), *ops))
    # Within the bound the order is unknown: undecided, never an excuse.
    assert result["counts"]["double-delivery"] == 0 and result["counts"]["double-delivery-undecided"] == 1
    assert result["valid"] == "unknown" and result["counts"]["redelivered-across-rebalance"] == 0


def _woken(lost_after_ms: float, *, lost: bool = True, session_ms: int | None = 10_000) -> list[dict]:
    """c0 owns partition 0 and freezes; the group gives it to c1, which reads offset 0; c0 wakes and hands out offset 0,
    which it had fetched before the freeze, then reports the partition revoked (lost, or not) ``lost_after_ms``
    later."""
    config = [
        client_config("c0", **({"session.timeout.ms": str(session_ms)} if session_ms else {})),
        client_config("c1", **({"session.timeout.ms": str(session_ms)} if session_ms else {})),
    ]
    return [
        *config,
        *SENDS,
        assign("c0", [0], ms=1),
        assign("c1", [0, 1], ms=20),
        poll("c1", [rec(0, "v1"), rec(0, "v2", partition=1)], ms=21),
        poll("c0", [rec(0, "v1")], ms=40),
        membership("revoke", "c0", [0], ms=40 + lost_after_ms, lost=lost),
    ]


def test_a_woken_member_handing_out_a_record_then_reporting_it_lost_is_a_stale_delivery() -> None:
    result = check(history(*_woken(0.001)))
    assert result["valid"] is False and result["violations"] == ["stale-delivery"]
    assert result["counts"]["stale-delivery"] == 1 and result["counts"]["double-delivery"] == 0
    assert result["processes"] == {"stale-delivery": ["c0"]}
    example = result["examples"]["stale-delivery"][0]
    assert (example["previous_process"], example["process"], example["offset"]) == ("c1", "c0", 0)


@pytest.mark.parametrize(
    ("lost_after_ms", "lost", "session_ms"),
    [
        (0.001, False, 10_000),  # a plain revoke: the member never said the group took the partition from it
        (10_001, True, 10_000),  # it said so more than its session after the read
        (45_001, True, None),  # no session recorded: the default, 45 s, bounds it
    ],
)
def test_a_double_delivery_the_member_did_not_promptly_report_lost_stays_a_double_delivery(
    lost_after_ms: float, lost: bool, session_ms: int | None
) -> None:
    result = check(history(*_woken(lost_after_ms, lost=lost, session_ms=session_ms)))
    assert result["valid"] is False and result["violations"] == ["double-delivery"]
    assert result["counts"]["stale-delivery"] == 0 and result["counts"]["double-delivery"] == 1


@pytest.mark.parametrize(
    ("lost_after_ms", "lost", "verdict"), [(0.001, True, "KNOWN"), (0.001, False, "INVALID"), (10_001, True, "INVALID")]
)
def test_rebalance_member_paused_knows_a_stale_delivery_and_no_other_double_delivery(
    lost_after_ms: float, lost: bool, verdict: str
) -> None:
    h = history(*_woken(lost_after_ms, lost=lost))
    results = classify(
        {"valid": False, "checkers": {"semantics": check(h)}}, load_scenario("rebalance-member-paused"), h
    )
    assert results["verdict"] == verdict
    assert results.get("unexplained", []) == ([] if verdict == "KNOWN" else ["semantics.double-delivery"])
