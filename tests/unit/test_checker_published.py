"""checkers.pipeline.published on hand-written reads of the results topic: what a read_committed reader keeps."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import polars as pl

from failsafe.checkers.pipeline.published import check
from failsafe.workloads.sales.ledger import PURCHASES_SCHEMA

T0 = datetime(2024, 8, 25, 13, 22, tzinfo=UTC)
LOG_SCHEMA = {"partition": pl.Int64, "offset": pl.Int64, "key": pl.String, "value": pl.String}
FAILURE_SCHEMA = {"topic": pl.String, "partition": pl.Int64, "error": pl.String}


def ledger(*seconds: float, product: str = "SF05") -> pl.DataFrame:
    rows = [
        {
            "transaction_id": f"t{i}",
            "transaction_time": (T0 + timedelta(seconds=s)).replace(tzinfo=None),
            "product_id": product,
            "quantity": 1,
            "is_member": False,
            "total_purchase_cents": 599,
            "partition": 0,
            "offset": i,
        }
        for i, s in enumerate(seconds)
    ]
    return pl.DataFrame(rows, schema=PURCHASES_SCHEMA)


def total(purchases: int, batch: int, product: str = "SF05") -> tuple[str, str]:
    value = {
        "window_start": "2024-08-25 13:22:00.000000",
        "window_end": "2024-08-25 13:23:00.000000",
        "product_id": product,
        "product_name": "Mango Magic",
        "category": "Superfoods Smoothies",
        "purchases": purchases,
        "quantity": purchases,
        "revenue": round(5.99 * purchases, 2),
        "member_purchases": 0,
        "member_share": 0.0,
        "batch_id": batch,
    }
    return f"{product}|2024-08-25 13:22:00", json.dumps(value)


def log(*records: tuple[str, str], partition: int = 1) -> pl.DataFrame:
    rows = [{"partition": partition, "offset": i, "key": k, "value": v} for i, (k, v) in enumerate(records)]
    return pl.DataFrame(rows, schema=LOG_SCHEMA)


NO_FAILURES = pl.DataFrame(schema=FAILURE_SCHEMA)


def test_each_batch_once_with_the_ledgers_total_is_valid() -> None:
    result = check(ledger(1, 2, 3), log(total(2, 4), total(3, 5)), NO_FAILURES, publish="exactly-once")
    assert result["valid"] is True, result
    assert result["counts"]["records"] == 2 and result["counts"]["duplicate"] == 0


def test_a_batch_published_twice_is_invalid_only_when_exactly_once_was_promised() -> None:
    read = log(total(2, 4), total(2, 4), total(3, 5))
    strict = check(ledger(1, 2, 3), read, NO_FAILURES, publish="exactly-once")
    assert strict["valid"] is False and strict["violations"] == ["duplicate"]
    assert strict["counts"]["duplicate"] == 1 and strict["examples"]["duplicate"][0]["offsets"] == [0, 1]
    loose = check(ledger(1, 2, 3), read, NO_FAILURES, publish="at-least-once")
    assert loose["valid"] is True and loose["counts"]["duplicate"] == 1 and loose["allow_duplicates"]


def test_a_lost_total_is_invalid_in_either_mode() -> None:
    for publish in ("exactly-once", "at-least-once"):
        result = check(ledger(1, 2, 3), log(total(2, 4)), NO_FAILURES, publish=publish)
        assert result["valid"] is False and result["violations"] == ["undercounted"]
        assert result["counts"]["lost_purchases"] == 1
        missing = check(ledger(1, 2, 3), log(), NO_FAILURES, publish=publish)
        assert missing["valid"] is False and missing["violations"] == ["missing_windows"]


def test_a_stale_total_read_last_is_invalid() -> None:
    result = check(ledger(1, 2, 3), log(total(3, 5), total(2, 4)), NO_FAILURES, publish="at-least-once")
    assert result["valid"] is False and "stale_last" in result["violations"]
    assert result["examples"]["stale_last"][0]["newest_batch"] == 5


def test_a_partition_not_read_to_its_end_leaves_a_shortfall_unknown_but_not_a_copy() -> None:
    failures = pl.DataFrame(
        [{"topic": "demo.sales-by-product", "partition": 3, "error": "timed out"}], schema=FAILURE_SCHEMA
    )
    short = check(ledger(1, 2, 3), log(total(2, 4)), failures, publish="exactly-once")
    assert short["valid"] == "unknown" and short["counts"]["lost_purchases"] == 1
    copied = check(ledger(1, 2), log(total(2, 4), total(2, 4)), failures, publish="exactly-once")
    assert copied["valid"] is False and copied["violations"] == ["duplicate"]
    unread = check(ledger(1, 2), log(total(2, 4)), NO_FAILURES, publish="exactly-once", read_back=False)
    assert unread["valid"] == "unknown"


def test_a_value_that_names_no_batch_is_unknown_and_the_read_uncommitted_view_is_reported() -> None:
    key, value = total(2, 4)
    broken = log((key, value.replace('"batch_id": 4', '"batch": 4')))
    seen = {"records": 4, "duplicate": 2, "aborted": 2}
    result = check(ledger(1, 2), broken, NO_FAILURES, publish="exactly-once", uncommitted=seen)
    assert result["valid"] == "unknown" and result["counts"]["unparseable"] == 1
    assert result["uncommitted"] == seen
