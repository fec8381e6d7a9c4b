"""The pipeline's edges: Kafka in, the exactly-once sink and Kafka out. Transforms live in transforms.py.

Two streaming queries share one SparkSession:

- ``sales-by-product`` reads ``demo.purchases``, aggregates per product and 1-minute event-time
  window with a watermark (update output mode) and hands every micro-batch to ``SalesBatchSink``,
  which writes it to ``OUTPUT/sales_by_product/batch_id=N`` (replacing what a replay of batch N
  wrote before) and publishes the rows to ``demo.sales-by-product``.
- ``dead-letters`` reads the same topic and appends every record that is not a purchase to
  ``OUTPUT/dead_letters`` with Spark's own exactly-once file sink.

Why exactly-once holds (docs/pipeline.md has the long form): Spark writes a batch's offset range
to the checkpoint before running it and re-runs an uncommitted batch with the same range and the
same state version after a crash, so batch N always produces the same rows; the sink writes them
under N's name and a replay replaces them. A reader takes, per key, the row of the largest batch.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from failsafe.pipeline.progress import ProgressLog
from failsafe.pipeline.sink import DEAD_LETTERS_DIR, SALES_DIR

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming import StreamingQuery

PURCHASES_TOPIC = "demo.purchases"
PRODUCTS_TOPIC = "demo.products"
RESULTS_TOPIC = "demo.sales-by-product"
SALES_QUERY = "sales-by-product"
DEAD_LETTER_QUERY = "dead-letters"
ENRICHED_QUERY = "enriched-purchases"
ENRICHED_TOPIC = "demo.purchases-enriched"
COMMITS_FILE = "_commits.jsonl"
# How long the dead-letter query waits for the sales query's first micro-batch before it starts anyway.
FIRST_BATCH_WAIT_S = 120.0


@dataclass(frozen=True)
class PipelineConfig:
    bootstrap_servers: str
    output_dir: Path
    checkpoint_dir: Path
    trigger_s: float = 5.0
    available_now: bool = False  # process what the topic holds, then stop
    window_duration: str = "1 minute"
    watermark_delay: str = "2 minutes"
    purchases_topic: str = PURCHASES_TOPIC
    products_topic: str = PRODUCTS_TOPIC
    results_topic: str | None = RESULTS_TOPIC
    max_offsets_per_trigger: int | None = None

    def kafka_source_options(self) -> dict[str, str]:
        options = {
            "kafka.bootstrap.servers": self.bootstrap_servers,
            "subscribe": self.purchases_topic,
            "startingOffsets": "earliest",
            # A lost acknowledged record must stop the query loudly, not be skipped.
            "failOnDataLoss": "true",
        }
        if self.max_offsets_per_trigger:
            options["maxOffsetsPerTrigger"] = str(self.max_offsets_per_trigger)
        return options


class SalesBatchSink:
    """foreachBatch target: batch N's rows land under ``batch_id=N``, all or nothing, replaceable."""

    def __init__(self, config: PipelineConfig) -> None:
        self.config = config
        self.root = config.output_dir / SALES_DIR

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        from pyspark.sql import functions as F

        from failsafe.pipeline.transforms import to_kafka_records

        rows = batch.withColumn("batch_id", F.lit(batch_id).cast("long")).persist()
        try:
            # count(), not isEmpty(): every partition must run so that every state store commits the
            # batch (Spark 4.2 fails the query otherwise), and the persisted rows serve both writes.
            if rows.count() == 0:
                return
            self._write_replacing(rows, batch_id)
            if self.config.results_topic:
                (to_kafka_records(rows.drop("batch_id")).write.format("kafka")
                 .option("kafka.bootstrap.servers", self.config.bootstrap_servers)
                 .option("topic", self.config.results_topic).save())
        finally:
            rows.unpersist()

    def _write_replacing(self, rows: DataFrame, batch_id: int) -> None:
        spark = rows.sparkSession
        jvm = spark._jvm  # Hadoop's FileSystem, so the same code works on HDFS or S3 under spark-submit
        final = jvm.org.apache.hadoop.fs.Path(str(self.root / f"batch_id={batch_id:012d}"))
        tmp = jvm.org.apache.hadoop.fs.Path(str(self.root / f"_tmp-{batch_id:012d}-{uuid.uuid4().hex[:8]}"))
        fs = final.getFileSystem(spark._jsc.hadoopConfiguration())
        rows.coalesce(1).write.mode("overwrite").parquet(tmp.toString())
        if fs.exists(final):
            # A replay of a batch that was written but not committed: same offsets, same rows.
            fs.delete(final, True)
        if not fs.rename(tmp, final):
            raise OSError(f"could not rename {tmp.toString()} to {final.toString()}")
        with open(self.root / COMMITS_FILE, "a", encoding="utf-8") as f:
            f.write(json.dumps({"batch_id": batch_id, "written_at": time.time()}) + "\n")


def read_products(spark: SparkSession, config: PipelineConfig) -> DataFrame:
    """The product catalogue as it is now (a batch read of the compacted topic), kept in memory."""
    from failsafe.pipeline.transforms import parse_products

    raw = (spark.read.format("kafka").option("kafka.bootstrap.servers", config.bootstrap_servers)
           .option("subscribe", config.products_topic).option("startingOffsets", "earliest")
           .option("endingOffsets", "latest").load())
    return parse_products(raw).cache()


