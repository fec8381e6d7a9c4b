"""The app checker (checkers/app/each.py) on hand-written histories: one test per anomaly it must report, the contract's
deliveries, and the runs it cannot judge; then the same histories judged as `failsafe check` judges an app run."""

from __future__ import annotations

import json

import pytest

from failsafe.checkers import LOSS_VIOLATIONS, run_checkers
from failsafe.checkers.common import CheckerOptionError
from failsafe.checkers.run import check_options
from failsafe.history.ops import Op, event
from failsafe.scenarios.kinds import kind_named
from failsafe.scenarios.registry import read_scenario
from failsafe.scenarios.store.check import check_history
from tests.unit.test_checker_builders import at, client_config, declared, finished, history, poll, read, rec, send

IN, OUT = "app-in", "app-out"
OPTIONS = {"input_topics": [IN], "output_topics": [OUT], "identity": "json:id"}


def out(offset: int, identity: str | None, partition: int = 0) -> dict:
    value = json.dumps({"id": identity, "by": "eos-0"}) if identity is not None else json.dumps({"by": "eos-0"})
    return rec(offset, value, partition=partition, topic=OUT)


def inputs(*values: str) -> list[dict]:
    ops = [client_config("input", acks="all")]
    for i, value in enumerate(values):
        ops += send("input", i, value, i, topic=IN)
    ops.append(read(0, [rec(i, v, topic=IN) for i, v in enumerate(values)], topic=IN))
    return ops


def judge(*ops: dict | list[dict], **options: object) -> dict:
    return run_checkers(history(*ops), {"app": {**OPTIONS, **options}}, ["app"])["app"]


def test_every_input_once_in_the_output_is_valid() -> None:
    result = judge(inputs("input:0", "input:1"), read(0, [out(0, "input:0"), out(1, "input:1")], topic=OUT))
    assert result["valid"] is True and result["counts"]["acknowledged-inputs"] == 2


def test_an_acknowledged_input_missing_from_the_output_is_lost() -> None:
    result = judge(inputs("input:0", "input:1"), read(0, [out(0, "input:0")], topic=OUT))
    assert result["valid"] is False and result["violations"] == ["lost"]
    assert result["examples"]["lost"][0]["identity"] == "input:1"


def test_a_loss_hidden_by_a_later_duplicate_is_both() -> None:
    """As many output records as inputs, so a count would pass: one input twice, the other never."""
    result = judge(inputs("input:0", "input:1"), read(0, [out(0, "input:0"), out(1, "input:0")], topic=OUT))
    assert result["valid"] is False and set(result["violations"]) == {"lost", "duplicate"}
    assert result["counts"]["output-records"] == result["counts"]["acknowledged-inputs"] == 2


def test_an_input_twice_in_the_output_is_a_duplicate_under_exactly_once_not_at_least_once() -> None:
    ops = (inputs("input:0"), read(0, [out(0, "input:0"), out(1, "input:0")], topic=OUT))
    assert judge(*ops)["violations"] == ["duplicate"]
    assert judge(*ops)["counts"]["duplicate-copies"] == 1
    assert judge(*ops, delivery="at-least-once")["valid"] is True


def test_at_most_once_allows_a_missing_input_but_never_a_duplicate() -> None:
    assert (
        judge(inputs("input:0", "input:1"), read(0, [out(0, "input:0")], topic=OUT), delivery="at-most-once")["valid"]
        is True
    )
    dup = judge(inputs("input:0"), read(0, [out(0, "input:0"), out(1, "input:0")], topic=OUT), delivery="at-most-once")
    assert dup["violations"] == ["duplicate"]


def test_an_output_no_producer_sent_is_a_phantom_and_one_without_identity_too() -> None:
    result = judge(inputs("input:0"), read(0, [out(0, "input:0"), out(1, "nobody:7"), out(2, None)], topic=OUT))
    assert result["violations"] == ["phantom"] and result["counts"]["phantom"] == 2


def test_a_record_a_read_committed_reader_had_from_an_aborted_transaction_is_an_aborted_read() -> None:
    """The reader was given output offset 1, which the committed log (the final read at read_committed) lacks."""
    result = judge(
        inputs("input:0"),
        poll("reader-0", [out(0, "input:0"), out(1, "input:0")]),
        read(0, [out(0, "input:0")], topic=OUT),
        committed_readers=["reader-0"],
    )
    assert result["violations"] == ["aborted-read"] and result["examples"]["aborted-read"][0]["offset"] == 1


