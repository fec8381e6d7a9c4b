from __future__ import annotations

import pytest

from failsafe.checkers.common import CheckerOptionError
from failsafe.checkers.delivery import check
from tests.unit.test_checker_builders import (
    assign,
    client_config,
    declare,
    declared,
    history,
    log_read,
    poll,
    read,
    rec,
    send,
)

ASSIGN = assign("c0", [0])


def test_every_acknowledged_write_read_once_is_valid() -> None:
    h = history(
        *send("p0", 1, "v1", 0),
        *send("p0", 2, "v2", 1),
        ASSIGN,
        poll("c0", [rec(0, "v1"), rec(1, "v2")], ms=5),
        log_read([rec(0, "v1"), rec(1, "v2")]),
    )
    result = check(h)
    assert result["valid"] is True
    assert result["counts"]["acknowledged"] == 2 and result["counts"]["read"] == 2 and result["counts"]["lost"] == 0
    assert result["examples"] == {}


def test_a_write_missing_from_reads_and_log_is_lost_not_in_log_and_unseen() -> None:
    h = history(
        *send("p0", 1, "v1", 0),
        *send("p0", 2, "v2", 1),
        ASSIGN,
        poll("c0", [rec(0, "v1")], ms=5),
        log_read([rec(0, "v1")]),
    )
    result = check(h)
    assert result["valid"] is False
    counts = result["counts"]
    assert (counts["lost"], counts["lost-not-in-log"], counts["unseen"], counts["lost-write"]) == (1, 1, 1, 0)
    assert result["examples"]["lost-not-in-log"][0]["value"] == "v2"


def test_a_write_below_the_highest_read_offset_is_a_lost_write() -> None:
    h = history(
        *send("p0", 1, "v1", 0),
        *send("p0", 2, "v2", 1),
        *send("p0", 3, "v3", 2),
        ASSIGN,
        poll("c0", [rec(0, "v1"), rec(2, "v3")], ms=5),
    )
    result = check(h)
    assert result["valid"] is False
    assert (result["counts"]["lost-write"], result["counts"]["unseen"]) == (1, 0)
    assert result["examples"]["lost-write"][0]["value"] == "v2"


def test_a_write_in_the_log_but_never_consumed() -> None:
    h = history(
        *send("p0", 1, "v1", 0),
        *send("p0", 2, "v2", 1),
        ASSIGN,
        poll("c0", [rec(0, "v1")], ms=5),
        log_read([rec(0, "v1"), rec(1, "v2")]),
    )
    result = check(h)
    assert result["valid"] is False
    assert result["counts"]["lost-in-log-not-consumed"] == 1 and result["counts"]["lost-not-in-log"] == 0


def test_without_a_log_read_a_loss_is_unverified() -> None:
    h = history(*send("p0", 1, "v1", 0), *send("p0", 2, "v2", 1), ASSIGN, poll("c0", [rec(0, "v1")], ms=5))
    result = check(h)
    assert result["valid"] is False and result["counts"]["lost-unverified"] == 1


def test_a_lossy_writers_loss_counts_but_does_not_invalidate() -> None:
    ops = [
        client_config("p0", acks="1"),
        *send("p0", 1, "v1", 0),
        *send("p0", 2, "v2", 1),
        ASSIGN,
        poll("c0", [rec(0, "v1")], ms=5),
    ]
    result = check(history(declare(declared("p0", may_lose=True)), *ops))
    assert result["valid"] is True and result["counts"]["lost"] == 1 and result["counts"]["lost-allowed"] == 1
    assert result["by_process"]["p0"]["may_lose"] is True and result["by_process"]["p0"]["durable"] is False
    undeclared = check(history(declare(declared("p1", may_lose=True)), *ops))
    assert undeclared["violations"] == ["lost"], "a writer the scenario does not declare may_lose may not lose"


@pytest.mark.parametrize("acks", ["all", "-1"])
def test_an_acks_all_writers_loss_is_a_violation_whatever_the_declaration_says(acks: str) -> None:
    h = history(
        declare(declared("p0", may_lose=True)),
        client_config("p0", acks=acks),
        *send("p0", 1, "v1", 0),
        *send("p0", 2, "v2", 1),
        ASSIGN,
        poll("c0", [rec(0, "v1")], ms=5),
    )
    result = check(h)
    assert result["valid"] is False and result["violations"] == ["lost"] and result["counts"]["lost-allowed"] == 0
    assert result["by_process"]["p0"]["durable"] is True and result["by_process"]["p0"]["may_lose"] is False