def start_queries(spark: SparkSession, config: PipelineConfig, products: DataFrame) -> dict[str, StreamingQuery]:
    from failsafe.pipeline.transforms import dead_letters, parse_purchases, sales_by_product, valid_purchases, with_products

    def source() -> DataFrame:
        reader = spark.readStream.format("kafka")
        for key, value in config.kafka_source_options().items():
            reader = reader.option(key, value)
        return parse_purchases(reader.load())

    def trigger(writer):
        return writer.trigger(availableNow=True) if config.available_now else writer.trigger(processingTime=f"{config.trigger_s:g} seconds")

    sales = sales_by_product(with_products(valid_purchases(source()), products), config.window_duration, config.watermark_delay)
    sales_writer = (sales.writeStream.queryName(SALES_QUERY).outputMode("update")
                    .option("checkpointLocation", str(config.checkpoint_dir / SALES_QUERY))
                    .foreachBatch(SalesBatchSink(config)))
    letters_writer = (dead_letters(source()).writeStream.queryName(DEAD_LETTER_QUERY).outputMode("append").format("parquet")
                      .option("path", str(config.output_dir / DEAD_LETTERS_DIR))
                      .option("checkpointLocation", str(config.checkpoint_dir / DEAD_LETTER_QUERY)))
    sales_query = trigger(sales_writer).start()
    # The first micro-batch of each query compiles its code and plans its sources; on local[2] the two
    # first batches side by side took 15-17 s for the sales query, alone 10-11 s (docs/benchmarks.md).
    # The dead letters can wait for it.
    deadline = time.monotonic() + FIRST_BATCH_WAIT_S
    while sales_query.isActive and sales_query.lastProgress is None and time.monotonic() < deadline:
        sales_query.awaitTermination(0.25)
    return {SALES_QUERY: sales_query, DEAD_LETTER_QUERY: trigger(letters_writer).start()}


def start_enriched_query(spark: SparkSession, config: PipelineConfig, products: DataFrame, topic: str,
                         realtime_s: float | None = None) -> dict[str, StreamingQuery]:
    """The stateless query: valid purchases with their product, published to ``topic`` (Spark's Kafka sink, at least once).

    ``realtime_s``: run under Spark's real-time trigger (4.1+) with that checkpoint interval: each task reads
    its Kafka partition for the whole interval and passes records on as they come, instead of one
    micro-batch per trigger. It needs a task slot per Kafka partition (run.py checks).
    """
    from failsafe.pipeline.transforms import enriched_records, parse_purchases, valid_purchases, with_products

    reader = spark.readStream.format("kafka")
    for key, value in config.kafka_source_options().items():
        reader = reader.option(key, value)
    records = enriched_records(with_products(valid_purchases(parse_purchases(reader.load())), products))
    writer = (records.writeStream.queryName(ENRICHED_QUERY).format("kafka").outputMode("update")
              .option("kafka.bootstrap.servers", config.bootstrap_servers).option("topic", topic)
              .option("checkpointLocation", str(config.checkpoint_dir / ENRICHED_QUERY)))
    if realtime_s is not None:
        writer = writer.trigger(realTime=f"{realtime_s:g} seconds")
    elif config.available_now:
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime=f"{config.trigger_s:g} seconds")
    return {ENRICHED_QUERY: writer.start()}


def watch(spark: SparkSession, queries: dict[str, StreamingQuery], log: ProgressLog, on_batch: Callable[[dict], None],
          poll_s: float = 1.0, stop: threading.Event | None = None) -> None:
    """Until every query has stopped, or ``stop`` is set: log each finished micro-batch; a failed query stops them all.

    ``stop`` is how a signal ends the run: raising in the signal handler instead could land inside a
    py4j call, leave the gateway out of step with the JVM, and hang the stop of the queries.
    """
    stop = stop or threading.Event()
    while not stop.is_set():
        for name, query in queries.items():
            for progress in log.record_new(name, query.recentProgress):
                on_batch(progress)
        failed = [(name, q.exception()) for name, q in queries.items() if not q.isActive and q.exception() is not None]
        if failed:
            for q in queries.values():
                if q.isActive:
                    q.stop()
            name, error = failed[0]
            raise QueryFailed(name, error)
        if not any(q.isActive for q in queries.values()):
            for name, query in queries.items():
                for progress in log.record_new(name, query.recentProgress):
                    on_batch(progress)
            return
        _await_any_termination(spark, poll_s)


def _await_any_termination(spark: SparkSession, timeout_s: float) -> None:
    """Wait on Spark's own termination signal; the timeout only paces progress logging."""
    from pyspark.errors import StreamingQueryException

    try:
        spark.streams.awaitAnyTermination(timeout_s)
    except StreamingQueryException:
        pass  # the caller reads the failure from the query itself
    spark.streams.resetTerminated()


class QueryFailed(RuntimeError):
    def __init__(self, query: str, error: object) -> None:
        self.query = query
        self.description = first_line(str(getattr(error, "desc", None) or error))
        super().__init__(f"streaming query {query} stopped: {self.description}")


def first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:400]
    return "no message"
