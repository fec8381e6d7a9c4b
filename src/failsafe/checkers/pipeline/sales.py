"""Sales: a pipeline's sink holds exactly the totals the simulator's ledger implies, and its dead letters.

The ledger lists every acknowledged purchase (and every record written malformed on purpose);
the sink holds, per (window_start, product_id), cumulative totals written in update mode, the
current one being the row of the largest batch_id. A key the sink lacks, or holds lower, lost
purchases; one it holds higher counted some twice. Money is compared in integer cents, never
through a float. Pure: frames in, a result dict out.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

import polars as pl

KEY = ("window_start", "product_id")
MEASURES = ("purchases", "quantity", "revenue_cents", "member_purchases")
CATEGORY_BY_PREFIX = {
    "CS": "Classic Smoothies",
    "SF": "Superfoods Smoothies",
    "SC": "Supercharged Smoothies",
    "IS": "Indulgent Smoothies",
}
ANOMALIES = (
    "missing_windows",
    "undercounted",
    "overcounted",
    "unexpected_windows",
    "miscategorised",
    "conflicting_rows",
    "dead_letters_missing",
    "dead_letters_duplicated",
    "dead_letters_unexpected",
)
DEFAULT_WINDOW_S = 60
EXAMPLES_PER_ANOMALY = 5
UNKNOWN = "unknown"
TIME_FORMAT = "%Y-%m-%d %H:%M:%S.%f"
_POSITION = ("partition", "offset")
_SINK_COLUMNS = ("window_start", "product_id", "category", "purchases", "quantity", "member_purchases")


def check_sales(
    ledger_purchases: pl.DataFrame,
    ledger_malformed: pl.DataFrame,
    sink_totals: pl.DataFrame,
    dead_letters: pl.DataFrame,
    *,
    products: pl.DataFrame | None = None,
    rows_dropped_by_watermark: int | None = None,
    window_s: int = DEFAULT_WINDOW_S,
) -> dict[str, Any]:
    """The verdict on one pipeline run; never raises: a failure to check is ``valid: "unknown"``.

    ``sink_totals`` may be current totals or every cumulative row with its ``batch_id``;
    ``products`` (product_id, category) overrides the category implied by a product id's prefix.
    """
    try:
        return _check(
            ledger_purchases, ledger_malformed, sink_totals, dead_letters, products, rows_dropped_by_watermark, window_s
        )
    except Exception as e:  # noqa: BLE001 - the checker contract (checkers/run.py): a checker that raises is "unknown"
        return {"valid": UNKNOWN, "error": f"{type(e).__name__}: {e}"}


def current_totals(rows: pl.DataFrame) -> pl.DataFrame:
    """Per (window_start, product_id), the rows of its largest batch_id: update mode's current total."""
    if "batch_id" not in rows.columns or rows.height == 0:
        return rows
    return rows.filter(pl.col("batch_id") == pl.col("batch_id").max().over(list(KEY)))


def category_of(product_ids: pl.Expr, products: pl.DataFrame | None = None) -> pl.Expr:
    """The category of each product id: from ``products`` when given, else from the id's prefix."""
    if products is None:
        return product_ids.str.slice(0, 2).replace_strict(CATEGORY_BY_PREFIX, default=None, return_dtype=pl.String)
    mapping = dict(products.select("product_id", "category").unique(subset="product_id", keep="last").iter_rows())
    return product_ids.replace_strict(mapping, default=None, return_dtype=pl.String)


def _check(
    purchases: pl.DataFrame,
    malformed: pl.DataFrame,
    sink: pl.DataFrame,
    dead_letters: pl.DataFrame,
    products: pl.DataFrame | None,
    rows_dropped_by_watermark: int | None,
    window_s: int,
) -> dict[str, Any]:
    if not isinstance(window_s, int) or isinstance(window_s, bool) or window_s <= 0:
        raise ValueError(f"window_s must be a positive whole number of seconds, not {window_s!r}")
    expected = expected_totals(purchases, window_s, products)
    rows = sink_rows(current_totals(sink))
    actual, conflicting = _one_row_per_key(rows)
    joined = expected.join(actual, on=list(KEY), how="full", coalesce=True, suffix="_sink")
    in_ledger, in_sink = pl.col("purchases").is_not_null(), pl.col("purchases_sink").is_not_null()
    lower = pl.any_horizontal([pl.col(f"{m}_sink") < pl.col(m) for m in MEASURES])
    higher = pl.any_horizontal([pl.col(f"{m}_sink") > pl.col(m) for m in MEASURES])
    found = {
        "missing_windows": joined.filter(in_ledger & ~in_sink),
        "undercounted": joined.filter(in_ledger & in_sink & lower),
        "overcounted": joined.filter(in_ledger & in_sink & higher),
        "unexpected_windows": joined.filter(~in_ledger & in_sink),
        "miscategorised": _miscategorised(rows, products),
        "conflicting_rows": conflicting,
    }
    letters = _dead_letter_anomalies(malformed, dead_letters, purchases)
    counts = {name: frame.height for name, frame in (found | letters).items()}
    lost = _purchase_shortfall(found["missing_windows"], found["undercounted"], "purchases", "purchases_sink")
    extra = _purchase_shortfall(found["unexpected_windows"], found["overcounted"], "purchases_sink", "purchases")
    counts |= {
        "ledger_purchases": purchases.height,
        "windows_expected": expected.height,
        "windows_in_sink": actual.height,
        "lost_purchases": lost,
        "extra_purchases": extra,
        "ledger_malformed": malformed.height,
        "dead_letters": dead_letters.height,
    }
    examples = {name: _examples(frame, name) for name, frame in (found | letters).items()}
    return {
        "valid": all(counts[name] == 0 for name in ANOMALIES),
        "counts": counts,
        "violations": [name for name in ANOMALIES if counts[name]],
        "examples": {name: rows for name, rows in examples.items() if rows},
        "totals": {"ledger": _grand_totals(expected), "sink": _grand_totals(actual)},
        "by_category": _by_category(expected, rows),
        "rows_dropped_by_watermark": rows_dropped_by_watermark,
        "window_s": window_s,
    }


