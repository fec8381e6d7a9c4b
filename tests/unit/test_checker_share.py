"""The share-group checker on hand-written histories: each violation seen failing, redeliveries explained seen
passing."""

from __future__ import annotations

import pytest

from failsafe.checkers.common import CheckerOptionError
from failsafe.checkers.share.deliveries import check
from tests.unit.test_checker_builders import at, client_event, fault, history, send

GROUP = "sg"


def acquire(process: str, offsets: list[int], *, ms: float, count: int = 1, partition: int = 0) -> dict:
    """A share-poll: the records at ``offsets`` acquired with delivery count ``count``."""
    return {
        "time_ns": at(ms),
        "process": process,
        "type": "ok",
        "f": "share-poll",
        "group": GROUP,
        "records": [
            {"topic": "t", "partition": partition, "offset": o, "key": None, "value": f"v{o}", "delivery_count": count}
            for o in offsets
        ],
    }


def ack(
    process: str, offsets: list[int], kind: str = "accept", *, ms: float, type: str = "ok", error: str | None = None
) -> dict:
    op = {
        "time_ns": at(ms),
        "process": process,
        "type": type,
        "f": "share-ack",
        "group": GROUP,
        "acks": [{"topic": "t", "partition": 0, "offset": o, "ack": kind} for o in offsets],
    }
    if error:
        op["error"] = error
    return op


WRITES = [send("p", i, f"v{i}", i, ms=i) for i in range(3)]


def settings(lock_ms: int = 30_000, limit: int = 5, reset: str = "earliest", group: str = GROUP) -> dict:
    """The group's configs as the share kind records them when the cluster describes them (a group-config op)."""
    return {
        "time_ns": at(0),
        "process": "runner",
        "type": "info",
        "f": "group-config",
        "group": group,
        "config": [
            {"name": "share.record.lock.duration.ms", "value": str(lock_ms)},
            {"name": "share.delivery.count.limit", "value": str(limit)},
            {"name": "share.auto.offset.reset", "value": reset},
        ],
    }


DEFAULTS = settings()


def test_every_write_accepted_once_is_valid() -> None:
    result = check(
        history(
            *WRITES,
            acquire("s0", [0, 1], ms=100),
            ack("s0", [0, 1], ms=110),
            acquire("s1", [2], ms=120),
            ack("s1", [2], ms=130),
        )
    )
    assert result["valid"] is True
    assert (result["counts"]["accepted"], result["counts"]["records-delivered"], result["counts"]["redeliveries"]) == (
        3,
        3,
        0,
    )


def test_an_acknowledged_write_never_accepted_is_lost() -> None:
    result = check(history(*WRITES, acquire("s0", [0, 1], ms=100), ack("s0", [0, 1], ms=110)))
    assert result["valid"] is False and result["violations"] == ["lost"]
    assert result["counts"]["lost"] == 1 and result["counts"]["lost-never-delivered"] == 1
    assert result["examples"]["lost"][0]["offset"] == 2


def test_a_delivered_write_whose_accept_the_broker_refused_is_lost_too() -> None:
    h = history(
        *WRITES,
        acquire("s0", [0, 1, 2], ms=100),
        ack("s0", [0, 1], ms=110),
        ack("s0", [2], ms=110, type="fail", error="INVALID_RECORD_STATE"),
    )
    result = check(h)
    assert (
        result["counts"]["lost"] == 1
        and result["counts"]["lost-never-delivered"] == 0
        and result["counts"]["acks-failed"] == 1
    )


def test_a_record_accepted_twice_without_a_redelivery_is_invalid() -> None:
    result = check(
        history(*WRITES, acquire("s0", [0, 1, 2], ms=100), ack("s0", [0, 1, 2], ms=110), ack("s0", [1], ms=120))
    )
    assert result["violations"] == ["accepted-twice"]
    assert result["examples"]["accepted-twice"][0]["offset"] == 1


