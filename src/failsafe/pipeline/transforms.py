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
from pyspark.sql.types import BooleanType, DataType, LongType, StringType, StructField, StructType

from failsafe.pipeline.schema import DEAD_LETTER_COLUMNS, PRODUCT_SCHEMA, PURCHASE_SCHEMA, REVENUE, SALES_BY_PRODUCT_COLUMNS

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

TRANSACTION_TIME_FORMAT = "yyyy-MM-dd HH:mm:ss.SSSSSS"
KEY_TIME_FORMAT = "yyyy-MM-dd HH:mm:ss"
UNKNOWN = "unknown"

# Fields a purchase cannot be counted without; the others may be absent or null, but not of the wrong type.
REQUIRED_FIELDS = ("transaction_id", "product_id", "transaction_time", "quantity", "is_member", "total_purchase")

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
    parsed_once = F.when(F.spark_partition_id() >= 0, F.from_json(text, _as_text(PURCHASE_SCHEMA)))
    raw = kafka_rows.select(
        parsed_once.alias("raw"),
        _is_json_object(text).alias("is_object"),
        "topic",
        "partition",
        "offset",
        F.col("timestamp").alias("kafka_timestamp"),
        F.col("key").cast("string").alias("key"),
        text.alias("value"),
    )
    typed = raw.select(
        "*",
        *(_convert(F.col(f"raw.{field.name}"), field.dataType).alias(field.name) for field in PURCHASE_SCHEMA.fields),
        F.try_to_timestamp(F.col("raw.transaction_time"), F.lit(TRANSACTION_TIME_FORMAT)).alias("event_time"),
    )

    checks: list[tuple[Column, str]] = [(~F.col("is_object"), "not a JSON object")]
    checks += [(_missing(F.col(f"raw.{name}")), f"missing {name}") for name in REQUIRED_FIELDS]
    checks.append((F.col("event_time").isNull(), "bad transaction_time"))
    checks += [(F.col(field.name).isNull() & F.col(f"raw.{field.name}").isNotNull(), f"bad {field.name}") for field in PURCHASE_SCHEMA.fields]
    checks.append((F.col("quantity") <= 0, "quantity not positive"))
    reason = F.when(checks[0][0], F.lit(checks[0][1]))
    for condition, text_reason in checks[1:]:
        reason = reason.when(condition, F.lit(text_reason))

    return typed.select(*(field.name for field in PURCHASE_SCHEMA.fields), "event_time", *_KAFKA_META, reason.alias("reason"))


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
        .select(F.col("key").cast("string").alias("key"), F.col("value").cast("string").alias("value"), "partition", "offset")
        .withColumn("rank", F.row_number().over(latest))
        .where(F.col("rank") == 1)
    )
    return ranked.where(_is_json_object(F.col("value"))).select(
        F.col("key").alias("product_id"),
        F.from_json("value", _as_text(PRODUCT_SCHEMA)).alias("product"),
    ).select("product_id", F.col("product.name").alias("product_name"), F.col("product.category").alias("category"))


def with_products(purchases: DataFrame, products: DataFrame) -> DataFrame:
    """Purchases with product_name and category (broadcast left join); unknown products get "unknown"."""
    catalogue = F.broadcast(products.select("product_id", "product_name", "category")).alias("catalogue")
    joined = purchases.alias("purchase").join(catalogue, F.col("purchase.product_id") == F.col("catalogue.product_id"), "left")
    return joined.select(
        "purchase.*",
        F.coalesce(F.col("catalogue.product_name"), F.lit(UNKNOWN)).alias("product_name"),
        F.coalesce(F.col("catalogue.category"), F.lit(UNKNOWN)).alias("category"),
    )


def sales_by_product(purchases: DataFrame, window_duration: str = "1 minute", watermark_delay: str = "2 minutes") -> DataFrame:
    """Purchases per tumbling event-time window and product, in the contract's column order.

    Streaming: rows older than the watermark are dropped; use output mode update (each row the
    window's cumulative total so far) or append (each row once, after the watermark passes it).
    On a static DataFrame the watermark is ignored.
    """
    totals = (
        purchases.withWatermark("event_time", watermark_delay)
        .groupBy(F.window("event_time", window_duration).alias("window"), "product_id", "product_name", "category")
        .agg(
            F.count(F.lit(1)).alias("purchases"),
            F.sum("quantity").cast("long").alias("quantity"),
            F.sum("total_purchase").cast(REVENUE).alias("revenue"),
            F.count_if(F.col("is_member")).alias("member_purchases"),
        )
    )
    return totals.select(
        F.col("window.start").alias("window_start"),
        F.col("window.end").alias("window_end"),
        "product_id",
        "product_name",
        "category",
        "purchases",
        "quantity",
        "revenue",
        "member_purchases",
        (F.col("member_purchases") / F.col("purchases")).cast("double").alias("member_share"),
    ).select(*SALES_BY_PRODUCT_COLUMNS)