def expected_totals(
    purchases: pl.DataFrame, window_s: int = DEFAULT_WINDOW_S, products: pl.DataFrame | None = None
) -> pl.DataFrame:
    """What the sink must hold: per (window_start, product_id) the ledger's totals and the category."""
    return (
        purchases.with_columns(_naive_utc("transaction_time").dt.truncate(f"{window_s}s").alias("window_start"))
        .group_by(list(KEY))
        .agg(
            pl.len().cast(pl.Int64).alias("purchases"),
            pl.col("quantity").cast(pl.Int64).sum().alias("quantity"),
            pl.col("total_purchase_cents").cast(pl.Int64).sum().alias("revenue_cents"),
            pl.col("is_member").cast(pl.Int64).sum().alias("member_purchases"),
        )
        .with_columns(category_of(pl.col("product_id"), products).alias("category"))
        .sort(list(KEY))
    )


def sink_rows(sink: pl.DataFrame) -> pl.DataFrame:
    """The sink's rows in the ledger's terms: naive UTC window_start, revenue in int64 cents, no nulls in measures."""
    missing = [column for column in _SINK_COLUMNS if column not in sink.columns]
    if "revenue" not in sink.columns and "revenue_cents" not in sink.columns:
        missing.append("revenue")
    if missing:
        raise ValueError(f"the sink rows lack column(s) {missing}; they have {sink.columns}")
    cents = _cents(sink, "revenue") if "revenue" in sink.columns else pl.col("revenue_cents").cast(pl.Int64)
    return sink.select(
        _naive_utc("window_start").alias("window_start"),
        pl.col("product_id").cast(pl.String),
        pl.col("category").cast(pl.String),
        pl.col("purchases").cast(pl.Int64).fill_null(0),
        pl.col("quantity").cast(pl.Int64).fill_null(0),
        cents.fill_null(0).alias("revenue_cents"),
        pl.col("member_purchases").cast(pl.Int64).fill_null(0),
    ).unique(maintain_order=True)


def _cents(frame: pl.DataFrame, column: str) -> pl.Expr:
    """A decimal amount as exact integer cents: the decimal's unscaled integer at scale 2, no float on the way."""
    dtype = frame.schema[column]
    if not isinstance(dtype, pl.Decimal):
        raise TypeError(f"{column} is {dtype}, not a decimal: amounts are compared exactly, never through a float")
    as_cents = pl.col(column).cast(pl.Decimal(38, 2))
    if (dtype.scale or 0) > 2:
        inexact = frame.filter(as_cents.cast(dtype) != pl.col(column))
        if inexact.height:
            raise ValueError(f"{column} holds amounts finer than a cent, e.g. {inexact[column][0]}")
    return as_cents.to_physical().cast(pl.Int64)


def _naive_utc(column: str) -> pl.Expr:
    """A timestamp column as naive UTC microseconds, whether Parquet gave it tz-aware or naive."""

    def normalise(series: pl.Series) -> pl.Series:
        dtype = series.dtype
        if not isinstance(dtype, pl.Datetime):
            raise TypeError(f"{column} is {dtype}, not a timestamp")
        if dtype.time_zone is not None:
            series = series.dt.convert_time_zone("UTC").dt.replace_time_zone(None)
        return series.cast(pl.Datetime("us"))

    return pl.col(column).map_batches(normalise, return_dtype=pl.Datetime("us"))


