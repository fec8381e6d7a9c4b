"""The app checker's ``totals`` form (checkers/app/totals.py) on hand-written histories: a running count per key that
must end at what the input holds, one test per anomaly it must report, and the runs it cannot judge."""

from __future__ import annotations

import json

import pytest

from failsafe.checkers import LOSS_VIOLATIONS, run_checkers
from failsafe.checkers.common import CheckerOptionError
from failsafe.checkers.run import check_options
from failsafe.history.ops import Op, event
from tests.unit.test_checker_builders import at, client_config, history, poll, read, rec, send

IN, OUT = "app-in", "app-out"
OPTIONS = {"input_topics": [IN], "output_topics": [OUT], "form": "totals"}


def inputs(*keys: str, partition: int = 0) -> list[dict]:
    """One acknowledged input record per key given, in that order, with the final read of the input."""
    ops = [client_config("input", acks="all")]
    for i, key in enumerate(keys):
        ops += send("input", i, f"input:{i}", i, key=key, topic=IN, partition=partition)
    ops.append(read(partition, [rec(i, f"input:{i}", key=k, topic=IN) for i, k in enumerate(keys)], topic=IN))
    return ops


def totals(*pairs: tuple[str, object], partition: int = 0, as_json: bool = False) -> dict:
    """The final read of one output partition holding (key, total) records in that order."""
    records = [
        rec(i, json.dumps({"count": t}) if as_json else str(t), key=k, topic=OUT, partition=partition)
        for i, (k, t) in enumerate(pairs)
    ]
    return read(partition, records, topic=OUT)


def judge(*ops: dict | list[dict], **options: object) -> dict:
    return run_checkers(history(*ops), {"app": {**OPTIONS, **options}}, ["app"])["app"]


def test_each_keys_last_total_equal_to_its_input_is_valid() -> None:
    result = judge(inputs("k0", "k1", "k0"), totals(("k0", 1), ("k1", 1), ("k0", 2)))
    assert result["valid"] is True and result["form"] == "totals"
    assert result["counts"]["keys"] == 2 and result["counts"]["input-records"] == 3


def test_a_final_total_below_the_input_is_under_counted_a_loss() -> None:
    result = judge(inputs("k0", "k0", "k0"), totals(("k0", 1), ("k0", 2)))
    assert result["valid"] is False and result["violations"] == ["under-counted"]
    row = result["examples"]["under-counted"][0]
    assert (row["key"], row["expected"], row["final"]) == ("k0", 3, 2)
    assert "app.under-counted" in LOSS_VIOLATIONS


def test_a_key_with_input_and_no_total_at_all_is_under_counted() -> None:
    result = judge(inputs("k0", "k1"), totals(("k0", 1)))
    assert result["violations"] == ["under-counted"]
    assert (
        result["examples"]["under-counted"][0]["key"] == "k1" and result["examples"]["under-counted"][0]["final"] == 0
    )


def test_a_final_total_above_the_input_is_over_counted_under_exactly_once_not_at_least_once() -> None:
    ops = (inputs("k0", "k0"), totals(("k0", 1), ("k0", 2), ("k0", 3)))
    assert judge(*ops)["violations"] == ["over-counted"]
    assert judge(*ops, delivery="at-least-once")["valid"] is True


def test_at_least_once_still_owes_every_input_and_at_most_once_never_more() -> None:
    short = (inputs("k0", "k0"), totals(("k0", 1)))
    assert judge(*short, delivery="at-least-once")["violations"] == ["under-counted"]
    assert judge(*short, delivery="at-most-once")["valid"] is True
    assert judge(inputs("k0"), totals(("k0", 2)), delivery="at-most-once")["violations"] == ["over-counted"]


def test_a_loss_hidden_by_a_double_count_is_both_wrong_totals() -> None:
    """As many input records as the totals add up to, so a sum over keys would pass: k0 counted twice, k1 never."""
    result = judge(inputs("k0", "k1"), totals(("k0", 1), ("k0", 2)))
    assert set(result["violations"]) == {"under-counted", "over-counted"}


def test_a_total_that_moves_back_is_went_back_under_exactly_once_only() -> None:
    """The count ends right, but a read_committed reader saw it go 2, 1, 2: state restored from before it published."""
    ops = (inputs("k0", "k0"), totals(("k0", 1), ("k0", 2), ("k0", 1), ("k0", 2)))
    result = judge(*ops)
    assert result["violations"] == ["went-back"] and result["examples"]["went-back"][0]["previous"] == 2
    assert judge(*ops, delivery="at-least-once")["valid"] is True


