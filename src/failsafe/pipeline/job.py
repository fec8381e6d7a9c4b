"""The pipeline's edges: Kafka in, the exactly-once sink and Kafka out. Transforms live in transforms.py.

One streaming query, ``sales-by-product``, reads ``demo.purchases`` once and parses each record
once (transforms.sales_and_dead_letters); its ``foreachBatch`` sink (``SalesBatchSink``) writes
both outputs of micro-batch N:

- the records that are not purchases go to ``OUTPUT/dead_letters/batch_id=N``;
- the purchases, with their product, are summed per product and 1-minute event-time window by
  Spark's stateful aggregation in update mode (the running totals in Spark's state store, under
  the query's checkpoint; the watermark and the late purchases are Spark's); every total batch N
  changed goes to ``OUTPUT/sales_by_product/batch_id=N`` and to ``demo.sales-by-product``: exactly once
  by default, in one Kafka transaction per output partition with a marker of the batch (publish.py),
  or at least once by Spark's own Kafka sink (``publish = "at-least-once"``).

The outputs are written by the executors; the driver collects two counts per batch.

Why exactly-once holds (docs/pipeline.md has the long form): Spark writes a batch's offset range
to the checkpoint before running it and re-runs an uncommitted batch with the same range after a
crash; the state store keeps one version per batch and batch N always starts from version N-1,
so it produces the same rows; the sink writes them under N's name and a replay replaces them. A
reader takes, per key, the row of the largest batch. In Kafka a replay cannot replace what it wrote:
there the marker of each partition's transaction says the batch was published, and a replay skips it.
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
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from failsafe.pipeline.progress import ProgressLog
from failsafe.pipeline.publish import EXACTLY_ONCE, Publication, publish_rows, transactional_prefix
from failsafe.pipeline.sink import DEAD_LETTERS_DIR, SALES_DIR
from failsafe.tools import connections

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming import StreamingQuery

PURCHASES_TOPIC = "demo.purchases"
PRODUCTS_TOPIC = "demo.products"
RESULTS_TOPIC = "demo.sales-by-product"
SALES_QUERY = "sales-by-product"
ENRICHED_QUERY = "enriched-purchases"
ENRICHED_TOPIC = "demo.purchases-enriched"
RESULTS_PARTITIONS = 6  # a results topic the pipeline creates when it is missing (the enriched topic among them)
COMMITS_FILE = "_commits.jsonl"
PUBLISHED_FILE = "_published.jsonl"  # OUTPUT/: per batch, what each output partition's transaction did
PUBLISHING_FILE = "_publishing.jsonl"  # OUTPUT/: per batch, when its publishing job started (either mode)
# The results topic gets a batch's changed totals at once (~15,000 records of JSON after a 50,000-purchase batch).
# With the producer's defaults (batch.size 16 KB, linger.ms 5) each task's records leave as hundreds of small
# requests, each waiting on acks=all; larger batches send them in a few (docs/benchmarks.md, "The pipeline's state
# in Spark", has the publish stage before and after). acks stay Kafka's default, all.
RESULTS_PRODUCER_OPTIONS = {"kafka.linger.ms": "20", "kafka.batch.size": str(512 * 1024)}


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
    publish: str = EXACTLY_ONCE  # or publish.AT_LEAST_ONCE: Spark's Kafka sink
    results_partitions: int = RESULTS_PARTITIONS  # the results topic's, as preflight found it
    transactional_prefix: str | None = None  # None: from Spark's id of the query (publish.py)

    def kafka_options(self) -> dict[str, str]:
        """Where Spark's Kafka source and sink find the cluster, and on a secured cluster how they reach it, as
        failsafe's client user (tools/connections.py)."""
        security = connections.security_for(self.bootstrap_servers)
        return {"kafka.bootstrap.servers": self.bootstrap_servers, **(security.spark_options() if security else {})}

    def kafka_source_options(self) -> dict[str, str]:
        options = {
            **self.kafka_options(),
            "subscribe": self.purchases_topic,
            "startingOffsets": "earliest",
            # A lost acknowledged record must stop the query loudly, not be skipped.
            "failOnDataLoss": "true",
        }
        if self.max_offsets_per_trigger:
            options["maxOffsetsPerTrigger"] = str(self.max_offsets_per_trigger)
        return options


