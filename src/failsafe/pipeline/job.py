"""The pipeline's edges: Kafka in, the exactly-once sink and Kafka out. Transforms live in transforms.py.

One streaming query, ``sales-by-product``, reads ``demo.purchases`` once and parses each record
once; its ``foreachBatch`` sink (``PipelineBatchSink``) does both outputs of micro-batch N:

- the records that are not purchases go to ``OUTPUT/dead_letters/batch_id=N``;
- the purchases, with their product, are summed per product and 1-minute event-time window and
  added to the running totals of the batches before N (``sales_state.py``: Spark's watermark rules
  for a windowed aggregation in update mode, the state one file per batch under the checkpoint);
  every total batch N changed goes to ``OUTPUT/sales_by_product/batch_id=N`` and to
  ``demo.sales-by-product``.

Why one query: two queries (a stateful one for sales, a second for the dead letters) each read and
parsed the whole topic; on two cores the second read cost as much as the aggregation
(docs/benchmarks.md, "The pipeline at speed").

Why exactly-once holds (docs/pipeline.md has the long form): Spark writes a batch's offset range
to the checkpoint before running it and re-runs an uncommitted batch with the same range after a
crash; batch N starts from the state of batch N-1, so it always produces the same rows; the sink
writes them under N's name and a replay replaces them. A reader takes, per key, the row of the
largest batch.
"""

from __future__ import annotations

import json
import shutil
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from failsafe.pipeline.progress import ProgressLog
from failsafe.pipeline.sales_state import BatchTotals, SalesStateStore, WindowTotals, apply_batch, interval_us
from failsafe.pipeline.sink import DEAD_LETTERS_DIR, SALES_DIR

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming import StreamingQuery

PURCHASES_TOPIC = "demo.purchases"
PRODUCTS_TOPIC = "demo.products"
RESULTS_TOPIC = "demo.sales-by-product"
SALES_QUERY = "sales-by-product"
ENRICHED_QUERY = "enriched-purchases"
ENRICHED_TOPIC = "demo.purchases-enriched"
COMMITS_FILE = "_commits.jsonl"
SALES_STATE_DIR = "sales-state"


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


class PipelineBatchSink:
    """foreachBatch target of the one query: batch N's dead letters and sales totals, each under ``batch_id=N``.

    ``stats[N]`` says what batch N did to the state (rows kept, purchases dropped as late, the
    watermark it used), for the progress log: Spark sees a stateless query and cannot say it.
    """

    def __init__(self, config: PipelineConfig, products: DataFrame) -> None:
        self.config = config
        self.products = products
        self.state = SalesStateStore(config.checkpoint_dir / SALES_STATE_DIR)
        self.delay_us = interval_us(config.watermark_delay)
        self.stats: dict[int, dict] = {}
        self._warm = False

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        from failsafe.pipeline.transforms import batch_window_totals, dead_letters, valid_purchases, with_products

        state = self.state.before(batch_id)
        parsed = batch.persist()
        try:
            # The first job reads and parses the batch into memory; the others run on that copy.
            sums = batch_window_totals(with_products(valid_purchases(parsed), self.products), self.config.window_duration).collect()
            letters = dead_letters(parsed)
            if not letters.isEmpty():
                _write_replacing(letters, self.config.output_dir / DEAD_LETTERS_DIR, batch_id)
        finally:
            parsed.unpersist()
        result = apply_batch(state, [BatchTotals(WindowTotals(*row[:-1]), row[-1]) for row in sums], self.delay_us)
        if result.updated:
            self._emit(batch.sparkSession, result.updated, batch_id)
        elif not self._warm:
            self._warm_up(batch.sparkSession)
        self._warm = True
        self.state.write(batch_id, result.state)
        self.stats[batch_id] = {"state_rows": len(result.state.totals), "rows_dropped_by_watermark": result.late_purchases,
                                "watermark": _iso(state.watermark_us)}
        for old in [n for n in self.stats if n < batch_id - 100]:
            del self.stats[old]

    def annotate(self, query: str, batch_id: int) -> dict:
        """What batch ``batch_id`` did to the sales state (ProgressLog's ``annotate``)."""
        return self.stats.get(batch_id, {}) if query == SALES_QUERY else {}

    def _warm_up(self, spark: SparkSession) -> None:
        """The first batch had nothing to emit (the pipeline started before the data): write nothing once, so that
        the first batch with data does not also pay for loading the Parquet writer and the Kafka producer."""
        from failsafe.pipeline.transforms import sales_rows

        rows = sales_rows(spark, [])
        scratch = self.config.output_dir / SALES_DIR / f"_warm-up-{uuid.uuid4().hex[:8]}"
        with self._publishing(rows):
            rows.coalesce(1).write.parquet(str(scratch))
        shutil.rmtree(scratch, ignore_errors=True)

    def _emit(self, spark: SparkSession, updated: list[WindowTotals], batch_id: int) -> None:
        from failsafe.pipeline.transforms import sales_rows

        rows = sales_rows(spark, [(t.window_start_us, t.window_end_us, t.product_id, t.product_name, t.category, t.purchases,
                                   t.quantity, t.revenue, t.member_purchases) for t in updated])
        with self._publishing(rows):
            _write_replacing(rows, self.config.output_dir / SALES_DIR, batch_id)
            with open(self.config.output_dir / SALES_DIR / COMMITS_FILE, "a", encoding="utf-8") as f:
                f.write(json.dumps({"batch_id": batch_id, "written_at": time.time()}) + "\n")

    @contextmanager
    def _publishing(self, rows: DataFrame) -> Iterator[None]:
        """``rows`` published to the results topic by a Spark job of their own, run beside the body's (two small jobs
        each mostly wait on scheduling; side by side they take the time of one). Both must succeed for the batch to."""
        from failsafe.pipeline.transforms import to_kafka_records

        if not self.config.results_topic:
            yield
            return
        writer = (to_kafka_records(rows).write.format("kafka").option("kafka.bootstrap.servers", self.config.bootstrap_servers)
                  .option("topic", self.config.results_topic))
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="publish") as pool:
            published = pool.submit(writer.save)
            yield
            published.result()