def test_an_output_partition_not_read_leaves_a_loss_unknown_and_a_duplicate_decided() -> None:
    unread = read(1, topic=OUT, error="timed out")
    missing = judge(inputs("input:0", "input:1"), read(0, [out(0, "input:0")], topic=OUT), unread)
    assert missing["valid"] == "unknown" and "not read completely" in missing["reason"]
    twice = judge(inputs("input:0"), read(0, [out(0, "input:0"), out(1, "input:0")], topic=OUT), unread)
    assert twice["valid"] is False and twice["violations"] == ["duplicate"]


def test_an_app_that_had_not_committed_its_input_when_the_run_ended_is_unknown_not_lost() -> None:
    result = judge(
        inputs("input:0", "input:1"),
        read(0, [out(0, "input:0")], topic=OUT),
        event(Op.DRAINED, process="apps", ok=False, time_ns=at(90_000)),
    )
    assert result["valid"] == "unknown" and result["counts"]["lost"] == 1


def test_an_input_whose_send_failed_or_is_unknown_is_not_owed() -> None:
    ops = [client_config("input", acks="all"), *send("input", 0, "input:0", 0, topic=IN)]
    ops += send("input", 1, "input:1", None, topic=IN, outcome="info")
    ops += send("input", 2, "input:2", None, topic=IN, outcome="fail")
    result = judge(ops, read(0, [rec(0, "input:0", topic=IN)], topic=IN), read(0, [out(0, "input:0")], topic=OUT))
    assert result["valid"] is True and result["counts"]["acknowledged-inputs"] == 1


def test_the_identity_may_be_the_value_or_the_key() -> None:
    plain = judge(inputs("input:0"), read(0, [rec(0, "input:0", topic=OUT)], topic=OUT), identity="value")
    keyed = judge(inputs("input:0"), read(0, [rec(0, "x", key="input:0", topic=OUT)], topic=OUT), identity="key")
    assert plain["valid"] is True and keyed["valid"] is True


@pytest.mark.parametrize(
    "options", [{"delivery": "exactly-twice"}, {"identity": "header:"}, {"identity": "json:"}, {"order": "global"}]
)
def test_a_contract_it_does_not_know_is_refused(options: dict) -> None:
    with pytest.raises(CheckerOptionError):
        check_options("app", {**OPTIONS, **options})


def test_its_loss_can_never_be_known() -> None:
    assert "app.lost" in LOSS_VIOLATIONS


# -- as `failsafe check` judges a run of the example scenario ------------------------------------------------------
EXAMPLE = "examples/apps/eos-broker-and-instance-kill.toml"


def _check(*ops: dict | list[dict]) -> dict:
    scenario = read_scenario(EXAMPLE).parse(())
    return check_history(history(*ops), scenario, kind_named(scenario.kind).checkers)


def test_a_run_of_the_example_whose_output_lost_an_input_is_invalid_and_never_known() -> None:
    ops = (
        inputs("input:0", "input:1"),
        read(0, [out(0, "input:0")], topic=OUT),
        finished(declared("input", topics=[IN])),
    )
    results = _check(*ops)
    assert results["verdict"] == "INVALID" and results["checkers"]["app"]["violations"] == ["lost"]


def test_a_run_of_the_example_with_its_output_whole_is_valid() -> None:
    reads = [read(p, topic=IN) for p in range(1, 6)] + [read(p, topic=OUT) for p in range(1, 6)]
    ops = (
        inputs("input:0", "input:1"),
        read(0, [out(0, "input:0"), out(1, "input:1")], topic=OUT),
        *reads,
        finished(declared("input", topics=[IN])),
    )
    results = _check(*ops)
    assert results["verdict"] == "VALID", results["checkers"]


def test_each_anomaly_is_explained_with_its_input_its_copies_and_the_fault_it_fell_in() -> None:
    from failsafe.checkers.explain.sentences import explain
    from tests.unit.test_checker_builders import fault

    ops = (
        inputs("input:0", "input:1"),
        fault(1, start_ms=-10, stop_ms=50, nodes=["eos-0"], fault_name="kill-app", target="app"),
        read(0, [out(0, "input:0"), out(1, "input:0")], topic=OUT),
    )
    h = history(*ops)
    results = {"checkers": run_checkers(h, {"app": OPTIONS}, ["app"])}
    by_anomaly = {e["anomaly"]: e["sentence"] for e in explain(h, results)}
    assert "input input:1" in by_anomaly["lost"] and "is in no output record" in by_anomaly["lost"]
    assert "2 times in app-out (partition@offset 0@0, 0@1), written by eos-0" in by_anomaly["duplicate"]
    assert "during fault 1 (kill-app of eos-0" in by_anomaly["lost"]


