from __future__ import annotations

import pytest

from failsafe.checkers.common import CheckerOptionError
from failsafe.checkers.order import check
from tests.unit.test_checker_builders import assign, client_config, history, log_read, poll, rec, revoke, send


def _reads(*offsets: int, key: str | None = None) -> list[dict]:
    return [rec(offset, f"v{offset}", key=key) for offset in offsets]


def test_increasing_offsets_in_one_epoch_are_valid() -> None:
    h = history(assign("c0", [0]), poll("c0", _reads(0, 1), ms=1), poll("c0", _reads(2), ms=2))
    result = check(h)
    assert result["valid"] is True and result["counts"]["records-checked"] == 3


def test_going_back_within_an_epoch_is_a_nonmonotonic_poll() -> None:
    h = history(assign("c0", [0]), poll("c0", _reads(0, 1), ms=1), poll("c0", _reads(1), ms=2))
    result = check(h)
    assert result["valid"] is False
    assert result["counts"]["nonmonotonic-poll"] == 1 and result["counts"]["poll-skip"] == 0
    example = result["examples"]["nonmonotonic-poll"][0]
    assert (example["previous_offset"], example["offset"], example["poll_seq"]) == (1, 1, 1)


def test_going_back_across_a_rebalance_is_allowed() -> None:
    h = history(
        assign("c0", [0]),
        poll("c0", _reads(0, 1), ms=1),
        revoke("c0", [0], ms=2),
        assign("c0", [0], ms=3),
        poll("c0", _reads(0, 1, 2), ms=4),
    )
    assert check(h)["valid"] is True


def test_a_manually_assigned_consumer_has_one_epoch() -> None:
    h = history(poll("c0", _reads(0, 1), ms=1, group=None), poll("c0", _reads(0), ms=2, group=None))
    assert check(h)["counts"]["nonmonotonic-poll"] == 1


def test_jumping_over_an_offset_that_exists_is_a_poll_skip() -> None:
    h = history(assign("c0", [0]), poll("c0", _reads(0, 2), ms=1), log_read(_reads(0, 1, 2)))
    result = check(h)
    assert result["valid"] is False and result["counts"]["poll-skip"] == 1
    assert result["examples"]["poll-skip"][0]["skipped_offset"] == 1


def test_an_offset_read_by_another_consumer_proves_it_exists() -> None:
    h = history(assign("c0", [0]), poll("c0", _reads(0, 2), ms=1), poll("c1", _reads(1), ms=1, group="other"))
    assert check(h)["counts"]["poll-skip"] == 1


def test_a_gap_no_one_saw_is_not_a_skip() -> None:
    # transaction markers take offsets that no consumer and no log read ever returns
    h = history(assign("c0", [0]), poll("c0", _reads(0, 2), ms=1), log_read(_reads(0, 2)))
    assert check(h)["valid"] is True


def test_a_key_read_out_of_order_is_key_reordered() -> None:
    h = history(
        assign("c0", [0]),
        poll("c0", [rec(0, "a", key="k"), rec(1, "b", key="j"), rec(2, "c", key="k")], ms=1),
        poll("c0", [rec(0, "a", key="k")], ms=2),
    )
    result = check(h)
    assert result["valid"] is False
    assert result["counts"]["key-reordered"] == 1
    assert result["examples"]["key-reordered"][0]["key"] == "k"


def test_other_keys_going_back_do_not_reorder_a_key() -> None:
    h = history(
        assign("c0", [0]),
        poll("c0", [rec(0, "a", key="k"), rec(1, "b", key="j")], ms=1),
        poll("c0", [rec(1, "b", key="j")], ms=2),
    )
    result = check(h)
    assert result["counts"]["key-reordered"] == 1  # j repeated
    h = history(
        assign("c0", [0]),
        poll("c0", [rec(0, "a", key="k"), rec(2, "b", key="j")], ms=1),
        poll("c0", [rec(1, "c", key="i")], ms=2),
    )
    result = check(h)
    assert result["counts"]["nonmonotonic-poll"] == 1 and result["counts"]["key-reordered"] == 0


def test_acknowledged_offsets_going_back_is_a_nonmonotonic_send() -> None:
    h = history(*send("p0", 1, "v1", 5), *send("p0", 2, "v2", 3))
    result = check(h)
    assert result["valid"] is False and result["counts"]["nonmonotonic-send"] == 1
    example = result["examples"]["nonmonotonic-send"][0]
    assert (example["previous_id"], example["previous_offset"], example["id"], example["offset"]) == (1, 5, 2, 3)


def test_nonmonotonic_send_is_judged_of_every_producer_but_those_that_recorded_no_idempotence() -> None:
    ops = [*send("p0", 1, "v1", 5), *send("p0", 2, "v2", 3), *send("p1", 3, "v3", 7), *send("p1", 4, "v4", 6)]
    assert check(history(*ops))["counts"]["nonmonotonic-send"] == 2, "nothing recorded: judged"
    result = check(
        history(client_config("p0", enable_idempotence="false"), client_config("p1", enable_idempotence="true"), *ops)
    )
    assert result["counts"]["nonmonotonic-send"] == 1 and result["counts"]["nonmonotonic-send-non-idempotent"] == 1
    with pytest.raises(CheckerOptionError):
        check(history(*ops), {"idempotent_producers": []})  # an option never excuses


def test_sends_to_different_partitions_are_independent() -> None:
    h = history(*send("p0", 1, "v1", 5, partition=0), *send("p0", 2, "v2", 3, partition=1))
    assert check(h)["valid"] is True


def test_an_empty_history_is_valid() -> None:
    assert check(history())["valid"] is True
