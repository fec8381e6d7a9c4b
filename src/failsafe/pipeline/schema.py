"""The shapes the pipeline reads and writes (the issue 4 data contract, as Spark types).

Money is ``DecimalType`` end to end, never ``double``: a window's revenue is the sum of many
totals such as 0.10 and 0.20, and it must equal the simulator's ledger to the cent.
"""

from __future__ import annotations

from pyspark.sql.types import (
    BinaryType,
    BooleanType,
    DecimalType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

MONEY = DecimalType(10, 2)
REVENUE = DecimalType(18, 2)

# The value of a demo.purchases record, fields in the order the simulator writes them (seed 003).
PURCHASE_SCHEMA = StructType(
    [
        StructField("transaction_time", StringType()),
        StructField("transaction_id", StringType()),
        StructField("product_id", StringType()),
        StructField("price", MONEY),
        StructField("quantity", IntegerType()),
        StructField("is_member", BooleanType()),
        StructField("member_discount", DecimalType(4, 2)),
        StructField("add_supplements", BooleanType()),
        StructField("supplement_price", MONEY),
        StructField("total_purchase", MONEY),
    ]
)

# The value of a demo.products record (compacted topic, key = product_id).
PRODUCT_SCHEMA = StructType(
    [
        StructField("product_id", StringType()),
        StructField("category", StringType()),
        StructField("name", StringType()),
        StructField("size", StringType()),
        StructField("price", MONEY),
        StructField("cogs", MONEY),
    ]
)

# The columns Spark's Kafka source gives every record, read or streamed.
KAFKA_SOURCE_SCHEMA = StructType(
    [
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("timestamp", TimestampType()),
        StructField("timestampType", IntegerType()),
    ]
)

# sales_by_product rows in contract order; the sink adds batch_id.
SALES_BY_PRODUCT_COLUMNS = (
    "window_start",
    "window_end",
    "product_id",
    "product_name",
    "category",
    "purchases",
    "quantity",
    "revenue",
    "member_purchases",
    "member_share",
)

DEAD_LETTER_COLUMNS = ("topic", "partition", "offset", "kafka_timestamp", "key", "value", "reason")