def test_a_record_delivered_again_after_its_accept_was_taken_is_invalid() -> None:
    h = history(
        *WRITES,
        acquire("s0", [0, 1, 2], ms=100),
        ack("s0", [0, 1, 2], ms=110),
        acquire("s1", [1], ms=200, count=2),
        ack("s1", [1], ms=210),
    )
    result = check(h)
    assert set(result["violations"]) == {"redelivered-after-ack"}
    [example] = result["examples"]["redelivered-after-ack"]
    assert (example["offset"], example["to"], example["ack"]) == (1, "s1", "accept")
    assert result["counts"]["unexplained-redelivery"] == 0 and result["counts"]["accepted-twice"] == 0


def test_a_redelivery_with_no_reason_is_unexplained() -> None:
    h = history(
        *WRITES,
        acquire("s0", [0, 1, 2], ms=100),
        ack("s0", [0, 2], ms=110),
        acquire("s1", [1], ms=5_000, count=2),
        ack("s1", [1], ms=5_010),
    )
    result = check(h)
    assert result["violations"] == ["unexplained-redelivery"]
    [example] = result["examples"]["unexplained-redelivery"]
    assert (example["from"], example["to"], example["delay_ms"], example["reason"]) == (
        "s0",
        "s1",
        pytest.approx(4900),
        None,
    )


def test_redeliveries_after_a_lock_expiry_a_kill_and_a_release_are_explained() -> None:
    h = history(
        DEFAULTS,
        *WRITES,
        acquire("s0", [0, 1, 2], ms=100),
        # s0 releases 0, holds 1 past the 30 s lock, and is killed holding 2 (more than the 10 s a stop is allowed to
        # lag after 1's redelivery: its kill does not explain that one).
        ack("s0", [0], "release", ms=110),
        acquire("s1", [0], ms=200, count=2),
        ack("s1", [0], ms=210),
        acquire("s1", [1], ms=30_500, count=2),
        ack("s1", [1], ms=30_510),
        *fault(1, start_ms=45_000, stop_ms=45_010, nodes=["s0"], fault_name="kill-consumer", target="consumer"),
        acquire("s1", [2], ms=70_000, count=2),
        ack("s1", [2], ms=70_010),
    )
    result = check(h)
    assert result["valid"] is True
    counts = result["counts"]
    # 2 came back 69.9 s after its acquisition: its lock (30 s) had run out before its holder was killed, and explains
    # it.
    assert (
        counts["redeliveries-released"],
        counts["redeliveries-lock-expired"],
        counts["redeliveries-holder-stopped"],
    ) == (1, 2, 0)
    assert result["redelivery_delay_ms"]["lock-expired"]["max"] == pytest.approx(69_900)


def test_a_release_answered_after_the_redelivery_still_explains_it() -> None:
    # The broker took s0's release and gave the record to s1 before s0 wrote the answer down.
    h = history(
        *WRITES,
        acquire("s0", [0, 1, 2], ms=100),
        ack("s0", [0, 2], ms=110),
        acquire("s1", [1], ms=150, count=2),
        ack("s0", [1], "release", ms=160),
        ack("s1", [1], ms=170),
    )
    result = check(h)
    assert result["valid"] is True and result["counts"]["redeliveries-released"] == 1


def test_an_accept_with_no_answer_is_neither_lost_nor_accepted() -> None:
    h = history(
        *WRITES,
        acquire("s0", [0, 1, 2], ms=100),
        ack("s0", [0, 1], ms=110),
        ack("s0", [2], ms=110, type="info", error="TIMED_OUT"),
    )
    result = check(h)
    assert result["valid"] is True and result["counts"]["unknown-acks"] == 1 and result["counts"]["lost"] == 0


