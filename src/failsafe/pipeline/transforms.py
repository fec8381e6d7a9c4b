"""The pipeline's pure transforms: DataFrame in, DataFrame out; Kafka and sinks live in job.py.

Every function works on static and streaming DataFrames alike (``parse_products`` and
``revenue_by_category`` excepted: see their docstrings).

Malformed input never fails a query. Spark 4 runs in ANSI mode, where ``cast`` and
``to_timestamp`` of a bad string raise; a purchase is therefore parsed with every field read as
text, then converted with ``try_cast`` and ``try_to_timestamp``, and a record that fails gets a
``reason`` and goes to the dead letters instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import Column, Window
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType, DataType, StringType, StructField, StructType

from failsafe.pipeline.intervals import interval_us
from failsafe.pipeline.schema import (
    DEAD_LETTER_COLUMNS,
    PRODUCT_SCHEMA,
    PURCHASE_SCHEMA,
    REVENUE,
    SALES_BY_PRODUCT_COLUMNS,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

TRANSACTION_TIME_FORMAT = "yyyy-MM-dd HH:mm:ss.SSSSSS"
KEY_TIME_FORMAT = "yyyy-MM-dd HH:mm:ss"
UNKNOWN = "unknown"

# Fields a purchase cannot be counted without; the others may be absent or null, but not of the wrong type.
REQUIRED_FIELDS = ("transaction_id", "product_id", "transaction_time", "quantity", "is_member", "total_purchase")

_CORRUPT_RECORD = "_corrupt_record"
_KAFKA_META = ("topic", "partition", "offset", "kafka_timestamp", "key", "value")


def _as_text(schema: StructType) -> StructType:
    # from_json puts any JSON token into a string field (a number keeps its text, an object its
    # JSON), so a wrong type shows up field by field in try_cast instead of nulling the record.
    return StructType([StructField(field.name, StringType()) for field in schema.fields])


def _is_json_object(text: Column) -> Column:
    # json_object_keys is null for null, "", invalid or truncated JSON, and any non-object value.
    return F.json_object_keys(text).isNotNull()


def _convert(raw: Column, data_type: DataType) -> Column:
    if isinstance(data_type, BooleanType):
        # try_cast would also take "yes", "y", "1" and "t": a JSON boolean is true or false.
        flag = F.lower(raw)
        return F.when(flag == "true", F.lit(True)).when(flag == "false", F.lit(False))
    return raw.try_cast(data_type)


def _missing(raw: Column) -> Column:
    return raw.isNull() | (F.trim(raw) == "")


def parse_purchases(kafka_rows: DataFrame) -> DataFrame:
    """Kafka source rows of demo.purchases -> typed purchases with event_time, Kafka metadata and a reason.

    ``reason`` is null for a valid purchase, otherwise one of: "not a JSON object",
    "missing <field>", "bad <field>" (present but not of its type), "quantity not positive".
    """
    text = F.col("value").cast("string")
    # Spark pushes a filter on ``reason`` (valid_purchases, dead_letters) below a projection of
    # deterministic columns and inlines ``raw`` into it: each record's JSON was parsed once per field
    # the filter checks (37 from_json in the plan, 8x slower). A parse Spark must treat as
    # nondeterministic (it is not: spark_partition_id() is never negative) keeps the filter above it.
    #
    # What is not a JSON object (not JSON, truncated, an array, a scalar) Spark's parser hands back as text in the
    # corrupt-record field, in the same parse; empty input and a tombstone parse to null.
    as_text = StructType([*_as_text(PURCHASE_SCHEMA).fields, StructField(_CORRUPT_RECORD, StringType())])
    parsed_once = F.when(
        F.spark_partition_id() >= 0, F.from_json(text, as_text, {"columnNameOfCorruptRecord": _CORRUPT_RECORD})
    )
    raw = kafka_rows.select(
        parsed_once.alias("raw"),
        "topic",
        "partition",
        "offset",
        F.col("timestamp").alias("kafka_timestamp"),
        F.col("key").cast("string").alias("key"),
        text.alias("value"),
    )
    typed = raw.select(
        "*",
        (F.col("raw").isNotNull() & F.col(f"raw.{_CORRUPT_RECORD}").isNull()).alias("is_object"),
        *(_convert(F.col(f"raw.{field.name}"), field.dataType).alias(field.name) for field in PURCHASE_SCHEMA.fields),
        F.try_to_timestamp(F.col("raw.transaction_time"), F.lit(TRANSACTION_TIME_FORMAT)).alias("event_time"),
    )

    checks: list[tuple[Column, str]] = [(~F.col("is_object"), "not a JSON object")]
    checks += [(_missing(F.col(f"raw.{name}")), f"missing {name}") for name in REQUIRED_FIELDS]
    checks.append((F.col("event_time").isNull(), "bad transaction_time"))
    checks += [
        (F.col(field.name).isNull() & F.col(f"raw.{field.name}").isNotNull(), f"bad {field.name}")
        for field in PURCHASE_SCHEMA.fields
    ]
    checks.append((F.col("quantity") <= 0, "quantity not positive"))
    reason = F.when(checks[0][0], F.lit(checks[0][1]))
    for condition, text_reason in checks[1:]:
        reason = reason.when(condition, F.lit(text_reason))

    return typed.select(
        *(field.name for field in PURCHASE_SCHEMA.fields), "event_time", *_KAFKA_META, reason.alias("reason")
    )


def valid_purchases(parsed: DataFrame) -> DataFrame:
    """The purchases of ``parse_purchases`` that count (reason is null); all columns kept."""
    return parsed.where(F.col("reason").isNull())


def dead_letters(parsed: DataFrame) -> DataFrame:
    """The records of ``parse_purchases`` that do not count, as the dead-letter sink's rows."""
    return parsed.where(F.col("reason").isNotNull()).select(*DEAD_LETTER_COLUMNS)