# -- order = "per-key" ---------------------------------------------------------------------------------------------
def keyed_inputs(*pairs: tuple[str, str]) -> list[dict]:
    """Acknowledged (value, key) inputs at offsets 0, 1, ... of input partition 0, with its final read."""
    ops = [client_config("input", acks="all")]
    for i, (value, key) in enumerate(pairs):
        ops += send("input", i, value, i, key=key, topic=IN)
    ops.append(read(0, [rec(i, v, key=k, topic=IN) for i, (v, k) in enumerate(pairs)], topic=IN))
    return ops


def test_an_output_that_keeps_each_keys_order_is_valid_even_when_keys_interleave() -> None:
    ops = (
        keyed_inputs(("input:0", "k0"), ("input:1", "k1"), ("input:2", "k0")),
        read(0, [out(0, "input:1"), out(1, "input:0"), out(2, "input:2")], topic=OUT),
    )
    assert judge(*ops, order="per-key")["valid"] is True


def test_an_input_output_after_a_later_input_of_its_key_is_reordered() -> None:
    ops = (
        keyed_inputs(("input:0", "k0"), ("input:1", "k0")),
        read(0, [out(0, "input:1"), out(1, "input:0")], topic=OUT),
    )
    result = judge(*ops, order="per-key")
    assert result["violations"] == ["reordered"]
    row = result["examples"]["reordered"][0]
    assert (row["identity"], row["input_offset"], row["after_input_offset"]) == ("input:0", 0, 1)
    assert judge(*ops)["valid"] is True  # no order asked for


def test_a_duplicate_replayed_after_later_inputs_is_a_duplicate_not_a_reorder() -> None:
    ops = (
        keyed_inputs(("input:0", "k0"), ("input:1", "k0")),
        read(0, [out(0, "input:0"), out(1, "input:1"), out(2, "input:0")], topic=OUT),
    )
    assert judge(*ops, order="per-key")["violations"] == ["duplicate"]


def test_a_reorder_is_explained_with_the_offsets_it_came_after() -> None:
    from failsafe.checkers.explain.sentences import explain

    h = history(
        keyed_inputs(("input:0", "k0"), ("input:1", "k0")), read(0, [out(0, "input:1"), out(1, "input:0")], topic=OUT)
    )
    results = {"checkers": run_checkers(h, {"app": {**OPTIONS, "order": "per-key"}}, ["app"])}
    [sentence] = [e["sentence"] for e in explain(h, results) if e["anomaly"] == "reordered"]
    assert "input input:0 (key k0," in sentence and "after the output of the same key's input at offset 1" in sentence


def test_a_read_uncommitted_readers_view_is_reported_beside_and_never_judged() -> None:
    """It was given offset 1 (an aborted transaction's copy of input:0): no aborted-read, no duplicate, but reported."""
    ops = (
        inputs("input:0"),
        poll("dirty-0", [out(0, "input:0"), out(1, "input:0")]),
        poll("dirty-0", [out(1, "input:0")]),
        read(0, [out(0, "input:0")], topic=OUT),
    )
    result = judge(*ops, uncommitted_readers=["dirty-0"])
    assert result["valid"] is True
    assert result["uncommitted_view"] == {
        "readers": ["dirty-0"],
        "records": 2,
        "not-in-committed-log": 1,
        "identities-more-than-once": 1,
    }
    assert "uncommitted_view" not in judge(*ops)


# -- an input written twice by its producer ------------------------------------------------------------------------
def twice_in_input(value: str) -> list[dict]:
    """One acknowledged send whose record the input holds twice (a retry of a writer without idempotence)."""
    ops = [client_config("input", acks="all"), *send("input", 0, value, 1, topic=IN)]
    ops.append(read(0, [rec(0, value, topic=IN), rec(1, value, topic=IN)], topic=IN))
    return ops


def test_an_input_the_producer_wrote_twice_is_owed_twice_and_is_no_duplicate_of_the_app() -> None:
    """Seen in a run of the transactional example: input:1724 at app-in-5 offsets 539 and 540, carried twice."""
    result = judge(twice_in_input("input:0"), read(0, [out(0, "input:0"), out(1, "input:0")], topic=OUT))
    assert result["valid"] is True and result["counts"]["input-duplicates"] == 1


def test_more_outputs_than_the_inputs_copies_is_a_duplicate_and_fewer_is_a_loss() -> None:
    three = judge(twice_in_input("input:0"), read(0, [out(i, "input:0") for i in range(3)], topic=OUT))
    assert three["violations"] == ["duplicate"] and three["counts"]["duplicate-copies"] == 1
    assert three["examples"]["duplicate"][0]["input_copies"] == 2
    one = judge(twice_in_input("input:0"), read(0, [out(0, "input:0")], topic=OUT))
    assert one["violations"] == ["lost"] and one["examples"]["lost"][0]["input_copies"] == 2