def test_a_writer_declared_may_lose_that_recorded_no_acks_is_durable() -> None:
    h = history(declare(declared("p0", may_lose=True)), *send("p0", 1, "v1", 0), ASSIGN, poll("c0", [], ms=5))
    assert check(h)["violations"] == ["lost"]


def test_one_writers_allowance_does_not_cover_anothers_loss() -> None:
    h = history(
        declare(declared("acks1", may_lose=True), declared("acksall")),
        client_config("acks1", acks="1"),
        client_config("acksall", acks="all"),
        *send("acks1", 1, "a1", 0),
        *send("acksall", 1, "b1", 1),
        ASSIGN,
        poll("c0", [], ms=5),
    )
    result = check(h)
    assert result["counts"]["lost"] == 2 and result["counts"]["lost-allowed"] == 1 and result["violations"] == ["lost"]


def test_an_acks0_write_without_offset_counts_as_acknowledged() -> None:
    lost = history(*send("p0", 1, "v1", None), *send("p0", 2, "v2", None), ASSIGN, poll("c0", [rec(0, "v1")], ms=5))
    result = check(lost)
    assert result["counts"]["acknowledged-without-offset"] == 2
    assert result["valid"] is False and result["counts"]["lost"] == 1
    consumed = history(*send("p0", 1, "v1", None), ASSIGN, poll("c0", [rec(0, "v1")], ms=5))
    assert check(consumed)["valid"] == "unknown", "read, but its partition never read back at the end: unverified"
    assert (
        check(history(*send("p0", 1, "v1", None), ASSIGN, poll("c0", [rec(0, "v1")], ms=5), read(0, [rec(0, "v1")])))[
            "valid"
        ]
        is True
    )


def test_one_value_at_two_offsets_is_a_duplicate() -> None:
    h = history(*send("p0", 1, "v1", 0), ASSIGN, poll("c0", [rec(0, "v1"), rec(1, "v1")], ms=5))
    result = check(h)
    assert result["valid"] is False
    assert result["counts"]["duplicate"] == 1
    assert result["examples"]["duplicate"] == [
        {
            "topic": "t",
            "value": "v1",
            "partition": [0, 0],
            "offset": [0, 1],
            "process": "p0",
            "id": 1,
            "outcome": "ok",
            "acked_partition": 0,
            "acked_offset": 0,
            "other_copies": [{"partition": 0, "offset": 1}],
        }
    ]
    with pytest.raises(CheckerOptionError):
        check(h, {"allow_duplicates": True})


def test_duplicates_are_split_by_whether_their_send_was_acknowledged() -> None:
    h = history(
        *send("p0", 1, "v1", 1),
        *send("p0", 2, "v2", None, ms=2, outcome="info"),
        *send("p0", 3, "v3", 4, ms=3),
        ASSIGN,
        poll("c0", [rec(0, "v1"), rec(1, "v1"), rec(2, "v2"), rec(3, "v2"), rec(4, "v3")], ms=5),
    )
    result = check(h)
    counts = result["counts"]
    assert (counts["duplicate"], counts["duplicate-acknowledged"], counts["duplicate-unacknowledged"]) == (2, 1, 1)
    assert result["violations"] == ["duplicate-acknowledged", "duplicate-unacknowledged"]
    by_value = {example["value"]: example for example in result["examples"]["duplicate"]}
    # v1 was acknowledged at its second copy: the first is the one the producer never heard of.
    assert (by_value["v1"]["acked_partition"], by_value["v1"]["acked_offset"]) == (0, 1)
    assert by_value["v1"]["other_copies"] == [{"partition": 0, "offset": 0}]
    assert by_value["v2"]["outcome"] == "info" and by_value["v2"]["acked_offset"] is None
    assert by_value["v2"]["other_copies"] == [{"partition": 0, "offset": 2}, {"partition": 0, "offset": 3}]


def test_a_duplicate_nobody_sent_is_unacknowledged() -> None:
    h = history(*send("p0", 1, "v1", 0), ASSIGN, poll("c0", [rec(0, "v1"), rec(1, "stray"), rec(2, "stray")], ms=5))
    result = check(h)
    assert result["counts"]["duplicate-unacknowledged"] == 1 and result["counts"]["duplicate-acknowledged"] == 0
    assert result["examples"]["duplicate"][0]["outcome"] is None


