"""Published: the totals the pipeline wrote to Kafka, as a read_committed reader sees them, against the ledger.

Each record of ``demo.sales-by-product`` is one (window, product) total as of a micro-batch, the
batch id in its value. A reader keeps, per key, the last record it read; so the verdict is built
from what such a reader ends with:

- ``missing_windows``, ``undercounted``, ``overcounted``, ``unexpected_windows``, ``miscategorised``:
  the last record of each key against the ledger's total, by ``checkers.pipeline.sales`` (the
  same judgement as the Parquet sink's). A total lower than the ledger's is lost purchases: always
  a violation.
- ``stale_last``: keys whose last record is of an older batch than another record of the key: a
  reader that keeps the last one holds a total the pipeline had already replaced. Always a violation.
- ``duplicate``: every record of a (key, batch) beyond its first: a batch published twice. A
  violation when the pipeline promised exactly-once publishing; counted, and allowed, when it
  publishes at least once (Spark's Kafka sink writes a replayed batch again: Spark's
  Structured Streaming + Kafka integration guide).

A partition not read to its end, the topic not read at all, or a record whose value cannot be read
leaves the verdict unknown (a loss is still reported). ``uncommitted``, what a read_uncommitted
reader saw (records, copies, and those of aborted transactions), is reported beside, not judged.
Pure: frames in, a result out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import polars as pl

from failsafe.checkers.common import UNKNOWN, CheckerResult, examples, result
from failsafe.checkers.pipeline.sales import DEFAULT_WINDOW_S, KEY, check_sales

EXACTLY_ONCE = "exactly-once"
TOTALS = ("missing_windows", "undercounted", "overcounted", "unexpected_windows", "miscategorised")
VIOLATIONS = (*TOTALS, "stale_last", "duplicate")
_FIELDS = {
    "product_id": pl.String,
    "category": pl.String,
    "purchases": pl.Int64,
    "quantity": pl.Int64,
    "member_purchases": pl.Int64,
    "batch_id": pl.Int64,
}


def check(
    ledger_purchases: pl.DataFrame,
    log: pl.DataFrame,
    failures: pl.DataFrame,
    *,
    publish: str,
    read_back: bool = True,
    rows_dropped_by_watermark: int | None = None,
    window_s: int = DEFAULT_WINDOW_S,
    uncommitted: Mapping[str, Any] | None = None,
) -> CheckerResult:
    """``log``: the results topic as read back at read_committed (partition, offset, key, value); ``failures``: its
    partitions that could not be read to the end; ``publish``: the pipeline's promise, exactly-once or at-least-once."""
    records = _parse(log)
    unparseable = records.filter(pl.any_horizontal(pl.col(c).is_null() for c in ("batch_id", *KEY))).height
    records = records.drop_nulls(["batch_id", *KEY])
    copies = (
        records.group_by("key", "batch_id")
        .agg(pl.len().alias("copies"), pl.col("partition").first(), pl.col("offset").alias("offsets"))
        .filter(pl.col("copies") > 1)
        .sort("key", "batch_id")
    )
    duplicate = int((copies["copies"] - 1).sum()) if copies.height else 0
    ordered = records.sort("partition", "offset")
    last = ordered.group_by("key", maintain_order=True).last()
    newest = records.group_by("key").agg(pl.col("batch_id").max().alias("newest_batch"))
    stale = last.join(newest, on="key").filter(pl.col("batch_id") < pl.col("newest_batch"))
    # The totals a reader keeps: each key's last record (one row per key, so check_sales' own choice is the same).
    totals = check_sales(
        ledger_purchases,
        ledger_purchases.head(0).select("partition", "offset"),
        last,
        pl.DataFrame(schema={"partition": pl.Int64, "offset": pl.Int64}),
        rows_dropped_by_watermark=rows_dropped_by_watermark,
        window_s=window_s,
    )
    if totals.get("valid") == UNKNOWN:
        return result(UNKNOWN, {}, {}, reasons=[f"the totals could not be compared: {totals.get('error')}"])
    counts = {
        **{name: totals["counts"][name] for name in TOTALS},
        "records": records.height,
        "keys": last.height,
        "batches": records["batch_id"].n_unique(),
        "duplicate": duplicate,
        "duplicated_batches": copies.height,
        "stale_last": stale.height,
        "lost_purchases": totals["counts"]["lost_purchases"],
        "extra_purchases": totals["counts"]["extra_purchases"],
        "unparseable": unparseable,
        "unreadable-partitions": failures.height,
    }
    exactly_once = publish == EXACTLY_ONCE
    violations = [name for name in TOTALS if counts[name]] + (["stale_last"] if stale.height else [])
    if duplicate and exactly_once:
        violations.append("duplicate")
    reasons = (
        ([] if read_back else ["the results topic was not read back"])
        + (
            [f"{failures.height} partition(s) of the results topic could not be read to their end"]
            if failures.height
            else []
        )
        + ([f"{unparseable} record(s) whose value names no window, product or batch"] if unparseable else [])
    )
    # A key missing or lower may sit in a partition not read: without a full read only a copy or a stale last record,
    # which were read, are sure.
    sure = [v for v in violations if v in ("duplicate", "stale_last", "overcounted")]
    valid = False if (sure or (violations and not reasons)) else UNKNOWN if reasons else True
    return result(
        valid,
        counts,
        {
            **{name: rows for name, rows in totals["examples"].items() if name in TOTALS},
            "duplicate": examples(copies),
            "stale_last": examples(stale.select("key", "partition", "offset", "batch_id", "newest_batch")),
            "unreadable-partitions": examples(failures),
        },
        violations if valid is False else [],
        publish=publish,
        allow_duplicates=not exactly_once,
        totals=totals["totals"],
        uncommitted=dict(uncommitted) if uncommitted is not None else None,
        reasons=reasons,
    )


def _parse(log: pl.DataFrame) -> pl.DataFrame:
    """Each record's total from its JSON value; what cannot be read is null."""
    value = pl.col("value")
    fields = [
        value.str.json_path_match(f"$.{name}").cast(dtype, strict=False).alias(name) for name, dtype in _FIELDS.items()
    ]
    window = value.str.json_path_match("$.window_start").str.to_datetime("%Y-%m-%d %H:%M:%S%.f", strict=False)
    revenue = value.str.json_path_match("$.revenue").cast(pl.Decimal(18, 2), strict=False).alias("revenue")
    return log.select(
        "partition",
        "offset",
        "key",
        *fields,
        window.dt.replace_time_zone("UTC").alias("window_start"),
        revenue,
    )
