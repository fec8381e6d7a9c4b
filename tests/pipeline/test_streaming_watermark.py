"""The watermark in a real streaming query: a record older than it is dropped, not counted.

The source is Parquet files of Kafka-shaped rows, one file per micro-batch, so the test decides
what each batch holds. The first test runs Spark's own stateful aggregation (``sales_by_product``
under ``withWatermark``, update mode), the reference; the others run the pipeline's one query
(``sales_and_dead_letters``: the same aggregation with the dead letters leaving by the same read)
with its sink (job.SalesBatchSink) on the same batches, and require the same rows from every
batch, the same dropped count and the same watermark, with the state in Spark's state store.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest
from pyspark.sql import Row
from pyspark.testing import assertDataFrameEqual

from failsafe.pipeline.job import SALES_QUERY, PipelineConfig, SalesBatchSink
from failsafe.pipeline.schema import KAFKA_SOURCE_SCHEMA, SALES_BY_PRODUCT_COLUMNS
from failsafe.pipeline.sink import read_dead_letters, read_sales_rows
from failsafe.pipeline.transforms import (
    parse_products,
    parse_purchases,
    sales_and_dead_letters,
    sales_by_product,
    valid_purchases,
    with_products,
)

# See test_transforms.py: pyspark's collect() leaves its socket to the garbage collector.
pytestmark = [pytest.mark.spark, pytest.mark.filterwarnings("ignore:unclosed <socket.socket:ResourceWarning")]

NO_DATA_BATCHES = "spark.sql.streaming.noDataMicroBatches.enabled"
PRODUCT = {
    "product_id": "SF05",
    "category": "Superfoods Smoothies",
    "name": "Mango Magic",
    "size": "24 oz",
    "price": 5.99,
    "cogs": 1.5,
}


def purchase(transaction_id: str, transaction_time: str) -> dict:
    return {
        "transaction_time": transaction_time,
        "transaction_id": transaction_id,
        "product_id": "SF05",
        "price": 5.99,
        "quantity": 1,
        "is_member": False,
        "member_discount": 0.0,
        "add_supplements": False,
        "supplement_price": 0.0,
        "total_purchase": 5.99,
    }


class FileSource:
    """A directory the stream reads; each add() lands one complete Parquet file in it, by rename."""

    def __init__(self, root: Path, kafka_frame) -> None:
        self.dir, self.staging, self.kafka_frame, self.next_offset = root / "source", root / "staging", kafka_frame, 0
        self.dir.mkdir(parents=True)

    def add(self, *values: dict) -> None:
        offsets = list(range(self.next_offset, self.next_offset + len(values)))
        self.next_offset += len(values)
        written = self.staging / f"{offsets[0]:08d}"
        self.kafka_frame(list(values), offsets=offsets).coalesce(1).write.parquet(str(written))
        (part,) = written.glob("part-*.parquet")
        part.rename(self.dir / f"{offsets[0]:08d}.parquet")


def three_batches(source: FileSource, query, late_batch: bool = False) -> list[dict]:
    """The batches both tests feed (and a fourth, late one); the query's progress reports."""
    try:
        source.add(purchase("1", "2024-08-25 12:00:30.000000"))
        query.processAllAvailable()
        source.add(
            purchase("2", "2024-08-25 12:05:10.000000"), {"not": "a purchase"}
        )  # watermark: 12:05:10 - 1 minute = 12:04:10
        query.processAllAvailable()
        source.add(
            purchase("3", "2024-08-25 12:00:45.000000"),  # older than the watermark, its window already closed
            purchase("4", "2024-08-25 12:04:30.000000"),  # late for its window, but within the watermark
        )
        query.processAllAvailable()
        if late_batch:
            source.add(purchase("5", "2024-08-25 12:00:50.000000"))
            query.processAllAvailable()
        return list(query.recentProgress)
    finally:
        query.stop()


def spark_stateful_rows(
    spark, kafka_frame, tmp_path, late_batch: bool = False
) -> tuple[list[tuple[int, Row]], list[dict]]:
    source = FileSource(tmp_path, kafka_frame)
    products = parse_products(kafka_frame([PRODUCT], topic="demo.products"))
    stream = spark.readStream.schema(KAFKA_SOURCE_SCHEMA).option("maxFilesPerTrigger", 1).parquet(str(source.dir))
    sales = sales_by_product(with_products(valid_purchases(parse_purchases(stream)), products), "1 minute", "1 minute")

    emitted: list[tuple[int, Row]] = []
    query = (
        sales.writeStream.outputMode("update")
        .foreachBatch(lambda batch, batch_id: emitted.extend((batch_id, row) for row in batch.collect()))
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .start()
    )
    return emitted, three_batches(source, query, late_batch)


def test_a_record_older_than_the_watermark_is_dropped_and_one_within_it_is_counted(spark, kafka_frame, utc, tmp_path):
    emitted, reports = spark_stateful_rows(spark, kafka_frame, tmp_path)
    progress = reports[-1]

    assert progress["numInputRows"] == 2
    assert progress["eventTime"]["watermark"] == "2024-08-25T12:04:10.000Z"
    assert progress["stateOperators"][0]["numRowsDroppedByWatermark"] == 1

    latest: dict[tuple, tuple[int, Row]] = {}  # update mode: a key's current total is its row of the largest batch
    for batch_id, row in emitted:
        key = (row.window_start, row.product_id)
        if key not in latest or batch_id > latest[key][0]:
            latest[key] = (batch_id, row)
    totals = [
        Row(window_start=row.window_start, purchases=row.purchases, revenue=row.revenue) for _, row in latest.values()
    ]
    assertDataFrameEqual(
        totals,
        [
            Row(window_start=utc("2024-08-25 12:00:00"), purchases=1, revenue=Decimal("5.99")),
            Row(window_start=utc("2024-08-25 12:04:00"), purchases=1, revenue=Decimal("5.99")),
            Row(window_start=utc("2024-08-25 12:05:00"), purchases=1, revenue=Decimal("5.99")),
        ],
    )
    assert all(
        row.window_start != utc("2024-08-25 12:00:00") for batch_id, row in emitted if batch_id == progress["batchId"]
    )


