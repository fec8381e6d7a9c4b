"""checkers.enriched on hand-written topics: loss always fails it, copies only when the user asks for exactly once."""

from __future__ import annotations

import json

import polars as pl
import pytest

from failsafe.checkers import LOSS_VIOLATIONS
from failsafe.checkers.common import CheckerOptionError
from failsafe.checkers.pipeline import enriched
from failsafe.history.model import LOG_FAILURES_SCHEMA, LOG_SCHEMA
from failsafe.scenarios.kinds.pipeline.enriched import replayed_batches

TOPIC = "demo.purchases-enriched"


def log(*records: tuple[int, int, str, int, int]) -> pl.DataFrame:
    """(partition, offset, transaction_id, source_partition, source_offset) -> the topic as read back."""
    rows = [
        {
            "topic": TOPIC,
            "partition": p,
            "offset": o,
            "key": t,
            "value": json.dumps(
                {"transaction_id": t, "product_name": "x", "source_partition": sp, "source_offset": so}
            ),
        }
        for p, o, t, sp, so in records
    ]
    return pl.DataFrame(rows, schema=LOG_SCHEMA)


def acked(*ids: str) -> pl.DataFrame:
    return pl.DataFrame({"transaction_id": list(ids)}, schema={"transaction_id": pl.String})


NO_FAILURES = pl.DataFrame(schema=LOG_FAILURES_SCHEMA)


def test_every_purchase_once_is_valid() -> None:
    r = enriched.check(acked("a", "b"), log((0, 0, "a", 0, 0), (1, 0, "b", 1, 0)), NO_FAILURES)
    assert (
        r["valid"] is True
        and r["counts"]["records"] == 2
        and r["counts"]["duplicate"] == 0
        and r["counts"]["missing"] == 0
    )


def test_an_acknowledged_purchase_the_topic_lacks_is_a_loss_whatever_the_options() -> None:
    r = enriched.check(acked("a", "b"), log((0, 0, "a", 0, 0)), NO_FAILURES, options={"allow_duplicates": True})
    assert (
        r["valid"] is False and r["violations"] == ["missing"] and r["examples"]["missing"] == [{"transaction_id": "b"}]
    )
    assert "enriched.missing" in LOSS_VIOLATIONS


def test_a_copy_of_a_source_record_is_counted_and_fails_only_without_allow_duplicates() -> None:
    topic = log((0, 0, "a", 0, 0), (0, 1, "b", 0, 1), (3, 7, "b", 0, 1), (4, 2, "b", 0, 1))
    allowed = enriched.check(acked("a", "b"), topic, NO_FAILURES)
    assert (
        allowed["valid"] is True
        and allowed["counts"]["duplicate"] == 2
        and allowed["counts"]["duplicated-sources"] == 1
    )
    [example] = allowed["examples"]["duplicate"]
    assert example["copies"] == 3 and sorted(example["offsets"]) == [1, 2, 7]
    strict = enriched.check(acked("a", "b"), topic, NO_FAILURES, options={"allow_duplicates": False})
    assert strict["valid"] is False and strict["violations"] == ["duplicate"]


def test_a_purchase_the_simulator_sent_twice_is_two_sources_not_a_copy() -> None:
    r = enriched.check(
        acked("a"), log((0, 0, "a", 0, 0), (1, 0, "a", 0, 1)), NO_FAILURES, options={"allow_duplicates": False}
    )
    assert r["valid"] is True and r["counts"]["duplicate"] == 0


def test_copies_are_attributed_to_the_batch_run_first_after_a_restart() -> None:
    topic = log((0, 0, "a", 0, 5), (0, 1, "a", 0, 5), (1, 0, "b", 1, 9), (1, 1, "b", 1, 9))
    replayed = [
        {"batch_id": 4, "start": {0: 3, 1: 9}, "end": {"0": 6, "1": 9}}
    ]  # keys as JSON (strings) or as ints, alike
    r = enriched.check(acked("a", "b"), topic, NO_FAILURES, replayed)
    assert (
        r["counts"]["duplicate"] == 2 and r["counts"]["duplicate_in_replayed_batch"] == 1
    )  # partition 1 read nothing in batch 4