def test_a_duplicate_in_the_log_alone_counts() -> None:
    h = history(
        *send("p0", 1, "v1", 0), ASSIGN, poll("c0", [rec(0, "v1")], ms=5), log_read([rec(0, "v1"), rec(1, "v1")])
    )
    result = check(h)
    assert result["valid"] is False and result["counts"]["duplicate"] == 1


def test_two_values_at_one_offset_are_inconsistent() -> None:
    h = history(
        *send("p0", 1, "v1", 0),
        *send("p0", 2, "v2", 0, partition=1),
        ASSIGN,
        poll("c0", [rec(0, "v1"), rec(0, "v2", partition=1)], ms=5),
        poll("c1", [rec(0, "v9")], ms=6),
    )
    result = check(h)
    assert result["valid"] is False
    assert result["counts"]["inconsistent-offsets"] == 1
    assert result["examples"]["inconsistent-offsets"][0]["value"] == ["v1", "v9"]


def test_an_ack_at_another_offset_than_the_read_is_inconsistent() -> None:
    h = history(*send("p0", 1, "v1", 5), ASSIGN, poll("c0", [rec(0, "v1")], ms=5))
    result = check(h)
    assert result["valid"] is False and result["counts"]["inconsistent-offsets"] == 1
    example = result["examples"]["inconsistent-offsets"][0]
    assert (example["offset"], example["read_offset"]) == (5, 0)


def test_a_failed_write_that_was_read_is_failed_but_present() -> None:
    h = history(
        *send("p0", 1, "v1", 0),
        *send("p0", 2, "v2", None, outcome="fail"),
        ASSIGN,
        poll("c0", [rec(0, "v1"), rec(1, "v2")], ms=5),
    )
    result = check(h)
    assert result["valid"] is False
    assert result["counts"]["failed-but-present"] == 1
    assert result["examples"]["failed-but-present"][0]["error"] == "NOT_ENOUGH_REPLICAS"


def test_a_failed_write_in_the_log_is_failed_but_present() -> None:
    h = history(*send("p0", 2, "v2", None, outcome="fail"), log_read([rec(0, "v2")]))
    assert check(h)["counts"]["failed-but-present"] == 1


def test_unknown_writes_are_recovered_or_not_and_neither_invalidates() -> None:
    h = history(
        *send("p0", 1, "v1", None, outcome="info"),
        *send("p0", 2, "v2", None, outcome="info"),
        *send("p0", 3, "v3", None, outcome=None),
        ASSIGN,
        poll("c0", [rec(0, "v1")], ms=5),
    )
    result = check(h)
    assert result["valid"] is True
    assert (result["counts"]["unknown"], result["counts"]["recovered"], result["counts"]["unknown-not-recovered"]) == (
        3,
        1,
        2,
    )


def test_by_process_breaks_outcomes_down_per_producer() -> None:
    ops = [
        *send("p0", 1, "v1", 0),
        *send("p0", 2, "v2", 1),
        *send("p1", 3, "v3", None, outcome="fail"),
        *send("p1", 4, "v4", None, outcome="info"),
        ASSIGN,
        poll("c0", [rec(0, "v1"), rec(2, "v4")], ms=5),
    ]
    assert check(history(declare(declared("p0", may_lose=True)), client_config("p0", acks="0"), *ops))[
        "by_process"
    ] == {
        "p0": {
            "acknowledged": 2,
            "lost": 1,
            "lost-after-read": 0,
            "failed": 0,
            "unknown": 0,
            "recovered": 0,
            "durable": False,
            "may_lose": True,
        },
        "p1": {
            "acknowledged": 0,
            "lost": 0,
            "lost-after-read": 0,
            "failed": 1,
            "unknown": 1,
            "recovered": 1,
            "durable": False,
            "may_lose": False,
        },
    }


def test_offsets_only_reads_are_matched_through_the_log() -> None:
    h = history(*send("p0", 1, "v1", 0), ASSIGN, poll("c0", [rec(0, None)], ms=5), log_read([rec(0, "v1")]))
    assert check(h)["valid"] is True


def test_an_empty_history_is_valid() -> None:
    result = check(history())
    assert result["valid"] is True and result["by_process"] == {}


def test_an_empty_partition_read_completely_holds_nothing() -> None:
    h = history(
        *send("p0", 1, "v1", 0),
        *send("p0", 2, "v2", 0, partition=1),
        ASSIGN,
        poll("c0", [rec(0, "v1")], ms=5),
        read(0, [rec(0, "v1")]),
        read(1),
    )
    assert check(h)["counts"]["lost-not-in-log"] == 1


