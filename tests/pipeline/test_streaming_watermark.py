"""The watermark in a real streaming query: a record older than it is dropped, not counted.

The source is Parquet files of Kafka-shaped rows, one file per micro-batch, so the test decides
what each batch holds. The first test runs Spark's own stateful aggregation (``sales_by_product``
under ``withWatermark``, update mode); the second runs the pipeline's one stateless query, whose
sink keeps the state (job.PipelineBatchSink, sales_state.py), on the same batches and requires the
same rows from every batch and the same count of dropped purchases.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest
from pyspark.sql import Row
from pyspark.testing import assertDataFrameEqual

from failsafe.pipeline.job import PipelineBatchSink, PipelineConfig
from failsafe.pipeline.schema import KAFKA_SOURCE_SCHEMA, SALES_BY_PRODUCT_COLUMNS
from failsafe.pipeline.sink import read_dead_letters, read_sales_rows
from failsafe.pipeline.transforms import parse_products, parse_purchases, sales_by_product, valid_purchases, with_products

# See test_transforms.py: pyspark's collect() leaves its socket to the garbage collector.
pytestmark = [pytest.mark.spark, pytest.mark.filterwarnings("ignore:unclosed <socket.socket:ResourceWarning")]

NO_DATA_BATCHES = "spark.sql.streaming.noDataMicroBatches.enabled"
PRODUCT = {"product_id": "SF05", "category": "Superfoods Smoothies", "name": "Mango Magic", "size": "24 oz", "price": 5.99, "cogs": 1.5}


def purchase(transaction_id: str, transaction_time: str) -> dict:
    return {
        "transaction_time": transaction_time, "transaction_id": transaction_id, "product_id": "SF05", "price": 5.99,
        "quantity": 1, "is_member": False, "member_discount": 0.0, "add_supplements": False, "supplement_price": 0.0,
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


def three_batches(source: FileSource, query, late_batch: bool = False) -> dict:
    """The batches both tests feed (and a fourth, late one); the last progress report."""
    try:
        source.add(purchase("1", "2024-08-25 12:00:30.000000"))
        query.processAllAvailable()
        source.add(purchase("2", "2024-08-25 12:05:10.000000"), {"not": "a purchase"})  # watermark: 12:05:10 - 1 minute = 12:04:10
        query.processAllAvailable()
        source.add(
            purchase("3", "2024-08-25 12:00:45.000000"),  # older than the watermark, its window already closed
            purchase("4", "2024-08-25 12:04:30.000000"),  # late for its window, but within the watermark
        )
        query.processAllAvailable()
        if late_batch:
            source.add(purchase("5", "2024-08-25 12:00:50.000000"))
            query.processAllAvailable()
        return query.lastProgress
    finally:
        query.stop()


def spark_stateful_rows(spark, kafka_frame, tmp_path, late_batch: bool = False) -> tuple[list[tuple[int, Row]], dict]:
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
    emitted, progress = spark_stateful_rows(spark, kafka_frame, tmp_path)

    assert progress["numInputRows"] == 2
    assert progress["eventTime"]["watermark"] == "2024-08-25T12:04:10.000Z"
    assert progress["stateOperators"][0]["numRowsDroppedByWatermark"] == 1

    latest: dict[tuple, tuple[int, Row]] = {}  # update mode: a key's current total is its row of the largest batch
    for batch_id, row in emitted:
        key = (row.window_start, row.product_id)
        if key not in latest or batch_id > latest[key][0]:
            latest[key] = (batch_id, row)
    totals = [Row(window_start=row.window_start, purchases=row.purchases, revenue=row.revenue) for _, row in latest.values()]
    assertDataFrameEqual(totals, [
        Row(window_start=utc("2024-08-25 12:00:00"), purchases=1, revenue=Decimal("5.99")),
        Row(window_start=utc("2024-08-25 12:04:00"), purchases=1, revenue=Decimal("5.99")),
        Row(window_start=utc("2024-08-25 12:05:00"), purchases=1, revenue=Decimal("5.99")),
    ])
    assert all(row.window_start != utc("2024-08-25 12:00:00") for batch_id, row in emitted if batch_id == progress["batchId"])


def test_the_pipelines_own_state_emits_what_sparks_stateful_aggregation_emits(spark, kafka_frame, utc, tmp_path):
    """Spark without no-data batches (a stateless query has none; docs/pipeline.md, "One query, one read")."""
    spark.conf.set(NO_DATA_BATCHES, "false")
    try:
        spark_rows, spark_progress = spark_stateful_rows(spark, kafka_frame, tmp_path / "spark", late_batch=True)
    finally:
        spark.conf.unset(NO_DATA_BATCHES)

    source = FileSource(tmp_path / "ours", kafka_frame)
    config = PipelineConfig(bootstrap_servers="unused:9", output_dir=tmp_path / "ours" / "output", checkpoint_dir=tmp_path / "ours" / "ck",
                            watermark_delay="1 minute", results_topic=None)
    sink = PipelineBatchSink(config, parse_products(kafka_frame([PRODUCT], topic="demo.products")))
    stream = spark.readStream.schema(KAFKA_SOURCE_SCHEMA).option("maxFilesPerTrigger", 1).parquet(str(source.dir))
    query = (parse_purchases(stream).writeStream.outputMode("append").foreachBatch(sink)
             .option("checkpointLocation", str(config.checkpoint_dir / "q")).start())
    progress = three_batches(source, query, late_batch=True)

    ours = read_sales_rows(config.output_dir)
    assert sorted(ours.columns) == sorted([*SALES_BY_PRODUCT_COLUMNS, "batch_id"])
    mine = _by_rank((r["batch_id"], utc(r["window_start"].strftime("%Y-%m-%d %H:%M:%S")), r["product_id"], r["purchases"],
                     r["quantity"], r["revenue"]) for r in ours.iter_rows(named=True))
    theirs = _by_rank((batch_id, row.window_start, row.product_id, row.purchases, row.quantity, row.revenue) for batch_id, row in spark_rows)
    assert mine == theirs and len(mine) == 4
    dropped = sink.stats[progress["batchId"]]["rows_dropped_by_watermark"]
    assert dropped == spark_progress["stateOperators"][0]["numRowsDroppedByWatermark"] == 1
    assert sink.stats[progress["batchId"]]["watermark"] == spark_progress["eventTime"]["watermark"]
    assert read_dead_letters(config.output_dir)["reason"].to_list() == ["missing transaction_id"]


def _by_rank(rows) -> list[tuple]:
    """Rows with their batch's rank among the batches that emitted any: Spark's stateful query numbers its
    no-data batches (run to move the watermark) too, so the same data batch has another id there."""
    rows = sorted(rows)
    ranks = {batch_id: rank for rank, batch_id in enumerate(sorted({row[0] for row in rows}))}
    return [(ranks[row[0]], *row[1:]) for row in rows]