def test_a_partition_not_read_to_its_end_or_a_topic_never_read_back_leaves_the_verdict_unknown() -> None:
    # A purchase's partition is its key's hash, which the ledger does not keep: what looks missing may be in the unread
    # partition.
    failures = pl.DataFrame([{"topic": TOPIC, "partition": 2, "error": "timed out"}], schema=LOG_FAILURES_SCHEMA)
    assert enriched.check(acked("a"), log((0, 0, "a", 0, 0)), failures)["valid"] == "unknown"
    partial = enriched.check(acked("a", "z"), log((0, 0, "a", 0, 0)), failures)
    assert partial["valid"] == "unknown" and partial["counts"]["missing"] == 1 and partial["violations"] == []
    never = enriched.check(acked("a"), log(), NO_FAILURES, read_back=False)
    assert never["valid"] == "unknown" and never["reasons"] == ["the enriched topic was not read back"]
    assert enriched.check(acked("a"), log(), NO_FAILURES)["valid"] is False  # read back whole and empty: lost


def test_records_that_name_no_source_are_not_copies_of_each_other() -> None:
    topic = pl.concat(
        [
            log((0, 0, "a", 0, 0)),
            pl.DataFrame(
                [{"topic": TOPIC, "partition": 1, "offset": o, "key": "b", "value": "not json"} for o in (0, 1)],
                schema=LOG_SCHEMA,
            ),
        ]
    )
    r = enriched.check(acked("a", "b"), topic, NO_FAILURES, options={"allow_duplicates": False})
    assert r["valid"] == "unknown" and r["counts"]["duplicate"] == 0 and r["counts"]["unparseable"] == 2


def test_records_of_purchases_never_acknowledged_are_counted_not_judged() -> None:
    r = enriched.check(acked("a"), log((0, 0, "a", 0, 0), (0, 1, "x", 0, 1)), NO_FAILURES)
    assert r["valid"] is True and r["counts"]["not-acknowledged"] == 1


def test_an_unknown_option_is_refused() -> None:
    with pytest.raises(CheckerOptionError):
        enriched.check(acked(), log(), NO_FAILURES, options={"exactly_once": True})


def line(batch: int, at: str | None, rows: int, end: dict, start: dict | None = None) -> dict:
    return {
        "query": "enriched-purchases",
        "batch_id": batch,
        "timestamp": at,
        "num_input_rows": rows,
        "end_offsets": {"demo.purchases": end},
        **({"start_offsets": {"demo.purchases": start}} if start is not None else {}),
    }


RESTART_NS = 1_795_687_210 * 1_000_000_000  # 2026-11-26T10:00:10Z


def test_the_replayed_batch_is_the_first_that_read_something_after_the_restart() -> None:
    progress = [
        line(0, "2026-11-26T10:00:00.000Z", 0, {"0": 0}),
        line(1, "2026-11-26T10:00:02.000Z", 10, {"0": 10}),
        line(2, "2026-11-26T10:00:04.000Z", 10, {"0": 20}),
        line(3, "2026-11-26T10:00:12.500Z", 30, {"0": 50}),
        {
            "query": "sales-by-product",
            "batch_id": 9,
            "timestamp": "2026-11-26T10:00:13.000Z",
            "num_input_rows": 5,
            "end_offsets": {"demo.purchases": {"0": 50}},
        },
    ]
    assert replayed_batches(progress, [RESTART_NS]) == [{"batch_id": 3, "start": {"0": 20}, "end": {"0": 50}}]
    assert replayed_batches(progress, []) == []


def test_spark_s_own_start_offsets_win_over_the_batch_logged_before_and_bad_lines_are_left_out() -> None:
    # Batch 2's line was never logged (the driver died first): Spark's startOffset says where batch 3 began.
    progress = [
        line(1, "2026-11-26T10:00:02.000Z", 10, {"0": 10}, {"0": 0}),
        line(3, "2026-11-26T10:00:12.500Z", 30, {"0": 50}, {"0": 20}),
        {"query": "enriched-purchases", "batch_id": None, "timestamp": None},
        line(4, None, 3, {"0": 53}),
    ]
    assert replayed_batches(progress, [RESTART_NS]) == [{"batch_id": 3, "start": {"0": 20}, "end": {"0": 50}}]
