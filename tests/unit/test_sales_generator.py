"""The sales generator: seed 003's record shape, its arithmetic, a realistic and deterministic stream."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections import Counter
from decimal import Decimal

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from failsafe.workloads.sales.catalogue import CATEGORIES, PRODUCTS, product
from failsafe.workloads.sales.generator import (
    BATCH_SIZE,
    ID_AT,
    MEMBER_SHARE,
    PEAK_PER_S,
    SUPPLEMENT_SHARE,
    DailyClock,
    PurchaseStream,
    daily_curve,
    format_us,
    parse_time,
    popularity,
    purchase_values,
    records_for,
    sequences_of,
    share,
    total_purchase,
    transaction_ids,
)
from failsafe.workloads.sales.inventory import Inventory

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
START = parse_time("2024-08-25 13:22:16")
MIDNIGHT = parse_time("2024-08-26 00:00:00")

# Three purchases exactly as seed 003's consumers printed them.
SEED_RECORDS = [
    '{"transaction_time": "2024-08-25 13:22:16.794118", "transaction_id": "1987412758660499919", "product_id": '
    '"SF05", "price": 5.99, "quantity": 3, "is_member": false, "member_discount": 0.0, "add_supplements": true, '
    '"supplement_price": 1.99, "total_purchase": 23.94}',
    '{"transaction_time": "2024-08-25 13:22:19.816755", "transaction_id": "8854751676730657335", "product_id": '
    '"IS02", "price": 5.49, "quantity": 1, "is_member": true, "member_discount": 0.1, "add_supplements": false, '
    '"supplement_price": 0.0, "total_purchase": 4.94}',
    '{"transaction_time": "2024-08-25 13:26:26.139792", "transaction_id": "5274818506363337719", "product_id": '
    '"SC02", "price": 5.99, "quantity": 1, "is_member": true, "member_discount": 0.1, "add_supplements": true, '
    '"supplement_price": 1.99, "total_purchase": 7.18}',
]
FIELDS = list(json.loads(SEED_RECORDS[0]))


def expected_total(record: dict) -> Decimal:
    return total_purchase(
        Decimal(str(record["price"])),
        Decimal(str(record["supplement_price"])),
        record["quantity"],
        Decimal(str(record["member_discount"])),
    )


@pytest.mark.parametrize("text", SEED_RECORDS)
def test_total_purchase_reproduces_the_seed(text: str) -> None:
    record = json.loads(text)
    assert expected_total(record) == Decimal(str(record["total_purchase"]))


@pytest.mark.parametrize(
    ("price", "supplement", "quantity", "discount", "total"),
    [
        ("5.99", "1.99", 3, "0.0", "23.94"),
        ("5.49", "0.0", 1, "0.10", "4.94"),
        ("5.99", "1.99", 1, "0.10", "7.18"),
        ("4.99", "0.0", 2, "0.0", "9.98"),
        ("5.99", "0.0", 3, "0.10", "16.17"),
        ("4.99", "0.0", 2, "0.10", "8.98"),
        ("5.99", "0.0", 1, "0.10", "5.39"),
    ],
)
def test_total_purchase_rounds_half_up_in_decimal(
    price: str, supplement: str, quantity: int, discount: str, total: str
) -> None:
    assert total_purchase(Decimal(price), Decimal(supplement), quantity, Decimal(discount)) == Decimal(total)


def test_seed_products_are_in_the_catalogue_at_the_seed_prices() -> None:
    for pid, price in (
        ("SF05", "5.99"),
        ("IS02", "5.49"),
        ("CS09", "4.99"),
        ("SC01", "5.99"),
        ("SC04", "5.99"),
        ("CS02", "4.99"),
    ):
        assert product(pid).price == Decimal(price)
    assert {p.category for p in PRODUCTS} == set(CATEGORIES.values())
    assert len({p.product_id for p in PRODUCTS}) == len(PRODUCTS) >= 25
    assert all(0 < p.cogs < p.price for p in PRODUCTS)
    assert list(json.loads(PRODUCTS[0].to_json())) == ["product_id", "category", "name", "size", "price", "cogs"]


def test_records_have_the_seed_fields_in_order_and_formatting() -> None:
    for text in purchase_values(11, 0, START, 3000):
        record = json.loads(text)
        assert list(record) == FIELDS
        # Formatted as Python's json.dumps formats the seed simulator's dicts, byte for byte.
        assert json.dumps(record) == text
        p = product(record["product_id"])
        assert record["price"] == float(p.price)
        assert record["member_discount"] == (0.1 if record["is_member"] else 0.0)
        assert record["supplement_price"] == (1.99 if record["add_supplements"] else 0.0)
        assert record["quantity"] in (1, 2, 3)
        assert Decimal(str(record["total_purchase"])) == expected_total(record)
        assert (
            len(record["transaction_time"]) == 26
            and format_us(parse_time(record["transaction_time"])) == record["transaction_time"]
        )
        assert (
            0 <= int(record["transaction_id"]) < 2**63
            and str(int(record["transaction_id"])) == record["transaction_id"]
        )


def test_batch_columns_agree_with_the_json() -> None:
    stream = PurchaseStream(5, 1, START)
    batch = stream.next_batch()
    for j in (0, 1, 2, 100, BATCH_SIZE - 1):
        record = json.loads(batch.values[j])
        assert record["transaction_id"] == str(batch.transaction_id[j])
        assert record["transaction_time"] == format_us(int(batch.time_us[j]))
        assert record["product_id"] == stream.product_ids[batch.product[j]] == batch.keys[j]
        assert record["quantity"] == batch.quantity[j] and record["is_member"] == batch.is_member[j]
        assert Decimal(str(record["total_purchase"])) * 100 == int(batch.total_cents[j])


def test_same_seed_start_and_instances_give_the_same_bytes() -> None:
    first = [purchase_values(42, i, START, 5000) for i in range(3)]
    again = [purchase_values(42, i, START, 5000) for i in range(3)]
    assert first == again
    assert purchase_values(43, 0, START, 5000) != first[0]
    assert first[1] != first[0]
    assert purchase_values(42, 0, START + 1_000_000, 5000) != first[0]


def _digest_in_a_fresh_interpreter(hash_seed: str) -> str:
    code = (
        "import hashlib; from failsafe.workloads.sales.generator import purchase_values, parse_time; "
        "print(hashlib.sha256(''.join(purchase_values(9, 2, parse_time('2024-08-25 13:22:16'), "
        "10000)).encode()).hexdigest())"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONHASHSEED": hash_seed},
    )
    return out.stdout.strip()


def test_streams_do_not_depend_on_the_interpreter_run() -> None:
    here = hashlib.sha256("".join(purchase_values(9, 2, START, 10000)).encode()).hexdigest()
    assert _digest_in_a_fresh_interpreter("1") == _digest_in_a_fresh_interpreter("2") == here


@SETTINGS
@given(seed=st.integers(0, 2**40), instance=st.integers(0, 98), short=st.integers(1, 300), extra=st.integers(1, 6000))
def test_a_shorter_run_is_a_prefix_of_a_longer_one(seed: int, instance: int, short: int, extra: int) -> None:
    assert purchase_values(seed, instance, START, short + extra)[:short] == purchase_values(
        seed, instance, START, short
    )


@SETTINGS
@given(
    seed=st.integers(0, 2**63 - 1), instance=st.integers(0, 98), seqs=st.lists(st.integers(0, 2**47 - 1), max_size=50)
)
def test_sequences_of_inverts_transaction_ids(seed: int, instance: int, seqs: list[int]) -> None:
    ids = transaction_ids(seed, instance, np.array(seqs, dtype=np.int64))
    assert sequences_of(seed, instance, ids).tolist() == seqs
    if seqs:
        with pytest.raises(ValueError):
            sequences_of(seed, (instance + 1) % 99, ids)


def test_the_transaction_id_is_where_the_delivery_callback_reads_it() -> None:
    for value in purchase_values(12, 3, START, 500):
        assert value[ID_AT : value.index('"', ID_AT)] == json.loads(value)["transaction_id"]


def test_transaction_ids_are_unique_across_instances() -> None:
    ids = [json.loads(v)["transaction_id"] for i in range(4) for v in purchase_values(8, i, START, 10_000)]
    assert len(set(ids)) == len(ids) == 40_000


@SETTINGS
@given(
    seed=st.integers(0, 2**63 - 1),
    pairs=st.sets(st.tuples(st.integers(0, 98), st.integers(0, 2**47 - 1)), min_size=2, max_size=200),
)
def test_transaction_ids_are_a_bijection_of_instance_and_sequence(seed: int, pairs: set[tuple[int, int]]) -> None:
    ids = [int(transaction_ids(seed, instance, np.array([seq], dtype=np.int64))[0]) for instance, seq in pairs]
    assert len(set(ids)) == len(pairs)
    assert all(0 <= i < 2**63 for i in ids)


def test_popularity_is_skewed_and_seeded() -> None:
    counts = Counter(json.loads(v)["product_id"] for v in purchase_values(3, 0, START, 60_000))
    ranked = [n for _, n in counts.most_common()]
    assert len(ranked) == len(PRODUCTS)  # every product sells
    assert ranked[0] > 4 * ranked[len(ranked) // 2]  # Zipf-like: the favourite far above the median
    assert ranked[0] > 15 * ranked[-1]
    favourite = PRODUCTS[int(np.argmax(popularity(3)))].product_id
    assert counts.most_common(1)[0][0] == favourite
    assert {int(np.argmax(popularity(s))) for s in range(12)} != {
        int(np.argmax(popularity(3)))
    }  # the seed picks the favourite
    # All instances of a run agree on what sells best.
    assert (
        Counter(json.loads(v)["product_id"] for v in purchase_values(3, 5, START, 20_000)).most_common(1)[0][0]
        == favourite
    )


def test_members_supplements_and_quantities() -> None:
    records = [json.loads(v) for v in purchase_values(17, 0, START, 40_000)]
    members = sum(r["is_member"] for r in records) / len(records)
    supplements = sum(r["add_supplements"] for r in records) / len(records)
    assert abs(members - MEMBER_SHARE) < 0.015 and abs(supplements - SUPPLEMENT_SHARE) < 0.015
    quantities = Counter(r["quantity"] for r in records)
    assert quantities[1] > 2.5 * quantities[2] > quantities[3] > 0
    member = next(r for r in records if r["is_member"] and not r["add_supplements"])
    assert member["total_purchase"] == float(
        total_purchase(Decimal(str(member["price"])), Decimal(0), member["quantity"], Decimal("0.1"))
    )


def test_daily_curve_is_quiet_at_night_and_peaks_at_lunch_and_early_evening() -> None:
    curve = daily_curve(np.arange(0, 24, 0.25))
    hour = lambda h: float(curve[int(h * 4)])  # noqa: E731
    assert max(curve) == pytest.approx(1.0, abs=0.01) and 12 <= float(np.argmax(curve)) / 4 <= 13
    assert hour(3) < 0.05 and hour(12.5) > 20 * hour(3)
    assert hour(18) > hour(15.5) and hour(18) > hour(21.5)


def test_event_times_follow_the_daily_curve() -> None:
    # A bit more than one simulated day from midnight.
    times = [parse_time(json.loads(v)["transaction_time"]) for v in purchase_values(21, 0, MIDNIGHT, 60_000)]
    assert times == sorted(times) and times[0] >= MIDNIGHT
    hours = Counter(((t - MIDNIGHT) // 3_600_000_000) for t in times if t - MIDNIGHT < 86_400_000_000)
    assert hours[12] > 15 * max(hours[3], 1)
    assert hours[18] > 1.3 * hours[15]
    # Counts per hour agree with the intensity the curve asks for.
    for h in (3, 9, 12, 18):
        expected = float(np.mean(daily_curve(h + (np.arange(60) + 0.5) / 60))) * PEAK_PER_S * 3600
        assert abs(hours[h] - expected) < 5 * expected**0.5 + 5, (h, hours[h], expected)


def test_clock_crosses_midnight_and_continues_across_batches() -> None:
    clock = DailyClock(parse_time("2024-08-25 23:59:50"))
    first = clock.advance(np.full(200, 0.01))
    second = clock.advance(np.full(200, 0.01))
    joined = np.concatenate((first, second))
    assert (np.diff(joined) >= 0).all()
    assert format_us(int(joined[-1])).startswith("2024-08-26 00:")
    values = purchase_values(2, 0, parse_time("2024-08-25 23:59:00"), 2000)
    assert {json.loads(v)["transaction_time"][:10] for v in values} == {"2024-08-25", "2024-08-26"}


def test_malformed_records_every_nth_and_counted_apart() -> None:
    values = purchase_values(4, 0, START, 100, malformed_every=7)
    clean = purchase_values(4, 0, START, 100)
    for n, (value, good) in enumerate(zip(values, clean, strict=True), start=1):
        if n % 7 == 0:
            with pytest.raises(json.JSONDecodeError):
                json.loads(value)
            assert value != good
        else:
            assert value == good
    assert records_for(100, 7) == 116 and sum(1 for n in range(1, 117) if n % 7) == 100


@SETTINGS
@given(purchases=st.integers(0, 5000), every=st.sampled_from([0, 2, 3, 5, 10, 1000]))
def test_records_for_carries_exactly_that_many_purchases(purchases: int, every: int) -> None:
    records = records_for(purchases, every)
    valid = sum(1 for n in range(1, records + 1) if not every or n % every)
    assert valid == purchases
    assert records == 0 or not every or records % every  # the last record is a purchase


@SETTINGS
@given(total=st.integers(0, 10**7), instances=st.integers(1, 99))
def test_share_splits_the_count_exactly(total: int, instances: int) -> None:
    parts = [share(total, instances, i) for i in range(instances)]
    assert sum(parts) == total and max(parts) - min(parts) <= 1


def test_parse_time_refuses_what_is_not_a_time() -> None:
    with pytest.raises(ValueError):
        parse_time("yesterday")
    assert format_us(parse_time("2024-08-25 13:22:16")) == "2024-08-25 13:22:16.000000"


def _sequential_restocks(product_ids: list[str], sales: list[tuple[int, int]]) -> list[tuple[int, str, int, int]]:
    """The obvious model: one purchase at a time."""
    inv = Inventory(product_ids)
    level = {p: inv.initial_level for p in range(len(product_ids))}
    out = []
    for position, (p, quantity) in enumerate(sales):
        level[p] -= quantity
        if level[p] <= inv.reorder_level:
            out.append((position, product_ids[p], level[p], level[p] + inv.restock_quantity))
            level[p] += inv.restock_quantity
    return out


@SETTINGS
@given(
    sales=st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3)), max_size=600),
    cuts=st.lists(st.integers(0, 600), max_size=4),
)
def test_batched_restocks_equal_the_sequential_model(sales: list[tuple[int, int]], cuts: list[int]) -> None:
    ids = ["CS01", "CS02", "SF01", "SC01"]
    inv = Inventory(ids)
    got = []
    bounds = sorted({0, len(sales), *[c for c in cuts if c < len(sales)]})
    for lo, hi in zip(bounds, bounds[1:], strict=False):
        part = sales[lo:hi]
        product = np.array([p for p, _ in part], dtype=np.int16)
        quantity = np.array([q for _, q in part], dtype=np.int8)
        for position, r in inv.sell(product, quantity, np.arange(lo, hi, dtype=np.int64)):
            assert r.stock_quantity == inv.restock_quantity and r.event_time_us == lo + position
            got.append((lo + position, r.product_id, r.existing_level, r.new_level))
    assert got == _sequential_restocks(ids, sales)
    assert all(level > inv.reorder_level for level in inv.levels().values())


def test_restock_json_has_the_contract_fields() -> None:
    inv = Inventory(["SF05"])
    opening = inv.opening(START)
    assert json.loads(opening[0].to_json()) == {
        "event_time": "2024-08-25 13:22:16.000000",
        "product_id": "SF05",
        "existing_level": 0,
        "stock_quantity": 60,
        "new_level": 60,
    }


def test_the_wall_clock_stamps_each_record_with_its_send_time_and_keeps_the_purchases() -> None:
    from failsafe.workloads.sales.generator import WallClock

    now = iter([1_700_000_000_000_000, 1_700_000_999_000_000])
    wall = PurchaseStream(5, 1, START, clock=WallClock(200.0, lambda: next(now)))
    accelerated = PurchaseStream(5, 1, START)
    for _ in range(2):
        w, a = wall.next_batch(), accelerated.next_batch()
        # The same seed gives the same purchases under either clock: only their times differ.
        assert np.array_equal(w.transaction_id, a.transaction_id) and np.array_equal(w.product, a.product)
        assert np.array_equal(w.total_cents, a.total_cents) and not np.array_equal(w.time_us, a.time_us)
    # At 200/s record k is due 5 ms after record k-1, from the first batch's time, whatever the clock says later.
    assert w.first_seq == BATCH_SIZE and w.time_us[0] == 1_700_000_000_000_000 + BATCH_SIZE * 5_000
    assert np.all(np.diff(w.time_us) == 5_000)
    assert json.loads(w.values[1])["transaction_time"] == format_us(int(w.time_us[1]))


def test_the_wall_clock_as_fast_as_possible_stamps_a_batch_with_its_making_and_never_goes_back() -> None:
    from failsafe.workloads.sales.generator import WallClock

    times = iter([2_000_000, 1_000_000])  # the system clock stepped back between batches
    clock = WallClock(0.0, lambda: next(times))
    first, second = clock.advance(np.ones(3)), clock.advance(np.ones(2))
    assert first.tolist() == [2_000_000] * 3 and second.tolist() == [2_000_000] * 2
