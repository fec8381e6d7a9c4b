"""Generated runs: a sink built faithfully from the ledger checks valid; one mutation, and its anomaly is flagged.

The model is a ledger of purchases over a few minutes and products, each at its own (partition,
offset), some malformed records, and the sink a pipeline in update mode writes for it: purchases
arrive in some order, split into micro-batches; each batch writes, for every key it touched, the
key's cumulative total so far. Sometimes the last batch is written again under a later id.
"""

from __future__ import annotations

import tempfile
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from failsafe.checkers.pipeline.sales import ANOMALIES, check_sales, current_totals
from failsafe.pipeline.sink import read_sales_rows
from tests.unit.test_sales_checker import ledger, letters, malformed, sink, total

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
PRODUCTS = ("CS01", "SF05", "SC02", "IS03")
T0 = datetime(2024, 8, 25, 13, 22)


@dataclass
class Run:
    purchases: list[dict]
    malformed: list[tuple[int, int]]
    sink_rows: list[dict]  # every cumulative row written, with its batch_id
    dead_letters: list[tuple[int, int]]

    def check(self) -> dict:
        return check_sales(
            ledger(*self.purchases), malformed(*self.malformed), sink(*self.sink_rows), letters(*self.dead_letters)
        )

    def current(self) -> dict[tuple[int, str], dict]:
        """The current total of each (minute, product), as rows one can change and give back to the checker."""
        rows = current_totals(sink(*self.sink_rows)).to_dicts()
        return {
            ((row["window_start"].replace(tzinfo=None) - T0) // timedelta(minutes=1), row["product_id"]): row
            for row in rows
        }


def _minute(purchase: dict) -> int:
    return int((purchase["transaction_time"] - T0).total_seconds() // 60)


@st.composite
def runs(draw: st.DrawFn) -> Run:
    next_offset: dict[int, int] = defaultdict(int)

    def position() -> tuple[int, int]:
        partition = draw(st.integers(0, 2))
        next_offset[partition] += 1
        return partition, next_offset[partition] - 1

    purchases = []
    for _ in range(draw(st.integers(0, 14))):
        partition, offset = position()
        micros = draw(st.integers(0, 3 * 60 * 1_000_000 - 1))
        purchases.append(
            {
                "transaction_id": f"{partition}-{offset}",
                "transaction_time": T0 + timedelta(microseconds=micros),
                "product_id": draw(st.sampled_from(PRODUCTS)),
                "quantity": draw(st.integers(1, 4)),
                "is_member": draw(st.booleans()),
                "total_purchase_cents": draw(st.integers(1, 9_999)),
                "partition": partition,
                "offset": offset,
            }
        )
    bad = [position() for _ in range(draw(st.integers(0, 3)))]
    arrival = draw(st.permutations(purchases))
    running: dict[tuple[int, str], list] = defaultdict(lambda: [0, 0, Decimal("0.00"), 0])
    rows: list[dict] = []
    batch_id, start = draw(st.integers(0, 3)), 0
    while start < len(arrival):
        size = draw(st.integers(1, 4))
        touched = []
        for purchase in arrival[start : start + size]:
            key = (_minute(purchase), purchase["product_id"])
            totals = running[key]
            totals[0] += 1
            totals[1] += purchase["quantity"]
            totals[2] += Decimal(purchase["total_purchase_cents"]).scaleb(-2)
            totals[3] += purchase["is_member"]
            touched.append(key)
        for minute, product in dict.fromkeys(touched):
            purchases_, quantity, revenue, members = running[(minute, product)]
            rows.append(total(minute, product, purchases_, quantity, str(revenue), members, batch_id=batch_id))
        start += size
        batch_id += draw(st.integers(1, 3))
    if rows and draw(st.booleans()):
        last = max(row["batch_id"] for row in rows)
        rows += [{**row, "batch_id": batch_id} for row in rows if row["batch_id"] == last]
    return Run(purchases, bad, rows, draw(st.permutations(bad)))


def _only(result: dict, **expected: int) -> None:
    found = {name: result["counts"][name] for name in ANOMALIES if result["counts"][name]}
    assert result["valid"] is False and found == expected, result


@SETTINGS
@given(runs())
def test_a_faithful_sink_is_valid(run: Run) -> None:
    result = run.check()
    assert result["valid"] is True, result
    assert result["totals"]["ledger"] == result["totals"]["sink"]
    assert result["totals"]["sink"]["purchases"] == len(run.purchases)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(runs())
def test_the_sink_read_back_from_parquet_is_the_same_verdict(run: Run) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        frame = sink(*run.sink_rows)
        for (batch_id,), rows in frame.group_by("batch_id"):
            directory = Path(tmp) / "sales_by_product" / f"batch_id={batch_id:012d}"
            directory.mkdir(parents=True)
            rows.write_parquet(directory / "part-00000.parquet")
        read = read_sales_rows(tmp)
    # The reader gives back every row written, each with its batch, and the checker's verdict on them is the same.
    columns = list(frame.columns)
    assert read.select(columns).sort(columns).equals(frame.sort(columns))
    result = check_sales(ledger(*run.purchases), malformed(*run.malformed), read, letters(*run.dead_letters))
    assert result == run.check() and result["valid"] is True, result


@SETTINGS
@given(runs(), st.data())
def test_a_purchase_dropped_from_the_sink_is_lost(run: Run, data: st.DataObject) -> None:
    assume(run.purchases)
    dropped = data.draw(st.sampled_from(run.purchases))
    current = run.current()
    key = (_minute(dropped), dropped["product_id"])
    row = current[key]
    row["purchases"] -= 1
    row["quantity"] -= dropped["quantity"]
    row["revenue"] -= Decimal(dropped["total_purchase_cents"]).scaleb(-2)
    row["member_purchases"] -= dropped["is_member"]
    if row["purchases"] == 0:
        del current[key]
    run.sink_rows = list(current.values())
    result = run.check()
    _only(result, **({"undercounted": 1} if key in current else {"missing_windows": 1}))
    assert result["counts"]["lost_purchases"] == 1 and result["counts"]["extra_purchases"] == 0


@SETTINGS
@given(runs(), st.data())
def test_a_purchase_counted_twice_is_overcounted(run: Run, data: st.DataObject) -> None:
    assume(run.purchases)
    twice = data.draw(st.sampled_from(run.purchases))
    current = run.current()
    row = current[(_minute(twice), twice["product_id"])]
    row["purchases"] += 1
    row["quantity"] += twice["quantity"]
    row["revenue"] += Decimal(twice["total_purchase_cents"]).scaleb(-2)
    run.sink_rows = list(current.values())
    result = run.check()
    _only(result, overcounted=1)
    assert result["counts"]["extra_purchases"] == 1


@SETTINGS
@given(runs(), st.integers(0, 2), st.integers(1, 999))
def test_a_purchase_the_ledger_never_had_is_unexpected(run: Run, minute: int, cents: int) -> None:
    run.sink_rows.append(total(minute, "IS09", 1, 1, str(Decimal(cents).scaleb(-2)), batch_id=10_000))
    _only(run.check(), unexpected_windows=1)


@SETTINGS
@given(runs(), st.data())
def test_a_dead_letter_dropped_is_missing(run: Run, data: st.DataObject) -> None:
    assume(run.dead_letters)
    dropped = data.draw(st.sampled_from(run.dead_letters))
    run.dead_letters = [position for position in run.dead_letters if position != dropped]
    result = run.check()
    _only(result, dead_letters_missing=1)
    assert result["examples"]["dead_letters_missing"][0]["offset"] == dropped[1]


@SETTINGS
@given(runs(), st.data())
def test_a_dead_letter_written_twice_is_duplicated(run: Run, data: st.DataObject) -> None:
    assume(run.dead_letters)
    again = data.draw(st.sampled_from(run.dead_letters))
    run.dead_letters = [*run.dead_letters, again]
    result = run.check()
    _only(result, dead_letters_duplicated=1)
    assert result["examples"]["dead_letters_duplicated"] == [{"partition": again[0], "offset": again[1], "copies": 2}]


@SETTINGS
@given(runs(), st.data())
def test_a_purchase_dead_lettered_is_unexpected(run: Run, data: st.DataObject) -> None:
    assume(run.purchases)
    purchase = data.draw(st.sampled_from(run.purchases))
    run.dead_letters = [*run.dead_letters, (purchase["partition"], purchase["offset"])]
    result = run.check()
    _only(result, dead_letters_unexpected=1)
    assert result["examples"]["dead_letters_unexpected"][0]["is_purchase"] is True