def parse_products(kafka_rows: DataFrame) -> DataFrame:
    """A batch read of the compacted demo.products topic -> [product_id, product_name, category].

    The record with the highest (partition, offset) of a key wins, as compaction would keep it;
    a tombstone (null value) or a latest value that is not a JSON object removes the product.
    Uses a window over the key, so it needs a static DataFrame.
    """
    latest = Window.partitionBy("key").orderBy(F.col("partition").desc(), F.col("offset").desc())
    ranked = (
        kafka_rows.where(F.col("key").isNotNull())
        .select(
            F.col("key").cast("string").alias("key"),
            F.col("value").cast("string").alias("value"),
            "partition",
            "offset",
        )
        .withColumn("rank", F.row_number().over(latest))
        .where(F.col("rank") == 1)
    )
    return (
        ranked.where(_is_json_object(F.col("value")))
        .select(
            F.col("key").alias("product_id"),
            F.from_json("value", _as_text(PRODUCT_SCHEMA)).alias("product"),
        )
        .select("product_id", F.col("product.name").alias("product_name"), F.col("product.category").alias("category"))
    )


def with_products(purchases: DataFrame, products: DataFrame) -> DataFrame:
    """Purchases with product_name and category (broadcast left join); unknown products get "unknown"."""
    catalogue = F.broadcast(products.select("product_id", "product_name", "category")).alias("catalogue")
    joined = purchases.alias("purchase").join(
        catalogue, F.col("purchase.product_id") == F.col("catalogue.product_id"), "left"
    )
    return joined.select(
        "purchase.*",
        F.coalesce(F.col("catalogue.product_name"), F.lit(UNKNOWN)).alias("product_name"),
        F.coalesce(F.col("catalogue.category"), F.lit(UNKNOWN)).alias("category"),
    )


# The measures of a sales_by_product row, shared by the reference query and the pipeline's.
def _sales_measures() -> list[Column]:
    return [
        F.count(F.lit(1)).alias("purchases"),
        F.sum("quantity").cast("long").alias("quantity"),
        F.sum("total_purchase").cast(REVENUE).alias("revenue"),
        F.count_if(F.col("is_member")).alias("member_purchases"),
    ]