def test_a_group_that_started_at_latest_is_judged_from_its_first_delivery() -> None:
    ops = [*WRITES, acquire("s0", [1, 2], ms=100), ack("s0", [1, 2], ms=110)]
    assert check(history(*ops))["counts"]["lost-never-delivered"] == 1, "unrecorded: every write is judged"
    assert check(history(settings(reset="earliest"), *ops))["counts"]["lost-never-delivered"] == 1
    assert check(history(settings(reset="latest"), *ops))["valid"] is True
    with pytest.raises(CheckerOptionError):
        check(history(*ops), {"from_first_delivered": True})


def test_a_redelivery_after_a_leader_change_is_explained() -> None:
    def sample(ms: float, leader: int) -> dict:
        return {
            "time_ns": at(ms),
            "process": "runner",
            "type": "info",
            "f": "topology",
            "partitions": [{"topic": "t", "partition": 0, "leader": leader, "replicas": [0, 1, 2], "isr": [0, 1, 2]}],
        }

    h = history(
        *WRITES,
        sample(50, 0),
        acquire("s0", [0, 1, 2], ms=100),
        ack("s0", [0, 2], ms=110),
        sample(1_000, 1),
        acquire("s1", [1], ms=2_000, count=2),
        ack("s1", [1], ms=2_010),
    )
    result = check(h)
    assert result["valid"] is True and result["counts"]["redeliveries-leader-change"] == 1


def test_unknown_delivery_counts_and_bad_options() -> None:
    h = history(
        *WRITES,
        acquire("s0", [0, 1, 2], ms=100, count=0),
        ack("s0", [0, 2], ms=110),
        ack("s0", [1], "release", ms=120),
        acquire("s1", [1], ms=200, count=0),
        ack("s1", [1], ms=210),
    )
    assert check(h)["valid"] is True
    for option in (
        {"lock_duration_ms": 15_000},
        {"lock_slack_ms": 2000},
        {"delivery_count_limit": 1},
        {"groups": [GROUP]},
        {"lossy_writers": [".*"]},
    ):
        with pytest.raises(CheckerOptionError):
            check(h, option)  # the group's settings come from the history, never from an option


def test_a_crash_of_the_holder_and_a_skipped_delivery_count() -> None:
    h = history(
        *WRITES,
        acquire("s0", [0, 1, 2], ms=100),
        ack("s0", [0, 1], ms=110),
        client_event("crash", "s0", ms=500),
        acquire("s1", [2], ms=31_000, count=3),
        ack("s1", [2], ms=31_010),
    )
    result = check(h)
    assert result["valid"] is True and result["counts"]["unseen-deliveries"] == 1


def test_records_delivered_to_the_limit_are_archived_not_lost() -> None:
    ops = [*WRITES, acquire("s0", [0, 1], ms=10), ack("s0", [0, 1], ms=11)]
    for n in range(1, 6):
        ops += [acquire(f"s{n}", [2], ms=n * 100, count=n), ack(f"s{n}", [2], "release", ms=n * 100 + 5)]
    result = check(history(settings(limit=5), *ops))
    assert result["valid"] is True and result["counts"]["archived-at-limit"] == 1
    assert result["examples"]["archived-at-limit"][0]["delivery_count"] == 5
    assert check(history(settings(limit=6), *ops))["violations"] == ["lost"]
    assert check(history(*ops))["violations"] == ["lost"], "unrecorded: judged by the highest limit Kafka allows (10)"


def test_a_rejected_record_is_archived_and_a_node_fault_explains_a_redelivery() -> None:
    h = history(
        *WRITES,
        acquire("s0", [0, 1, 2], ms=100),
        ack("s0", [0], "reject", ms=110),
        ack("s0", [2], ms=110),
        *fault(1, start_ms=1_000, stop_ms=2_000, nodes=["1"], fault_name="kill", target="broker"),
        acquire("s1", [1], ms=3_000, count=2),
        ack("s1", [1], ms=3_010),
    )
    result = check(h)
    assert result["valid"] is True
    assert (result["counts"]["rejected"], result["counts"]["redeliveries-node-fault"]) == (1, 1)