def test_a_key_no_input_has_or_a_total_that_is_no_number_is_a_phantom() -> None:
    result = judge(inputs("k0"), totals(("k0", 1), ("k9", 1), ("k0", "one")))
    assert result["violations"] == ["phantom"] and result["counts"]["phantom"] == 2


def test_a_total_in_a_json_field() -> None:
    result = judge(inputs("k0", "k0"), totals(("k0", 1), ("k0", 2), as_json=True), total="json:count")
    assert result["valid"] is True


def test_a_keys_totals_in_two_output_partitions_end_at_the_largest_last_one() -> None:
    ops = (inputs("k0", "k0", "k0"), totals(("k0", 1), ("k0", 3)), totals(("k0", 2), partition=1))
    result = judge(*ops)
    assert result["valid"] is True and result["counts"]["keys-in-several-partitions"] == 1


def test_the_input_the_app_was_given_counts_not_the_acknowledgements() -> None:
    """A send whose answer never came but whose record is in the input is counted; a failed one that is not, is not."""
    ops = [client_config("input", acks="all"), *send("input", 0, "input:0", 0, key="k0", topic=IN)]
    ops += send("input", 1, "input:1", None, key="k0", topic=IN, outcome="info")
    ops += send("input", 2, "input:2", None, key="k0", topic=IN, outcome="fail")
    ops.append(read(0, [rec(0, "input:0", key="k0", topic=IN), rec(1, "input:1", key="k0", topic=IN)], topic=IN))
    assert judge(ops, totals(("k0", 1), ("k0", 2)))["valid"] is True
    assert judge(ops, totals(("k0", 1), ("k0", 2), ("k0", 3)))["violations"] == ["over-counted"]


def test_a_record_a_read_committed_reader_had_from_an_aborted_transaction_is_an_aborted_read() -> None:
    result = judge(
        inputs("k0"),
        poll("reader-0", [rec(0, "1", key="k0", topic=OUT), rec(1, "2", key="k0", topic=OUT)]),
        totals(("k0", 1)),
        committed_readers=["reader-0"],
    )
    assert result["violations"] == ["aborted-read"]


def test_an_input_or_output_partition_not_read_leaves_the_totals_unknown() -> None:
    unread_out = judge(inputs("k0"), totals(("k0", 1)), read(1, topic=OUT, error="timed out"))
    assert unread_out["valid"] == "unknown" and "not read completely" in unread_out["reason"]
    unread_in = judge(inputs("k0"), totals(("k0", 1)), read(1, topic=IN, error="timed out"))
    assert unread_in["valid"] == "unknown"


def test_a_total_moving_back_is_decided_even_when_a_partition_was_not_read() -> None:
    ops = (inputs("k0"), totals(("k0", 1), ("k0", 0), ("k0", 1)), read(1, topic=OUT, error="timed out"))
    result = judge(*ops)
    assert result["valid"] is False and result["violations"] == ["went-back"]


def test_an_app_that_had_not_read_all_its_input_is_unknown_but_an_over_count_stays_one() -> None:
    drained = event(Op.DRAINED, process="apps", ok=False, time_ns=at(90_000))
    behind = judge(inputs("k0", "k0"), totals(("k0", 1)), drained)
    assert behind["valid"] == "unknown" and behind["counts"]["under-counted"] == 1
    over = judge(inputs("k0"), totals(("k0", 1), ("k0", 2)), drained)
    assert over["valid"] is False and over["violations"] == ["over-counted"]


@pytest.mark.parametrize("options", [{"form": "sums"}, {"total": "header:count"}, {"total": "json:"}])
def test_a_totals_contract_it_does_not_know_is_refused(options: dict) -> None:
    with pytest.raises(CheckerOptionError):
        check_options("app", {**OPTIONS, **options})


def test_each_totals_anomaly_is_explained_with_its_key_its_input_and_where_the_output_ended() -> None:
    from failsafe.checkers.explain.sentences import explain

    h = history(inputs("k0", "k0", "k1"), totals(("k0", 1), ("k1", 1), ("k1", 2), ("k1", 1)))
    results = {"checkers": run_checkers(h, {"app": OPTIONS}, ["app"])}
    by_anomaly = {e["anomaly"]: e["sentence"] for e in explain(h, results)}
    assert by_anomaly["under-counted"] == (
        "key k0: the input holds 2 records of it (2 acknowledged), its last total (app-out-0 offset 0) is 1"
    )
    assert "key k1: the total at app-out-0 offset 3 is 1, after 2 before it" == by_anomaly["went-back"]