def _one_row_per_key(rows: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Per key one current total; keys whose latest batch holds two different rows are conflicts (compared by their
    maxima)."""
    conflicting = rows.filter(pl.len().over(list(KEY)) > 1).sort(list(KEY))
    actual = rows.group_by(list(KEY)).agg([pl.col(m).max() for m in MEASURES]).sort(list(KEY))
    return actual, conflicting


def _miscategorised(rows: pl.DataFrame, products: pl.DataFrame | None) -> pl.DataFrame:
    expected = category_of(pl.col("product_id"), products)
    return (
        rows.with_columns(expected.alias("expected_category"))
        .filter(pl.col("expected_category").is_not_null() & pl.col("category").ne_missing(pl.col("expected_category")))
        .sort(list(KEY))
    )


def _dead_letter_anomalies(
    malformed: pl.DataFrame, dead_letters: pl.DataFrame, purchases: pl.DataFrame
) -> dict[str, pl.DataFrame]:
    position = [pl.col(c).cast(pl.Int64) for c in _POSITION]
    wanted = malformed.with_columns(position).unique(subset=list(_POSITION), maintain_order=True)
    letters = dead_letters.with_columns(position)
    copies = letters.group_by(list(_POSITION)).agg(pl.len().alias("copies"))
    purchase_positions = purchases.select(position).unique().with_columns(pl.lit(True).alias("is_purchase"))
    unexpected = (
        letters.join(wanted, on=list(_POSITION), how="anti", maintain_order="left")
        .unique(subset=list(_POSITION), maintain_order=True)
        .join(purchase_positions, on=list(_POSITION), how="left", maintain_order="left")
        .with_columns(pl.col("is_purchase").fill_null(False))
    )
    return {
        "dead_letters_missing": wanted.join(letters, on=list(_POSITION), how="anti", maintain_order="left").sort(
            list(_POSITION)
        ),
        "dead_letters_duplicated": copies.filter(pl.col("copies") > 1).sort(list(_POSITION)),
        "dead_letters_unexpected": unexpected.sort(list(_POSITION)),
    }


def _purchase_shortfall(absent: pl.DataFrame, differing: pl.DataFrame, more: str, fewer: str) -> int:
    """Purchases one side has beyond the other: all of ``more`` where the key is absent, the positive difference
    elsewhere."""
    whole = absent[more].sum() or 0
    part = differing.select((pl.col(more) - pl.col(fewer)).clip(lower_bound=0).sum()).item() or 0
    return int(whole) + int(part)


def _grand_totals(frame: pl.DataFrame) -> dict[str, int]:
    return {m: int(frame[m].sum() or 0) for m in MEASURES}


def _by_category(expected: pl.DataFrame, rows: pl.DataFrame) -> list[dict[str, Any]]:
    """Revenue per (window_start, category) from each side: the ledger by product, the sink by its own category
    column."""
    ledger = expected.group_by("window_start", "category").agg(
        pl.col("revenue_cents").sum().alias("ledger_revenue_cents")
    )
    sink = rows.group_by("window_start", "category").agg(pl.col("revenue_cents").sum().alias("sink_revenue_cents"))
    table = (
        ledger.join(sink, on=["window_start", "category"], how="full", coalesce=True, nulls_equal=True)
        .with_columns(pl.col("ledger_revenue_cents", "sink_revenue_cents").fill_null(0))
        .sort("window_start", "category", nulls_last=True)
    )
    return [_plain(row) for row in table.to_dicts()]


_EXAMPLE_COLUMNS = {
    "missing_windows": ("window_start", "product_id", "purchases", "quantity", "revenue_cents", "member_purchases"),
    "unexpected_windows": (
        "window_start",
        "product_id",
        "purchases_sink",
        "quantity_sink",
        "revenue_cents_sink",
        "member_purchases_sink",
    ),
    "miscategorised": ("window_start", "product_id", "category", "expected_category"),
    "conflicting_rows": ("window_start", "product_id", "category", *MEASURES),
    "dead_letters_missing": ("partition", "offset", "value"),
    "dead_letters_duplicated": ("partition", "offset", "copies"),
    "dead_letters_unexpected": ("partition", "offset", "reason", "is_purchase", "value"),
}


def _examples(frame: pl.DataFrame, anomaly: str) -> list[dict[str, Any]]:
    """A few rows as plain JSON-ready dicts; a count difference names both sides of every measure."""
    head = frame.head(EXAMPLES_PER_ANOMALY)
    if anomaly in ("undercounted", "overcounted"):
        sign = 1 if anomaly == "undercounted" else -1
        difference = "purchases_lost" if anomaly == "undercounted" else "purchases_extra"
        columns = [
            pl.col("window_start"),
            pl.col("product_id"),
            (sign * (pl.col("purchases") - pl.col("purchases_sink"))).alias(difference),
        ]
        for m in MEASURES:
            columns += [pl.col(m).alias(f"ledger_{m}"), pl.col(f"{m}_sink").alias(f"sink_{m}")]
        head = head.select(columns)
    else:
        head = head.select([c for c in _EXAMPLE_COLUMNS[anomaly] if c in head.columns])
        head = head.rename({c: f"sink_{c.removesuffix('_sink')}" for c in head.columns if c.endswith("_sink")})
        if anomaly == "missing_windows":
            head = head.rename({m: f"ledger_{m}" for m in MEASURES})
    return [_plain(row) for row in head.to_dicts()]


def _plain(row: Mapping[str, Any]) -> dict[str, Any]:
    """Timestamps as the contract's strings, long values cut: examples go to JSON and to a terminal."""
    plain: dict[str, Any] = {}
    for name, value in row.items():
        if isinstance(value, datetime):
            value = value.strftime(TIME_FORMAT)
        elif isinstance(value, str) and len(value) > 120:
            value = value[:117] + "..."
        plain[name] = value
    return plain