def test_no_share_delivery_is_unknown() -> None:
    assert check(history(*WRITES))["valid"] == "unknown"


def test_the_delivery_checker_counts_a_write_a_share_group_acquired_as_read() -> None:
    from failsafe.checkers.delivery import check as check_delivery
    from tests.unit.test_checker_builders import log_read, rec

    logged = log_read([rec(i, f"v{i}", topic="t") for i in range(3)])
    only_two = check_delivery(history(*WRITES, acquire("s0", [0, 1], ms=100), logged))
    assert only_two["counts"]["read"] == 2 and only_two["counts"]["lost-in-log-not-consumed"] == 1
    every = check_delivery(
        history(
            *WRITES,
            acquire("s0", [0, 1], ms=100),
            acquire("s1", [2], ms=120),
            acquire("s1", [2], ms=130, count=2),
            logged,
        )
    )
    assert every["valid"] is True and every["counts"]["read"] == 3 and every["counts"]["duplicate"] == 0


def test_a_stale_accept_taken_after_the_lock_expired_is_flagged_and_the_redelivery_still_explained() -> None:
    # Seen on Kafka 4.3.1 (share-consumer-paused): s0 froze holding record 1, its lock ran out, s1 got it and accepted
    # it, then s0 woke and its accept of the old delivery was answered with no error.
    result = check(
        history(
            settings(lock_ms=15_000),
            *WRITES,
            acquire("s0", [0, 1, 2], ms=100),
            ack("s0", [0, 2], ms=110),
            acquire("s1", [1], ms=16_000, count=2),
            ack("s1", [1], ms=16_100),
            ack("s0", [1], ms=26_000),
        )
    )
    assert set(result["violations"]) == {"accepted-twice", "redelivered-after-ack"}
    assert result["counts"]["redeliveries-lock-expired"] == 1 and result["counts"]["unexplained-redelivery"] == 0
    assert result["examples"]["accepted-twice"][0]["process"] == "s0"


def test_a_frozen_holders_records_came_back_because_their_lock_ran_out() -> None:
    frozen = fault(1, start_ms=150, stop_ms=25_000, nodes=["s0"], fault_name="pause-consumer", target="consumer")
    h = history(
        settings(lock_ms=15_000),
        *WRITES,
        acquire("s0", [0, 1, 2], ms=100),
        ack("s0", [0, 2], ms=110),
        *frozen,
        acquire("s1", [1], ms=15_200, count=2),
        ack("s1", [1], ms=15_300),
    )
    result = check(h)
    assert result["valid"] is True and result["counts"]["redeliveries-lock-expired"] == 1
    killed = fault(1, start_ms=150, stop_ms=None, nodes=["s0"], fault_name="kill-consumer", target="consumer")
    h = history(
        settings(lock_ms=15_000),
        *WRITES,
        acquire("s0", [0, 1, 2], ms=100),
        ack("s0", [0, 2], ms=110),
        *killed,
        acquire("s1", [1], ms=600, count=2),
        ack("s1", [1], ms=700),
    )
    assert check(h)["counts"]["redeliveries-holder-stopped"] == 1


def test_a_redelivery_after_the_lock_is_lock_expired_even_if_its_holder_closed_soon_after() -> None:
    frozen = fault(1, start_ms=150, stop_ms=18_000, nodes=["s0"], fault_name="pause-consumer", target="consumer")
    h = history(
        settings(lock_ms=15_000),
        *WRITES,
        acquire("s0", [0, 1, 2], ms=100),
        ack("s0", [0, 2], ms=110),
        *frozen,
        acquire("s1", [1], ms=15_200, count=2),
        ack("s1", [1], ms=15_300),
        client_event("close", "s0", ms=18_800),
    )
    assert check(h)["counts"]["redeliveries-lock-expired"] == 1