def _sales_columns() -> list[Column]:
    return [
        F.col("window.start").alias("window_start"),
        F.col("window.end").alias("window_end"),
        *(
            F.col(name)
            for name in (
                "product_id",
                "product_name",
                "category",
                "purchases",
                "quantity",
                "revenue",
                "member_purchases",
            )
        ),
        (F.col("member_purchases") / F.col("purchases")).cast("double").alias("member_share"),
    ]


def sales_by_product(
    purchases: DataFrame, window_duration: str = "1 minute", watermark_delay: str = "2 minutes"
) -> DataFrame:
    """Purchases per tumbling event-time window and product, in the contract's column order.

    Streaming: rows older than the watermark are dropped; use output mode update (each row the
    window's cumulative total so far) or append (each row once, after the watermark passes it).
    On a static DataFrame the watermark is ignored. The pipeline's query (``sales_and_dead_letters``)
    computes the same rows; this is the reference its tests compare it with.
    """
    totals = (
        purchases.withWatermark("event_time", watermark_delay)
        .groupBy(F.window("event_time", window_duration).alias("window"), *SALES_KEYS[1:])
        .agg(*_sales_measures())
    )
    return totals.select(*_sales_columns()).select(*SALES_BY_PRODUCT_COLUMNS)


# What Spark's own window column carries to say it is the event time (EventTimeWatermark.delayKey).
WATERMARK_DELAY_KEY = "spark.watermarkDelayMs"
SALES_KEYS = ("window", "product_id", "product_name", "category")
KIND_SALES, KIND_DEAD_LETTER = "sales", "dead_letter"


def event_window(event_time: Column, window_duration: str, watermark_delay: str) -> Column:
    """``F.window(event_time, window_duration)`` (tumbling, from the epoch), but null where ``event_time`` is null
    instead of dropping the row, and marked as the event-time column the way Spark marks its own window.

    With the mark, Spark's stateful aggregation drops a row whose window ended at or before the
    previous batch's watermark (counted in ``numRowsDroppedByWatermark``) and evicts keys whose
    window ended at or before the current one, exactly as for ``F.window``.
    """
    width = interval_us(window_duration)
    us = F.unix_micros(event_time)
    start = us - F.pmod(us, F.lit(width))
    window = F.struct(F.timestamp_micros(start).alias("start"), F.timestamp_micros(start + F.lit(width)).alias("end"))
    return F.when(event_time.isNotNull(), window).alias("window", metadata=_event_time_mark(watermark_delay))