class SalesBatchSink:
    """foreachBatch target of the one query: batch N's sales rows and dead letters, each under ``batch_id=N``."""

    def __init__(self, config: PipelineConfig, producer_options: dict[str, str] | None = None) -> None:
        self.config = config
        self.producer_options = RESULTS_PRODUCER_OPTIONS if producer_options is None else producer_options
        self._publication: Publication | None = None

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        from failsafe.pipeline.transforms import KIND_DEAD_LETTER, KIND_SALES, output_rows

        outputs = batch.persist()
        try:
            # One job runs the batch (the stateful operator included) into memory and counts each kind;
            # the writes below read that copy. A copy lost to an executor is computed again from the same
            # offsets and state version: the same rows.
            counts = dict(outputs.groupBy("kind").count().collect())
            sales = output_rows(outputs, KIND_SALES)
            if counts.get(KIND_SALES):
                self._emit(sales, batch_id)
            if counts.get(KIND_DEAD_LETTER):
                _write_replacing(
                    output_rows(outputs, KIND_DEAD_LETTER), self.config.output_dir / DEAD_LETTERS_DIR, batch_id
                )
        finally:
            outputs.unpersist()

    def warm_up(self, outputs: DataFrame) -> None:
        """Before the query starts: write and publish nothing once, in the shape of ``outputs`` (the streaming query's
        rows), so that the first batch does not also pay for loading the Parquet writer, the Kafka producer and the
        executors' Python workers."""
        from failsafe.pipeline.transforms import KIND_SALES, output_rows

        spark = outputs.sparkSession
        empty = output_rows(spark.createDataFrame(spark.sparkContext.emptyRDD(), outputs.schema), KIND_SALES)
        scratch = self.config.output_dir / SALES_DIR / f"_warm-up-{uuid.uuid4().hex[:8]}"
        with self._publishing(empty, None):
            empty.coalesce(1).write.parquet(str(scratch))
        shutil.rmtree(scratch, ignore_errors=True)

    def _emit(self, rows: DataFrame, batch_id: int) -> None:
        """Batch N's totals to the Parquet sink and the results topic; ``_commits.jsonl`` says when each was visible
        (``written_at``: the rename; ``published_at``: the publishing job's end, null without a results topic)."""
        with self._publishing(rows, batch_id):
            _write_replacing(rows, self.config.output_dir / SALES_DIR, batch_id)
            written_at = time.time()
        line = {
            "batch_id": batch_id,
            "written_at": written_at,
            "published_at": time.time() if self.config.results_topic else None,
        }
        with open(self.config.output_dir / SALES_DIR / COMMITS_FILE, "a", encoding="utf-8") as f:
            f.write(json.dumps(line) + "\n")

    @contextmanager
    def _publishing(self, rows: DataFrame, batch_id: int | None) -> Iterator[None]:
        """``rows`` published to the results topic by a Spark job of their own, run beside the body's (two small jobs
        each mostly wait on scheduling; side by side they take the time of one). Both must succeed for the batch to.
        ``batch_id`` None: the warm-up, which has no rows."""
        from failsafe.pipeline.transforms import to_kafka_records

        if not self.config.results_topic:
            yield
            return
        records = to_kafka_records(rows, -1 if batch_id is None else batch_id)
        if self.config.publish == EXACTLY_ONCE:
            job = partial(self._publish_exactly_once, records, batch_id)
        else:
            job = (
                records.write.format("kafka")
                .options(**self.config.kafka_options())
                .option("topic", self.config.results_topic)
                .options(**self.producer_options)
                .save
            )
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="publish") as pool:
            published = pool.submit(job)
            if batch_id is not None:
                line = {"batch_id": batch_id, "publish": self.config.publish, "started_at": time.time()}
                with open(self.config.output_dir / PUBLISHING_FILE, "a", encoding="utf-8") as f:
                    f.write(json.dumps(line) + "\n")
            yield
            published.result()

    def publication(self, spark: SparkSession) -> Publication:
        """Where the totals go and under which transactional ids, found once (the query's id from its checkpoint)."""
        if self._publication is None:
            config = self.config
            assert config.results_topic is not None
            prefix = config.transactional_prefix or transactional_prefix(
                SALES_QUERY, _query_id(spark, config.checkpoint_dir / SALES_QUERY)
            )
            self._publication = Publication(
                config.bootstrap_servers, config.results_topic, config.results_partitions, prefix
            )
        return self._publication

    def _publish_exactly_once(self, records: DataFrame, batch_id: int | None) -> None:
        """Each output partition's rows written by one task in one transaction with the batch's marker (publish.py);
        what each did is appended to ``OUTPUT/_published.jsonl``."""
        from pyspark.sql import functions as F

        if batch_id is None:
            # The warm-up's rows are none, so no task opens a producer: the ids need the query's, which a new
            # checkpoint has only once the query has started.
            assert self.config.results_topic is not None
            publication = Publication(
                self.config.bootstrap_servers, self.config.results_topic, self.config.results_partitions, ""
            )
        else:
            publication = self.publication(records.sparkSession)
        keyed = records.withColumn("partition", F.pmod(F.hash("key"), F.lit(publication.partitions)))
        started = time.monotonic()
        outcomes = (
            keyed.repartition(publication.partitions, "partition")
            .rdd.mapPartitions(partial(publish_rows, publication, -1 if batch_id is None else batch_id))
            .collect()
        )
        if batch_id is None:
            return
        line = {
            "batch_id": batch_id,
            "transactional_prefix": publication.prefix,
            "partitions": outcomes,
            "elapsed_ms": round((time.monotonic() - started) * 1000, 1),
            "written_at": time.time(),
        }
        with open(self.config.output_dir / PUBLISHED_FILE, "a", encoding="utf-8") as f:
            f.write(json.dumps(line) + "\n")


