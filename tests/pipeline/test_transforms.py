"""The pure transforms on small static frames of hand-written Kafka records."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from pyspark.sql import Row
from pyspark.testing import assertDataFrameEqual

from failsafe.pipeline.schema import DEAD_LETTER_COLUMNS, PURCHASE_SCHEMA, SALES_BY_PRODUCT_COLUMNS
from failsafe.pipeline.transforms import (
    dead_letters,
    parse_products,
    parse_purchases,
    revenue_by_category,
    sales_by_product,
    to_kafka_records,
    valid_purchases,
    with_products,
)

# pyspark's collect() leaves its result socket for the garbage collector to close (pyspark/util.py
# _create_local_socket): a ResourceWarning, an error under this project's warning filter.
pytestmark = [pytest.mark.spark, pytest.mark.filterwarnings("ignore:unclosed <socket.socket:ResourceWarning")]

PRODUCTS = [
    {
        "product_id": "SF05",
        "category": "Superfoods Smoothies",
        "name": "Mango Magic",
        "size": "24 oz",
        "price": 5.99,
        "cogs": 1.5,
    },
    {
        "product_id": "SC02",
        "category": "Supercharged Smoothies",
        "name": "Power Punch",
        "size": "20 oz",
        "price": 5.49,
        "cogs": 1.4,
    },
    {
        "product_id": "CS01",
        "category": "Classic Smoothies",
        "name": "Berry Blast",
        "size": "24 oz",
        "price": 5.99,
        "cogs": 1.2,
    },
]


def purchase(**fields: object) -> dict:
    """Seed 003's first example (23.94), with fields replaced; a field given as ... is left out."""
    record = {
        "transaction_time": "2024-08-25 13:22:16.794118",
        "transaction_id": "1987412758660499919",
        "product_id": "SF05",
        "price": 5.99,
        "quantity": 3,
        "is_member": False,
        "member_discount": 0.0,
        "add_supplements": True,
        "supplement_price": 1.99,
        "total_purchase": 23.94,
    }
    record.update(fields)
    return {name: value for name, value in record.items() if value is not ...}


def sales(kafka_frame, values: list, products: list | None = None):
    parsed = valid_purchases(parse_purchases(kafka_frame(values)))
    return sales_by_product(
        with_products(parsed, parse_products(kafka_frame(products or PRODUCTS, topic="demo.products")))
    )


def test_valid_purchase_parses_every_field_typed_with_event_time_and_kafka_coordinates(kafka_frame, utc):
    value = purchase()
    parsed = parse_purchases(kafka_frame([value], partitions=[4], offsets=[17]))
    assert parsed.columns == [
        *PURCHASE_SCHEMA.fieldNames(),
        "event_time",
        "topic",
        "partition",
        "offset",
        "kafka_timestamp",
        "key",
        "value",
        "reason",
    ]
    expected = Row(
        transaction_time="2024-08-25 13:22:16.794118",
        transaction_id="1987412758660499919",
        product_id="SF05",
        price=Decimal("5.99"),
        quantity=3,
        is_member=False,
        member_discount=Decimal("0.00"),
        add_supplements=True,
        supplement_price=Decimal("1.99"),
        total_purchase=Decimal("23.94"),
        event_time=utc("2024-08-25 13:22:16.794118"),
        topic="demo.purchases",
        partition=4,
        offset=17,
        kafka_timestamp=utc("2024-08-25 13:30:00"),
        key="SF05",
        value=json.dumps(value),
        reason=None,
    )
    assertDataFrameEqual(parsed, [expected])
    assert {f.name: f.dataType for f in parsed.schema.fields if f.name in PURCHASE_SCHEMA.fieldNames()} == {
        f.name: f.dataType for f in PURCHASE_SCHEMA.fields
    }


def test_last_microsecond_of_a_minute_counts_in_that_minute_and_the_next_minute_starts_at_zero(kafka_frame, utc):
    values = [
        purchase(transaction_id="1", transaction_time="2024-08-25 13:22:59.999999"),
        purchase(transaction_id="2", transaction_time="2024-08-25 13:23:00.000000"),
    ]
    windows = sales(kafka_frame, values).select("window_start", "window_end", "purchases")
    assertDataFrameEqual(
        windows,
        [
            Row(window_start=utc("2024-08-25 13:22:00"), window_end=utc("2024-08-25 13:23:00"), purchases=1),
            Row(window_start=utc("2024-08-25 13:23:00"), window_end=utc("2024-08-25 13:24:00"), purchases=1),
        ],
    )