def _event_time_mark(watermark_delay: str) -> dict[str, int]:
    return {WATERMARK_DELAY_KEY: interval_us(watermark_delay) // 1000}


def sales_and_dead_letters(
    parsed: DataFrame, products: DataFrame, window_duration: str, watermark_delay: str
) -> DataFrame:
    """The pipeline's one stateful query over ``parse_purchases``' rows, read and parsed once:
    [kind, sales (a sales_by_product row), dead_letter (a dead-letter row)], one of the two set per row.

    The sales rows are Spark's windowed aggregation in update mode (``sales_by_product``'s rows,
    state in Spark's state store); the dead letters are the records that are not purchases. Only
    valid purchases move the watermark.

    A streaming query has one sink, so the two leave as one union; each branch of a union is its
    own plan, and two branches over the source would read and parse the topic twice. They share one
    shuffle instead: both read the same ``Exchange`` (the second as a ``ReusedExchange``, the plan
    says so). For that the branches must be the same below it, and the optimizer would push each
    branch's filter and column subset down through the shuffle: above it, a projection Spark must
    treat as nondeterministic (``spark_partition_id()`` is never negative) packs every column into
    one struct, which stops both. The aggregation then shuffles its partial sums once more (small:
    the rows of a key are already together).
    """
    valid = F.col("reason").isNull()
    # A dead letter whose transaction_time parses must not move the watermark.
    marked = parsed.withColumn("event_time", F.when(valid, F.col("event_time"))).withWatermark(
        "event_time", watermark_delay
    )
    # Where a record came from travels through the shuffle for the dead letters only.
    keyed = with_products(marked, products).select(
        event_window(F.col("event_time"), window_duration, watermark_delay),
        *SALES_KEYS[1:],
        "quantity",
        "total_purchase",
        "is_member",
        *(F.when(~valid, F.col(name)).alias(name) for name in _KAFKA_META),
        "reason",
    )
    packed = F.when(F.spark_partition_id() >= 0, F.struct(*keyed.columns)).alias("record")
    shared = (
        keyed.repartition(*SALES_KEYS)
        .select(packed)
        .select(
            F.col("record.window").alias("window", metadata=_event_time_mark(watermark_delay)),
            *(F.col(f"record.{name}").alias(name) for name in keyed.columns if name != "window"),
        )
    )
    sales = shared.where(valid).groupBy(*SALES_KEYS).agg(*_sales_measures()).select(*_sales_columns())
    letters = shared.where(~valid)
    # Each branch leaves the other kind's column out; the union fills it with nulls of its type.
    return sales.select(
        F.lit(KIND_SALES).alias("kind"), F.struct(*SALES_BY_PRODUCT_COLUMNS).alias(KIND_SALES)
    ).unionByName(
        letters.select(F.lit(KIND_DEAD_LETTER).alias("kind"), F.struct(*DEAD_LETTER_COLUMNS).alias(KIND_DEAD_LETTER)),
        allowMissingColumns=True,
    )


def output_rows(outputs: DataFrame, kind: str) -> DataFrame:
    """The rows of one ``kind`` of ``sales_and_dead_letters``' output, as that sink's columns."""
    return outputs.where(F.col("kind") == kind).select(f"{kind}.*")


def revenue_by_category(sales: DataFrame) -> DataFrame:
    """Sum a static sales_by_product frame over products: [window_start, window_end, category, purchases, revenue].

    Meant for a frame of current totals (one row per window and product). Spark will not chain
    this aggregation after sales_by_product's in one update-mode stream.
    """
    return sales.groupBy("window_start", "window_end", "category").agg(
        F.sum("purchases").alias("purchases"),
        F.sum("revenue").cast(REVENUE).alias("revenue"),
    )


def to_kafka_records(sales: DataFrame, batch_id: int) -> DataFrame:
    """Rows -> [key, value] for demo.sales-by-product: key "<product_id>|<window_start>", value the row as JSON with
    the micro-batch that computed it (``batch_id``: a reader tells a replay's copy from the next batch's total)."""
    key = F.concat(F.col("product_id"), F.lit("|"), F.date_format("window_start", KEY_TIME_FORMAT))
    columns = [*(F.col(name) for name in sales.columns), F.lit(batch_id).cast("long").alias("batch_id")]
    value = F.to_json(F.struct(*columns), {"timestampFormat": TRANSACTION_TIME_FORMAT})
    return sales.select(key.alias("key"), value.alias("value"))


def enriched_records(enriched: DataFrame) -> DataFrame:
    """Valid purchases joined with their products -> [key, value] for an enriched purchases topic.

    Key: the transaction id. Value: the purchase as JSON, its fields in the seed's order and types, plus
    product_name, category, and where it came from (partition and offset of demo.purchases), so a reader
    can tie each output record to its input. Stateless: it runs under the real-time trigger too.
    """
    fields = [F.col(field.name) for field in PURCHASE_SCHEMA.fields]
    fields[0] = F.date_format("event_time", TRANSACTION_TIME_FORMAT).alias("transaction_time")
    value = F.to_json(
        F.struct(
            *fields,
            "product_name",
            "category",
            F.col("partition").alias("source_partition"),
            F.col("offset").alias("source_offset"),
        )
    )
    return enriched.select(F.col("transaction_id").alias("key"), value.alias("value"))