def _query_id(spark: SparkSession, checkpoint: Path) -> str:
    """Spark's id of the query, from its checkpoint's ``metadata`` file (through Hadoop's FileSystem, as the sink)."""
    jvm = spark._jvm
    path = jvm.org.apache.hadoop.fs.Path(str(checkpoint / "metadata"))
    stream = path.getFileSystem(spark._jsc.hadoopConfiguration()).open(path)
    reader = jvm.java.io.BufferedReader(jvm.java.io.InputStreamReader(stream, "UTF-8"))
    try:
        return str(json.loads(reader.readLine())["id"])
    finally:
        reader.close()


def _write_replacing(rows: DataFrame, root: Path, batch_id: int) -> None:
    """``rows`` as ``root/batch_id=N`` (one Parquet file), all or nothing: written aside, then renamed over a
    replay's."""
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


def read_products(spark: SparkSession, config: PipelineConfig) -> DataFrame:
    """The product catalogue as it is now (a batch read of the compacted topic), read at once and kept in memory."""
    from failsafe.pipeline.transforms import parse_products

    raw = (
        spark.read.format("kafka")
        .options(**config.kafka_options())
        .option("subscribe", config.products_topic)
        .option("startingOffsets", "earliest")
        .option("endingOffsets", "latest")
        .load()
    )
    products = parse_products(raw).cache()
    products.count()  # read now, before the query starts, not in its first batch
    return products


def start_queries(spark: SparkSession, config: PipelineConfig, products: DataFrame) -> dict[str, StreamingQuery]:
    """The one query (module docstring), its state in Spark's state store under its checkpoint."""
    from failsafe.pipeline.transforms import parse_purchases, sales_and_dead_letters

    reader = spark.readStream.format("kafka")
    for key, value in config.kafka_source_options().items():
        reader = reader.option(key, value)
    outputs = sales_and_dead_letters(
        parse_purchases(reader.load()), products, config.window_duration, config.watermark_delay
    )
    sink = SalesBatchSink(config)
    sink.warm_up(outputs)
    writer = (
        outputs.writeStream.queryName(SALES_QUERY)
        .outputMode("update")
        .option("checkpointLocation", str(config.checkpoint_dir / SALES_QUERY))
        .foreachBatch(sink)
    )
    writer = (
        writer.trigger(availableNow=True)
        if config.available_now
        else writer.trigger(processingTime=f"{config.trigger_s:g} seconds")
    )
    return {SALES_QUERY: writer.start()}


def start_enriched_query(
    spark: SparkSession, config: PipelineConfig, products: DataFrame, topic: str, realtime_s: float | None = None
) -> dict[str, StreamingQuery]:
    """The stateless query: valid purchases with their product, published to ``topic`` (Spark's Kafka sink, at least
    once).

    ``realtime_s``: run under Spark's real-time trigger (4.1+) with that checkpoint interval: each task reads
    its Kafka partition for the whole interval and passes records on as they come, instead of one
    micro-batch per trigger. It needs a task slot per Kafka partition (run.py checks).
    """
    from failsafe.pipeline.transforms import enriched_records, parse_purchases, valid_purchases, with_products

    reader = spark.readStream.format("kafka")
    for key, value in config.kafka_source_options().items():
        reader = reader.option(key, value)
    records = enriched_records(with_products(valid_purchases(parse_purchases(reader.load())), products))
    writer = (
        records.writeStream.queryName(ENRICHED_QUERY)
        .format("kafka")
        .outputMode("update")
        .options(**config.kafka_options())
        .option("topic", topic)
        .option("checkpointLocation", str(config.checkpoint_dir / ENRICHED_QUERY))
    )
    if realtime_s is not None:
        writer = writer.trigger(realTime=f"{realtime_s:g} seconds")
    elif config.available_now:
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime=f"{config.trigger_s:g} seconds")
    return {ENRICHED_QUERY: writer.start()}


def watch(
    spark: SparkSession,
    queries: dict[str, StreamingQuery],
    log: ProgressLog,
    on_batch: Callable[[dict], None],
    poll_s: float = 1.0,
    stop: threading.Event | None = None,
) -> None:
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