def test_a_partition_the_final_read_never_named_is_not_read() -> None:
    """Hole 2's other half: that another partition of its topic is in the log says nothing of this one."""
    h = history(
        *send("p0", 1, "v1", 0),
        *send("p0", 2, "v2", 0, partition=1),
        ASSIGN,
        poll("c0", [rec(0, "v1"), rec(0, "v2", partition=1)], ms=5),
        read(0, [rec(0, "v1")]),
    )
    result = check(h)
    assert result["counts"]["lost-after-read-unverified"] == 1 and result["valid"] == "unknown"


def test_a_partition_the_log_reader_could_not_read_is_unverified() -> None:
    failed = {
        "time_ns": 1,
        "process": "log-reader",
        "type": "fail",
        "f": "log-read",
        "topic": "t",
        "partition": 1,
        "error": "LEADER_NOT_AVAILABLE",
    }
    h = history(
        *send("p0", 1, "v1", 0),
        *send("p0", 2, "v2", 0, partition=1),
        ASSIGN,
        poll("c0", [rec(0, "v1")], ms=5),
        log_read([rec(0, "v1")]),
        failed,
    )
    assert check(h)["counts"]["lost-unverified"] == 1


def test_a_read_without_value_still_proves_its_offset_was_read() -> None:
    h = history(*send("p0", 1, "v1", 0), ASSIGN, poll("c0", [rec(0, None)], ms=5), read(0, [rec(0, "v1")]))
    assert check(h)["valid"] is True


def test_a_write_read_and_then_gone_from_the_log_is_lost_after_read() -> None:
    """An unclean election: v2 was acknowledged and read at offset 1, then the new leader wrote v3 there."""
    ops = [
        *send("p0", 1, "v1", 0),
        *send("p0", 2, "v2", 1),
        *send("p0", 3, "v3", 1),
        ASSIGN,
        poll("c0", [rec(0, "v1"), rec(1, "v2")], ms=5),
        poll("c0", [rec(1, "v3")], ms=50),
        log_read([rec(0, "v1"), rec(1, "v3")]),
    ]
    h = history(*ops)
    result = check(h)
    assert result["valid"] is False and "lost-after-read" in result["violations"]
    assert result["counts"]["lost-after-read"] == 1 and result["counts"]["lost"] == 0
    (example,) = result["examples"]["lost-after-read"]
    assert (example["value"], example["offset"], example["log_value"]) == ("v2", 1, "v3")
    lossy = history(declare(declared("p0", may_lose=True)), client_config("p0", acks="1"), *ops)
    assert check(lossy)["violations"] == ["inconsistent-offsets"]
    durable = history(declare(declared("p0", may_lose=True)), client_config("p0", acks="all"), *ops)
    assert "lost-after-read" in check(durable)["violations"], "read, then truncated: lost, for acks=all"


def test_a_read_write_below_the_log_start_is_unverified_here_and_judged_by_durability() -> None:
    """v1 was read at offset 0, then the log's start moved past it (retention, DeleteRecords): taken from the head of
    the log, not truncated at its tail. Delivery cannot tell retention in time from a deletion too early, so it is
    unverified here (durability judges it against the topic's retention); a write gone above the log start is still
    lost after read."""
    ops = [*send("p0", 1, "v1", 0), *send("p0", 2, "v2", 1), ASSIGN, poll("c0", [rec(0, "v1"), rec(1, "v2")], ms=5)]
    result = check(history(*ops, read(0, [rec(1, "v2")], start=1)))
    assert result["counts"]["lost-after-read"] == 0 and result["violations"] == []
    assert result["counts"]["lost-after-read-unverified"] == 1 and result["valid"] == "unknown"
    assert [e["value"] for e in result["examples"]["lost-after-read-unverified"]] == ["v1"]
    # The same write gone while the log still starts at 0: truncated under it.
    cut = check(history(*ops, read(0, [rec(1, "v2")], start=0)))
    assert cut["valid"] is False and cut["counts"]["lost-after-read"] == 1


def test_a_read_write_is_not_lost_after_read_without_a_log_read_of_its_partition() -> None:
    h = history(*send("p0", 1, "v1", 0), ASSIGN, poll("c0", [rec(0, "v1")], ms=5))
    assert check(h)["counts"]["lost-after-read"] == 0
    other_topic = history(
        *send("p0", 1, "v1", 0), ASSIGN, poll("c0", [rec(0, "v1")], ms=5), log_read([rec(0, "x", topic="other")])
    )
    assert check(other_topic)["counts"]["lost-after-read"] == 0