def _write_replacing(rows: DataFrame, root: Path, batch_id: int) -> None:
    """``rows`` as ``root/batch_id=N`` (one Parquet file), all or nothing: written aside, then renamed over a replay's."""
    spark = rows.sparkSession
    jvm = spark._jvm  # Hadoop's FileSystem, so the same code works on HDFS or S3 under spark-submit
    final = jvm.org.apache.hadoop.fs.Path(str(root / f"batch_id={batch_id:012d}"))
    tmp = jvm.org.apache.hadoop.fs.Path(str(root / f"_tmp-{batch_id:012d}-{uuid.uuid4().hex[:8]}"))
    fs = final.getFileSystem(spark._jsc.hadoopConfiguration())
    rows.coalesce(1).write.mode("overwrite").parquet(tmp.toString())
    if fs.exists(final):
        # A replay of a batch that was written but not committed: same offsets, same rows.
        fs.delete(final, True)
    if not fs.rename(tmp, final):
        raise OSError(f"could not rename {tmp.toString()} to {final.toString()}")


def _iso(us: int) -> str:
    seconds, micros = divmod(us, 1_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{micros // 1000:03d}Z"


def read_products(spark: SparkSession, config: PipelineConfig) -> DataFrame:
    """The product catalogue as it is now (a batch read of the compacted topic), kept in memory."""
    from failsafe.pipeline.transforms import parse_products

    raw = (spark.read.format("kafka").option("kafka.bootstrap.servers", config.bootstrap_servers)
           .option("subscribe", config.products_topic).option("startingOffsets", "earliest")
           .option("endingOffsets", "latest").load())
    return parse_products(raw).cache()


def start_queries(spark: SparkSession, config: PipelineConfig, products: DataFrame) -> tuple[dict[str, StreamingQuery], PipelineBatchSink]:
    """The one query (module docstring) and its sink, whose ``stats`` annotate the progress log."""
    from failsafe.pipeline.transforms import parse_purchases

    reader = spark.readStream.format("kafka")
    for key, value in config.kafka_source_options().items():
        reader = reader.option(key, value)
    sink = PipelineBatchSink(config, products)
    writer = (parse_purchases(reader.load()).writeStream.queryName(SALES_QUERY).outputMode("append")
              .option("checkpointLocation", str(config.checkpoint_dir / SALES_QUERY)).foreachBatch(sink))
    writer = writer.trigger(availableNow=True) if config.available_now else writer.trigger(processingTime=f"{config.trigger_s:g} seconds")
    return {SALES_QUERY: writer.start()}, sink


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