def test_member_discount_gives_member_share_and_discounted_revenue_from_the_seed_examples(kafka_frame, utc):
    values = [
        purchase(transaction_id="1"),  # 5.99 + 1.99 supplement, 3 of them, no member: 23.94
        purchase(
            transaction_id="2",
            product_id="SC02",
            price=5.49,
            quantity=1,
            is_member=True,
            member_discount=0.1,
            add_supplements=False,
            supplement_price=0.0,
            total_purchase=4.94,
        ),
        purchase(
            transaction_id="3", quantity=1, is_member=True, member_discount=0.1, total_purchase=7.18
        ),  # 7.98 * 0.9
    ]
    minute = (utc("2024-08-25 13:22:00"), utc("2024-08-25 13:23:00"))
    assertDataFrameEqual(
        sales(kafka_frame, values),
        [
            Row(*minute, "SF05", "Mango Magic", "Superfoods Smoothies", 2, 4, Decimal("31.12"), 1, 0.5),
            Row(*minute, "SC02", "Power Punch", "Supercharged Smoothies", 1, 1, Decimal("4.94"), 1, 1.0),
        ],
    )


def test_sales_by_product_has_the_contract_columns_and_types(kafka_frame):
    schema = sales(kafka_frame, [purchase()]).schema
    assert tuple(schema.fieldNames()) == SALES_BY_PRODUCT_COLUMNS
    assert [f.dataType.simpleString() for f in schema.fields] == [
        "timestamp",
        "timestamp",
        "string",
        "string",
        "string",
        "bigint",
        "bigint",
        "decimal(18,2)",
        "bigint",
        "double",
    ]


def test_category_totals_sum_the_products_of_a_category_per_window(kafka_frame, utc):
    values = [
        purchase(transaction_id="1", product_id="SF05", quantity=1, total_purchase=7.98),
        purchase(transaction_id="2", product_id="CS01", quantity=1, total_purchase=7.98),
        purchase(transaction_id="3", product_id="CS01", quantity=1, total_purchase=5.99),
        purchase(transaction_id="4", product_id="CS02", quantity=1, total_purchase=5.99),  # not in the catalogue
        purchase(
            transaction_id="5", product_id="CS01", total_purchase=1.00, transaction_time="2024-08-25 13:23:01.000000"
        ),
    ]
    categories = revenue_by_category(sales(kafka_frame, values))
    assert categories.columns == ["window_start", "window_end", "category", "purchases", "revenue"]
    first, second = ("2024-08-25 13:22:00", "2024-08-25 13:23:00"), ("2024-08-25 13:23:00", "2024-08-25 13:24:00")
    assertDataFrameEqual(
        categories,
        [
            Row(*map(utc, first), "Superfoods Smoothies", 1, Decimal("7.98")),
            Row(*map(utc, first), "Classic Smoothies", 2, Decimal("13.97")),
            Row(*map(utc, first), "unknown", 1, Decimal("5.99")),
            Row(*map(utc, second), "Classic Smoothies", 1, Decimal("1.00")),
        ],
    )


def test_product_join_names_known_products_and_marks_unknown_ones(kafka_frame):
    purchases = valid_purchases(
        parse_purchases(kafka_frame([purchase(product_id="SF05"), purchase(product_id="XX99")]))
    )
    joined = with_products(purchases, parse_products(kafka_frame(PRODUCTS, topic="demo.products")))
    assert joined.columns == [*purchases.columns, "product_name", "category"]
    assertDataFrameEqual(
        joined.select("product_id", "product_name", "category"),
        [
            Row(product_id="SF05", product_name="Mango Magic", category="Superfoods Smoothies"),
            Row(product_id="XX99", product_name="unknown", category="unknown"),
        ],
    )


DEAD = [
    ("not json at all", "not a JSON object"),
    ('{"transaction_id": "1", "product_id": "SF0', "not a JSON object"),  # truncated
    ("[1, 2, 3]", "not a JSON object"),
    ("42", "not a JSON object"),
    ("", "not a JSON object"),
    (None, "not a JSON object"),  # a tombstone on the purchases topic
    (b"\xff\xfe\x00", "not a JSON object"),  # not UTF-8
    (purchase(transaction_id=...), "missing transaction_id"),
    (purchase(transaction_id=""), "missing transaction_id"),
    (purchase(product_id=None), "missing product_id"),
    (purchase(transaction_time=...), "missing transaction_time"),
    (purchase(transaction_time="2024-08-25T13:22:16Z"), "bad transaction_time"),
    (purchase(transaction_time="2024-02-30 13:22:16.794118"), "bad transaction_time"),
    (purchase(quantity=0), "quantity not positive"),
    (purchase(quantity=-2), "quantity not positive"),
    (purchase(quantity="three"), "bad quantity"),
    (purchase(quantity=1.5), "bad quantity"),
    (purchase(is_member=...), "missing is_member"),
    (purchase(is_member="yes"), "bad is_member"),
    (purchase(add_supplements=1), "bad add_supplements"),
    (purchase(price={"amount": 5.99}), "bad price"),
    (purchase(total_purchase=...), "missing total_purchase"),
    (purchase(total_purchase="lots"), "bad total_purchase"),
    (purchase(total_purchase=1e20), "bad total_purchase"),  # overflows decimal(10,2)
]


def test_every_malformed_record_becomes_a_dead_letter_with_its_reason(kafka_frame):
    parsed = parse_purchases(kafka_frame([value for value, _ in DEAD], partitions=[2] * len(DEAD)))
    assert valid_purchases(parsed).count() == 0
    assertDataFrameEqual(
        dead_letters(parsed).select("offset", "reason"),
        [Row(offset=i, reason=reason) for i, (_, reason) in enumerate(DEAD)],
    )