def pipeline_query(spark, kafka_frame, root: Path):
    """The pipeline's query and sink on a FileSource under ``root``: (source, query, config)."""
    source = FileSource(root, kafka_frame)
    config = PipelineConfig(
        bootstrap_servers="unused:9",
        output_dir=root / "output",
        checkpoint_dir=root / "ck",
        watermark_delay="1 minute",
        results_topic=None,
    )
    products = parse_products(kafka_frame([PRODUCT], topic="demo.products"))
    stream = spark.readStream.schema(KAFKA_SOURCE_SCHEMA).option("maxFilesPerTrigger", 1).parquet(str(source.dir))
    outputs = sales_and_dead_letters(parse_purchases(stream), products, config.window_duration, config.watermark_delay)
    query = (
        outputs.writeStream.outputMode("update")
        .foreachBatch(SalesBatchSink(config))
        .option("checkpointLocation", str(config.checkpoint_dir / SALES_QUERY))
        .start()
    )
    return source, query, config


@pytest.mark.parametrize(
    ("no_data_batches", "rows", "dropped"), [(True, 3, 2), (False, 4, 1)], ids=["no-data-batches", "data-batches-only"]
)
def test_the_pipeline_query_emits_what_sparks_windowed_aggregation_emits(
    spark, kafka_frame, utc, tmp_path, no_data_batches, rows, dropped
):
    """With no-data batches (Spark's default) a batch without data moves the watermark after batch 1, and purchase 3
    is late in batch 2; without them it is not, and only purchase 5 is. Either way both queries agree."""
    spark.conf.set(NO_DATA_BATCHES, str(no_data_batches).lower())
    try:
        spark_rows, spark_reports = spark_stateful_rows(spark, kafka_frame, tmp_path / "spark", late_batch=True)
        source, query, config = pipeline_query(spark, kafka_frame, tmp_path / "ours")
        reports = three_batches(source, query, late_batch=True)
    finally:
        spark.conf.unset(NO_DATA_BATCHES)

    ours = read_sales_rows(config.output_dir)
    assert sorted(ours.columns) == sorted([*SALES_BY_PRODUCT_COLUMNS, "batch_id"])
    mine = sorted(
        (
            r["batch_id"],
            utc(r["window_start"].strftime("%Y-%m-%d %H:%M:%S")),
            r["product_id"],
            r["purchases"],
            r["quantity"],
            r["revenue"],
        )
        for r in ours.iter_rows(named=True)
    )
    theirs = sorted(
        (batch_id, row.window_start, row.product_id, row.purchases, row.quantity, row.revenue)
        for batch_id, row in spark_rows
    )
    assert mine == theirs and len(mine) == rows
    assert [(r["batchId"], r["eventTime"].get("watermark")) for r in reports] == [
        (r["batchId"], r["eventTime"].get("watermark")) for r in spark_reports
    ]
    assert [_dropped(r) for r in reports] == [_dropped(r) for r in spark_reports] and sum(
        map(_dropped, reports)
    ) == dropped
    # One read: each batch's input is the rows of its file, not twice that (the dead letters share the sales' read).
    assert [r["numInputRows"] for r in reports if r["numInputRows"]] == [1, 2, 2, 1]
    assert read_dead_letters(config.output_dir)["reason"].to_list() == ["missing transaction_id"]
    assert (config.checkpoint_dir / SALES_QUERY / "state" / "0").is_dir() and not (
        config.checkpoint_dir / "sales-state"
    ).exists()


def _dropped(report: dict) -> int:
    return sum(op["numRowsDroppedByWatermark"] for op in report["stateOperators"])


def test_a_dead_letter_does_not_move_the_watermark_and_the_topic_is_read_once(spark, kafka_frame, tmp_path):
    spark.conf.set(NO_DATA_BATCHES, "false")  # the plan looked at is then a batch's with data
    source, query, _ = pipeline_query(spark, kafka_frame, tmp_path)
    try:
        source.add(purchase("1", "2024-08-25 12:00:30.000000"))
        query.processAllAvailable()
        future = {
            **purchase("2", "2030-01-01 00:00:00.000000"),
            "quantity": "many",
        }  # its time parses, its quantity does not
        source.add(future, purchase("3", "2024-08-25 12:01:30.000000"))
        query.processAllAvailable()
        source.add(purchase("4", "2024-08-25 12:01:40.000000"))
        query.processAllAvailable()
        plan = query._jsq.explainInternal(False)
        watermarks = [r["eventTime"].get("watermark") for r in query.recentProgress if r["numInputRows"]]
    finally:
        query.stop()
        spark.conf.unset(NO_DATA_BATCHES)
    assert watermarks[-1] == "2024-08-25T12:00:30.000Z"  # 12:01:30 - 1 minute; 2030 would have made it 2029-12-31T23:59
    scans, reused = plan.count("FileScan parquet"), plan.count("ReusedExchange")
    assert (scans, reused) == (1, 1), plan