def batch_window_totals(purchases: DataFrame, window_duration: str = "1 minute") -> DataFrame:
    """A static batch of purchases summed per tumbling window and product, for the sales state (sales_state.py).

    Times are microseconds since the epoch, so the rows reach Python without a time zone:
    [window_start_us, window_end_us, product_id, product_name, category, purchases, quantity, revenue,
    member_purchases, max_event_time_us].
    """
    window = F.window("event_time", window_duration)
    return (
        purchases.groupBy(window.alias("window"), "product_id", "product_name", "category")
        .agg(
            F.count(F.lit(1)).alias("purchases"),
            F.sum("quantity").cast("long").alias("quantity"),
            F.sum("total_purchase").cast(REVENUE).alias("revenue"),
            F.count_if(F.col("is_member")).alias("member_purchases"),
            F.unix_micros(F.max("event_time")).alias("max_event_time_us"),
        )
        .select(
            F.unix_micros(F.col("window.start")).alias("window_start_us"),
            F.unix_micros(F.col("window.end")).alias("window_end_us"),
            "product_id", "product_name", "category", "purchases", "quantity", "revenue", "member_purchases", "max_event_time_us",
        )
    )


# The sales state's running totals (sales_state.WindowTotals), times in microseconds since the epoch.
WINDOW_TOTALS_SCHEMA = StructType([
    StructField("window_start_us", LongType()),
    StructField("window_end_us", LongType()),
    StructField("product_id", StringType()),
    StructField("product_name", StringType()),
    StructField("category", StringType()),
    StructField("purchases", LongType()),
    StructField("quantity", LongType()),
    StructField("revenue", REVENUE),
    StructField("member_purchases", LongType()),
])


def sales_rows(spark: SparkSession, totals: list[tuple]) -> DataFrame:
    """Running totals (tuples in WINDOW_TOTALS_SCHEMA's order) -> sales_by_product rows in the contract's columns and types."""
    frame = spark.createDataFrame(totals, WINDOW_TOTALS_SCHEMA)
    return frame.select(
        F.timestamp_micros("window_start_us").alias("window_start"),
        F.timestamp_micros("window_end_us").alias("window_end"),
        "product_id", "product_name", "category", "purchases", "quantity", "revenue", "member_purchases",
        (F.col("member_purchases") / F.col("purchases")).cast("double").alias("member_share"),
    ).select(*SALES_BY_PRODUCT_COLUMNS)


def revenue_by_category(sales: DataFrame) -> DataFrame:
    """Sum a static sales_by_product frame over products: [window_start, window_end, category, purchases, revenue].

    Meant for a frame of current totals (one row per window and product). Spark will not chain
    this aggregation after sales_by_product's in one update-mode stream.
    """
    return sales.groupBy("window_start", "window_end", "category").agg(
        F.sum("purchases").alias("purchases"),
        F.sum("revenue").cast(REVENUE).alias("revenue"),
    )


def to_kafka_records(sales: DataFrame) -> DataFrame:
    """Rows -> [key, value] for demo.sales-by-product: key "<product_id>|<window_start>", value the row as JSON."""
    key = F.concat(F.col("product_id"), F.lit("|"), F.date_format("window_start", KEY_TIME_FORMAT))
    value = F.to_json(F.struct(*(F.col(name) for name in sales.columns)), {"timestampFormat": TRANSACTION_TIME_FORMAT})
    return sales.select(key.alias("key"), value.alias("value"))


def enriched_records(enriched: DataFrame) -> DataFrame:
    """Valid purchases joined with their products -> [key, value] for an enriched purchases topic.

    Key: the transaction id. Value: the purchase as JSON, its fields in the seed's order and types, plus
    product_name, category, and where it came from (partition and offset of demo.purchases), so a reader
    can tie each output record to its input. Stateless: it runs under the real-time trigger too.
    """
    fields = [F.col(field.name) for field in PURCHASE_SCHEMA.fields]
    fields[0] = F.date_format("event_time", TRANSACTION_TIME_FORMAT).alias("transaction_time")
    value = F.to_json(F.struct(*fields, "product_name", "category", F.col("partition").alias("source_partition"),
                               F.col("offset").alias("source_offset")))
    return enriched.select(F.col("transaction_id").alias("key"), value.alias("value"))
