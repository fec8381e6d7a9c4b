"""The sales checker on ledgers and sinks of three to six hand-written rows: one test per anomaly, and clean ones."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import polars as pl

from failsafe.checkers.pipeline.sales import ANOMALIES, CATEGORY_BY_PREFIX, check_sales, current_totals

T0 = datetime(2024, 8, 25, 13, 22)
PURCHASE_SCHEMA = {
    "transaction_id": pl.String,
    "transaction_time": pl.Datetime("us"),
    "product_id": pl.String,
    "quantity": pl.Int32,
    "is_member": pl.Boolean,
    "total_purchase_cents": pl.Int64,
    "partition": pl.Int32,
    "offset": pl.Int64,
}
SINK_SCHEMA = {
    "window_start": pl.Datetime("us", "UTC"),
    "product_id": pl.String,
    "category": pl.String,
    "purchases": pl.Int64,
    "quantity": pl.Int64,
    "revenue": pl.Decimal(18, 2),
    "member_purchases": pl.Int64,
    "batch_id": pl.Int64,
}
DEAD_LETTER_SCHEMA = {
    "topic": pl.String,
    "partition": pl.Int32,
    "offset": pl.Int64,
    "value": pl.String,
    "reason": pl.String,
}
MALFORMED_SCHEMA = {"partition": pl.Int32, "offset": pl.Int64, "value": pl.String}


def purchase(
    offset: int,
    second: float,
    product: str = "SF05",
    quantity: int = 1,
    cents: int = 599,
    member: bool = False,
    partition: int = 0,
) -> dict:
    return {
        "transaction_id": f"{partition}-{offset}",
        "transaction_time": T0 + timedelta(seconds=second),
        "product_id": product,
        "quantity": quantity,
        "is_member": member,
        "total_purchase_cents": cents,
        "partition": partition,
        "offset": offset,
    }


def ledger(*rows: dict) -> pl.DataFrame:
    return pl.DataFrame(list(rows), schema=PURCHASE_SCHEMA)


def malformed(*positions: tuple[int, int]) -> pl.DataFrame:
    return pl.DataFrame(
        [{"partition": p, "offset": o, "value": "{not json"} for p, o in positions], schema=MALFORMED_SCHEMA
    )


def total(
    minute: int,
    product: str,
    purchases: int,
    quantity: int,
    revenue: str,
    members: int = 0,
    batch_id: int = 0,
    category: str | None = "",
) -> dict:
    """One sink row: the cumulative total of (T0 + minute, product) as of batch_id."""
    return {
        "window_start": (T0 + timedelta(minutes=minute)).replace(tzinfo=UTC),
        "product_id": product,
        "category": CATEGORY_BY_PREFIX.get(product[:2]) if category == "" else category,
        "purchases": purchases,
        "quantity": quantity,
        "revenue": Decimal(revenue),
        "member_purchases": members,
        "batch_id": batch_id,
    }


def sink(*rows: dict) -> pl.DataFrame:
    return pl.DataFrame(list(rows), schema=SINK_SCHEMA)


def letters(*positions: tuple[int, int]) -> pl.DataFrame:
    rows = [
        {"topic": "demo.purchases", "partition": p, "offset": o, "value": "{not json", "reason": "unparseable"}
        for p, o in positions
    ]
    return pl.DataFrame(rows, schema=DEAD_LETTER_SCHEMA)


# Three purchases in two windows of two products, one malformed record at (1, 0).
LEDGER = ledger(
    purchase(0, 1, "SF05", quantity=3, cents=2394),
    purchase(1, 30, "SF05", quantity=1, cents=494, member=True),
    purchase(2, 61, "CS01", quantity=2, cents=998),
)
SINK = sink(total(0, "SF05", 2, 4, "28.88", members=1), total(1, "CS01", 1, 2, "9.98"))
MALFORMED = malformed((1, 0))
LETTERS = letters((1, 0))


def anomalies(result: dict) -> dict[str, int]:
    return {name: result["counts"][name] for name in ANOMALIES if result["counts"][name]}


def test_a_sink_matching_the_ledger_is_valid() -> None:
    result = check_sales(LEDGER, MALFORMED, SINK, LETTERS)
    assert result["valid"] is True, result
    assert anomalies(result) == {} and result["examples"] == {}
    assert (
        result["totals"]["ledger"]
        == result["totals"]["sink"]
        == {"purchases": 3, "quantity": 6, "revenue_cents": 3886, "member_purchases": 1}
    )
    assert result["counts"]["windows_expected"] == result["counts"]["windows_in_sink"] == 2
    assert result["by_category"] == [
        {
            "window_start": "2024-08-25 13:22:00.000000",
            "category": "Superfoods Smoothies",
            "ledger_revenue_cents": 2888,
            "sink_revenue_cents": 2888,
        },
        {
            "window_start": "2024-08-25 13:23:00.000000",
            "category": "Classic Smoothies",
            "ledger_revenue_cents": 998,
            "sink_revenue_cents": 998,
        },
    ]


def test_a_window_absent_from_the_sink_is_missing() -> None:
    result = check_sales(LEDGER, MALFORMED, sink(total(0, "SF05", 2, 4, "28.88", members=1)), LETTERS)
    assert result["valid"] is False and anomalies(result) == {"missing_windows": 1}
    assert result["counts"]["lost_purchases"] == 1
    assert result["examples"]["missing_windows"] == [
        {
            "window_start": "2024-08-25 13:23:00.000000",
            "product_id": "CS01",
            "ledger_purchases": 1,
            "ledger_quantity": 2,
            "ledger_revenue_cents": 998,
            "ledger_member_purchases": 0,
        }
    ]


def test_a_window_holding_fewer_purchases_is_undercounted() -> None:
    lost_one = sink(total(0, "SF05", 1, 3, "23.94", members=0), total(1, "CS01", 1, 2, "9.98"))
    result = check_sales(LEDGER, MALFORMED, lost_one, LETTERS)
    assert result["valid"] is False and anomalies(result) == {"undercounted": 1}
    example = result["examples"]["undercounted"][0]
    assert (
        example["product_id"],
        example["purchases_lost"],
        example["ledger_revenue_cents"],
        example["sink_revenue_cents"],
    ) == ("SF05", 1, 2888, 2394)
    assert result["counts"]["lost_purchases"] == 1 and result["counts"]["extra_purchases"] == 0
    assert result["totals"]["sink"]["purchases"] == 2


def test_revenue_alone_lower_is_undercounted() -> None:
    cheaper = sink(total(0, "SF05", 2, 4, "28.87", members=1), total(1, "CS01", 1, 2, "9.98"))
    result = check_sales(LEDGER, MALFORMED, cheaper, LETTERS)
    assert anomalies(result) == {"undercounted": 1}
    assert result["examples"]["undercounted"][0]["purchases_lost"] == 0


def test_a_purchase_counted_twice_is_overcounted() -> None:
    twice = sink(total(0, "SF05", 3, 5, "33.82", members=2), total(1, "CS01", 1, 2, "9.98"))
    result = check_sales(LEDGER, MALFORMED, twice, LETTERS)
    assert result["valid"] is False and anomalies(result) == {"overcounted": 1}
    example = result["examples"]["overcounted"][0]
    assert (example["purchases_extra"], example["ledger_member_purchases"], example["sink_member_purchases"]) == (
        1,
        1,
        2,
    )
    assert result["counts"]["extra_purchases"] == 1


def test_a_window_the_ledger_never_had_is_unexpected() -> None:
    extra = sink(*SINK.to_dicts(), total(5, "IS02", 1, 1, "5.99"))
    result = check_sales(LEDGER, MALFORMED, extra, LETTERS)
    assert result["valid"] is False and anomalies(result) == {"unexpected_windows": 1}
    assert result["examples"]["unexpected_windows"][0] == {
        "window_start": "2024-08-25 13:27:00.000000",
        "product_id": "IS02",
        "sink_purchases": 1,
        "sink_quantity": 1,
        "sink_revenue_cents": 599,
        "sink_member_purchases": 0,
    }
    assert result["counts"]["extra_purchases"] == 1


def test_a_row_with_another_category_than_its_product_is_miscategorised() -> None:
    wrong = sink(
        total(0, "SF05", 2, 4, "28.88", members=1, category="Classic Smoothies"), total(1, "CS01", 1, 2, "9.98")
    )
    result = check_sales(LEDGER, MALFORMED, wrong, LETTERS)
    assert result["valid"] is False and anomalies(result) == {"miscategorised": 1}
    assert result["examples"]["miscategorised"][0]["expected_category"] == "Superfoods Smoothies"
    by_category = {(row["window_start"][11:16], row["category"]): row for row in result["by_category"]}
    assert by_category[("13:22", "Superfoods Smoothies")]["sink_revenue_cents"] == 0
    assert by_category[("13:22", "Classic Smoothies")]["sink_revenue_cents"] == 2888


def test_a_products_frame_decides_the_category() -> None:
    products = pl.DataFrame({"product_id": ["SF05", "CS01"], "category": ["Smoothies", "Smoothies"]})
    assert check_sales(LEDGER, MALFORMED, SINK, LETTERS, products=products)["counts"]["miscategorised"] == 2
    relabelled = SINK.with_columns(pl.lit("Smoothies").alias("category"))
    assert check_sales(LEDGER, MALFORMED, relabelled, LETTERS, products=products)["valid"] is True


def test_two_different_rows_of_one_key_in_its_latest_batch_conflict() -> None:
    two = sink(
        total(0, "SF05", 2, 4, "28.88", members=1, batch_id=3),
        total(0, "SF05", 1, 3, "23.94", batch_id=3),
        total(1, "CS01", 1, 2, "9.98"),
    )
    result = check_sales(LEDGER, MALFORMED, two, LETTERS)
    assert result["valid"] is False and anomalies(result) == {"conflicting_rows": 2}
    assert sorted(row["purchases"] for row in result["examples"]["conflicting_rows"]) == [1, 2]


def test_a_malformed_record_without_dead_letter_is_missing() -> None:
    result = check_sales(LEDGER, malformed((1, 0), (2, 7)), SINK, LETTERS)
    assert result["valid"] is False and anomalies(result) == {"dead_letters_missing": 1}
    assert result["examples"]["dead_letters_missing"] == [{"partition": 2, "offset": 7, "value": "{not json"}]


def test_one_record_dead_lettered_twice_is_duplicated() -> None:
    result = check_sales(LEDGER, MALFORMED, SINK, letters((1, 0), (1, 0)))
    assert result["valid"] is False and anomalies(result) == {"dead_letters_duplicated": 1}
    assert result["examples"]["dead_letters_duplicated"] == [{"partition": 1, "offset": 0, "copies": 2}]


def test_a_dead_letter_of_a_good_purchase_is_unexpected_and_says_so() -> None:
    result = check_sales(LEDGER, MALFORMED, SINK, letters((1, 0), (0, 2)))
    assert result["valid"] is False and anomalies(result) == {"dead_letters_unexpected": 1}
    example = result["examples"]["dead_letters_unexpected"][0]
    assert (example["partition"], example["offset"], example["is_purchase"], example["reason"]) == (
        0,
        2,
        True,
        "unparseable",
    )


def test_empty_ledger_and_empty_sink_are_valid_but_one_side_alone_is_not() -> None:
    empty = check_sales(ledger(), malformed(), sink(), letters())
    assert empty["valid"] is True and empty["totals"]["sink"]["purchases"] == 0 and empty["by_category"] == []
    nothing_written = check_sales(LEDGER, malformed(), sink(), letters())
    assert nothing_written["valid"] is False and anomalies(nothing_written) == {"missing_windows": 2}
    assert nothing_written["counts"]["lost_purchases"] == 3
    from_nowhere = check_sales(ledger(), malformed(), SINK, letters((1, 0)))
    assert anomalies(from_nowhere) == {"unexpected_windows": 2, "dead_letters_unexpected": 1}


def test_a_key_updated_in_later_batches_counts_its_latest_total_once() -> None:
    cumulative = sink(
        total(0, "SF05", 1, 3, "23.94", batch_id=0),
        total(0, "SF05", 2, 4, "28.88", members=1, batch_id=1),
        total(1, "CS01", 1, 2, "9.98", batch_id=1),
        # The last batch replayed under a later id: the same totals again, not more.
        total(1, "CS01", 1, 2, "9.98", batch_id=2),
    )
    result = check_sales(LEDGER, MALFORMED, cumulative, LETTERS)
    assert result["valid"] is True, result
    assert result["totals"]["sink"]["purchases"] == 3


def test_the_current_total_of_a_key_is_its_row_of_the_largest_batch_id() -> None:
    # Update mode, as the sink reader returns it: every batch's cumulative rows; the checker decides which one counts.
    rows = sink(
        total(0, "SF05", 1, 3, "23.94", batch_id=0),
        total(1, "CS01", 1, 2, "9.98", batch_id=1),
        total(0, "SF05", 2, 4, "28.88", members=1, batch_id=4),
        total(1, "CS01", 1, 2, "9.98", batch_id=2),  # a replay under a later id
    )
    current = current_totals(rows).sort("product_id")
    assert current.select("product_id", "purchases", "batch_id").rows() == [("CS01", 1, 2), ("SF05", 2, 4)]
    assert current_totals(rows.drop("batch_id")).height == 4  # rows without a batch are current totals already
    assert current_totals(sink()).height == 0


def test_a_later_batch_with_a_lower_total_is_what_counts() -> None:
    regressed = sink(
        total(0, "SF05", 2, 4, "28.88", members=1, batch_id=1),
        total(0, "SF05", 1, 3, "23.94", batch_id=2),
        total(1, "CS01", 1, 2, "9.98", batch_id=1),
    )
    assert anomalies(check_sales(LEDGER, MALFORMED, regressed, LETTERS)) == {"undercounted": 1}


def test_cents_sum_exactly_where_floats_would_not() -> None:
    dimes = ledger(*[purchase(i, i, "SC01", cents=10) for i in range(3)], purchase(3, 4, "SC01", cents=20))
    # 0.1 + 0.1 + 0.1 + 0.2 in binary floating point is 0.5000000000000001.
    assert check_sales(dimes, malformed(), sink(total(0, "SC01", 4, 4, "0.50")), letters())["valid"] is True
    assert anomalies(check_sales(dimes, malformed(), sink(total(0, "SC01", 4, 4, "0.49")), letters())) == {
        "undercounted": 1
    }
    big = ledger(
        purchase(0, 1, "SC01", cents=999_999_999_999_999_99 // 2),
        purchase(1, 2, "SC01", cents=999_999_999_999_999_99 - 999_999_999_999_999_99 // 2),
    )
    assert check_sales(big, malformed(), sink(total(0, "SC01", 2, 2, "999999999999999.99")), letters())["valid"] is True


def test_a_float_revenue_is_refused_not_rounded() -> None:
    floating = SINK.with_columns(pl.col("revenue").cast(pl.Float64))
    result = check_sales(LEDGER, MALFORMED, floating, LETTERS)
    assert result["valid"] == "unknown" and "never through a float" in result["error"]


def test_a_finer_decimal_is_accepted_when_whole_cents_and_refused_otherwise() -> None:
    fine = SINK.with_columns(pl.col("revenue").cast(pl.Decimal(20, 4)))
    assert check_sales(LEDGER, MALFORMED, fine, LETTERS)["valid"] is True
    fraction = fine.with_columns(
        pl.when(pl.col("product_id") == "CS01")
        .then(pl.lit(Decimal("9.9801")))
        .otherwise(pl.col("revenue"))
        .alias("revenue")
        .cast(pl.Decimal(20, 4))
    )
    result = check_sales(LEDGER, MALFORMED, fraction, LETTERS)
    assert result["valid"] == "unknown" and "finer than a cent" in result["error"]


def test_revenue_in_integer_cents_is_accepted() -> None:
    cents = SINK.with_columns(
        (pl.col("revenue").cast(pl.Decimal(38, 2)).to_physical().cast(pl.Int64)).alias("revenue_cents")
    ).drop("revenue")
    assert check_sales(LEDGER, MALFORMED, cents, LETTERS)["valid"] is True


def test_naive_and_utc_window_starts_are_the_same_windows() -> None:
    naive = SINK.with_columns(pl.col("window_start").dt.replace_time_zone(None))
    assert check_sales(LEDGER, MALFORMED, naive, LETTERS)["valid"] is True
    nanos = SINK.with_columns(pl.col("window_start").cast(pl.Datetime("ns", "UTC")))
    assert check_sales(LEDGER, MALFORMED, nanos, LETTERS)["valid"] is True
    elsewhere = SINK.with_columns(pl.col("window_start").dt.convert_time_zone("Europe/Paris"))
    assert check_sales(LEDGER, MALFORMED, elsewhere, LETTERS)["valid"] is True


def test_a_purchase_at_the_last_microsecond_of_a_minute_belongs_to_it() -> None:
    edge = ledger(purchase(0, 59.999999, "IS01", cents=599), purchase(1, 60, "IS01", cents=599))
    both = sink(total(0, "IS01", 1, 1, "5.99"), total(1, "IS01", 1, 1, "5.99"))
    assert check_sales(edge, malformed(), both, letters())["valid"] is True
    one = sink(total(0, "IS01", 2, 2, "11.98"))
    assert anomalies(check_sales(edge, malformed(), one, letters())) == {"overcounted": 1, "missing_windows": 1}


def test_window_length_is_a_parameter() -> None:
    # Tumbling windows start at multiples of their length since the epoch, as Spark's do: 13:22 is in 13:20-13:25.
    five_minutes = sink(total(-2, "SF05", 2, 4, "28.88", members=1), total(-2, "CS01", 1, 2, "9.98"))
    assert check_sales(LEDGER, MALFORMED, five_minutes, LETTERS, window_s=300)["valid"] is True
    assert check_sales(LEDGER, MALFORMED, five_minutes, LETTERS)["valid"] is False
    assert check_sales(LEDGER, MALFORMED, five_minutes, LETTERS, window_s=0)["valid"] == "unknown"


def test_rows_dropped_by_the_watermark_are_reported_not_judged() -> None:
    result = check_sales(LEDGER, MALFORMED, SINK, LETTERS, rows_dropped_by_watermark=4)
    assert result["valid"] is True and result["rows_dropped_by_watermark"] == 4


def test_a_sink_without_the_contracts_columns_is_unknown() -> None:
    result = check_sales(LEDGER, MALFORMED, SINK.drop("quantity"), LETTERS)
    assert result == {"valid": "unknown", "error": result["error"]}
    assert result["error"].startswith("ValueError: ") and "quantity" in result["error"]


def test_examples_are_capped_at_five() -> None:
    many = ledger(*[purchase(i, 60 * i, "CS01") for i in range(6)])
    result = check_sales(many, malformed(), sink(), letters())
    assert result["counts"]["missing_windows"] == 6 and len(result["examples"]["missing_windows"]) == 5