def test_dead_letter_keeps_kafka_coordinates_key_and_raw_value(kafka_frame, utc):
    parsed = parse_purchases(
        kafka_frame([purchase(), "oops"], keys=["SF05", "k1"], partitions=[3, 3], offsets=[41, 42])
    )
    letters = dead_letters(parsed)
    assert tuple(letters.columns) == DEAD_LETTER_COLUMNS
    assert [f.dataType.simpleString() for f in letters.schema.fields] == [
        "string",
        "int",
        "bigint",
        "timestamp",
        "string",
        "string",
        "string",
    ]
    assertDataFrameEqual(
        letters, [Row("demo.purchases", 3, 42, utc("2024-08-25 13:30:00"), "k1", "oops", "not a JSON object")]
    )


def test_revenue_sums_decimal_totals_exactly(kafka_frame):
    values = [purchase(transaction_id=str(i), quantity=1, total_purchase=0.1 if i % 2 else 0.2) for i in range(1000)]
    revenue = sales(kafka_frame, values).select("purchases", "revenue")
    assertDataFrameEqual(revenue, [Row(purchases=1000, revenue=Decimal("150.00"))])
    assert sum([0.1, 0.2] * 500) != 150.0  # what a double would have summed


def test_latest_product_record_per_key_wins_by_partition_then_offset(kafka_frame):
    renamed = {**PRODUCTS[0], "name": "Mango Magic v2"}
    records = [renamed, PRODUCTS[0], PRODUCTS[1], {**PRODUCTS[1], "category": "Stale"}]
    products = parse_products(
        kafka_frame(records, topic="demo.products", partitions=[1, 1, 0, 0], offsets=[9, 3, 7, 2])
    )
    assertDataFrameEqual(
        products,
        [
            Row(product_id="SF05", product_name="Mango Magic v2", category="Superfoods Smoothies"),
            Row(product_id="SC02", product_name="Power Punch", category="Supercharged Smoothies"),
        ],
    )


def test_product_tombstone_removes_the_product_and_a_later_record_restores_it(kafka_frame):
    records = [PRODUCTS[0], None, PRODUCTS[1], None, PRODUCTS[1]]
    keys = ["SF05", "SF05", "SC02", "SC02", "SC02"]
    products = parse_products(kafka_frame(records, topic="demo.products", keys=keys))
    assertDataFrameEqual(
        products, [Row(product_id="SC02", product_name="Power Punch", category="Supercharged Smoothies")]
    )


def test_kafka_records_are_keyed_by_product_and_window_with_the_row_as_json(kafka_frame):
    records = to_kafka_records(
        sales(kafka_frame, [purchase(is_member=True, member_discount=0.1, total_purchase=21.55)]), 4
    )
    assert records.columns == ["key", "value"]
    (row,) = records.collect()
    assert row.key == "SF05|2024-08-25 13:22:00"
    assert json.loads(row.value) == {
        "window_start": "2024-08-25 13:22:00.000000",
        "window_end": "2024-08-25 13:23:00.000000",
        "product_id": "SF05",
        "product_name": "Mango Magic",
        "category": "Superfoods Smoothies",
        "purchases": 1,
        "quantity": 3,
        "revenue": 21.55,
        "member_purchases": 1,
        "member_share": 1.0,
        "batch_id": 4,
    }


def test_valid_purchases_and_dead_letters_parse_each_record_once(kafka_frame) -> None:
    """The filter on ``reason`` must stay above the parse: pushed below it, Spark inlined from_json once per
    checked field (37 times per record, 8x slower on a 200,000-record backlog; docs/benchmarks.md)."""
    frame = kafka_frame([{"transaction_id": "t1"}, "not json"])
    for query in (valid_purchases(parse_purchases(frame)), dead_letters(parse_purchases(frame))):
        plan = query._jdf.queryExecution().executedPlan().toString()
        assert plan.count("from_json(") == 1, plan


def test_enriched_records_are_keyed_by_transaction_with_the_product_and_the_source_offset(kafka_frame):
    from failsafe.pipeline.transforms import enriched_records

    purchases = valid_purchases(parse_purchases(kafka_frame([purchase(product_id="SF05"), "not json"])))
    records = enriched_records(with_products(purchases, parse_products(kafka_frame(PRODUCTS, topic="demo.products"))))
    (row,) = records.collect()
    value = json.loads(row.value)
    assert row.key == value["transaction_id"] == purchase()["transaction_id"]
    assert (
        value["transaction_time"] == purchase()["transaction_time"]
        and value["total_purchase"] == purchase()["total_purchase"]
    )
    assert (value["product_name"], value["category"], value["source_partition"], value["source_offset"]) == (
        "Mango Magic",
        "Superfoods Smoothies",
        0,
        0,
    )
    assert list(value)[:10] == [field.name for field in PURCHASE_SCHEMA.fields]
