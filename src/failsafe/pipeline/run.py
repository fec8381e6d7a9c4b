"""``failsafe pipeline run``: check the cluster, start Spark, run the queries until they stop.

Everything a user can get wrong (no cluster, no topic, no pyspark, no connector) is found here
before the JVM starts, and said in one line.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from failsafe.clients.topics import Topics
from failsafe.errors import FailsafeError, KafkaClientError, UserError
from failsafe.pipeline.job import PipelineConfig, QueryFailed, read_products, start_queries, watch
from failsafe.pipeline.progress import ProgressLog
from failsafe.pipeline.session import SessionSpec, build_session

RESULTS_PARTITIONS = 6


class PipelineError(FailsafeError):
    """A streaming query stopped with an error (exit 1)."""


@dataclass
class RunSummary:
    batches: int = 0
    input_rows: int = 0
    rows_dropped_by_watermark: int = 0
    last_batch: dict = field(default_factory=dict)


def preflight(config: PipelineConfig) -> None:
    """The cluster answers and the input topics exist; the results topic is created if missing."""
    topics = Topics(config.bootstrap_servers)
    existing = set(topics.list())
    for topic in (config.purchases_topic, config.products_topic):
        if topic not in existing:
            raise UserError(f"topic {topic} does not exist at {config.bootstrap_servers}: "
                            "run 'failsafe simulate sales' first (it creates the demo topics)")
    if config.results_topic and config.results_topic not in existing:
        replication = min(3, len(topics.broker_ids()))
        try:
            topics.create(config.results_topic, RESULTS_PARTITIONS, replication, {})
        except KafkaClientError as e:
            if "TOPIC_ALREADY_EXISTS" not in str(e):
                raise


def run_pipeline(config: PipelineConfig, session: SessionSpec, on_batch: Callable[[dict], None] = lambda _: None,
                 stop: threading.Event | None = None) -> RunSummary:
    """Run the queries until they end, one fails, or ``stop`` is set (then they are stopped between polls)."""
    preflight(config)
    spark = build_session(session)
    summary = RunSummary()

    def count(progress: dict) -> None:
        if progress["query"] == "sales-by-product":
            summary.batches += 1
            summary.input_rows += progress["num_input_rows"] or 0
            summary.rows_dropped_by_watermark += progress["rows_dropped_by_watermark"] or 0
            summary.last_batch = progress
        on_batch(progress)

    try:
        queries = start_queries(spark, config, read_products(spark, config))
        try:
            watch(spark, queries, ProgressLog(config.output_dir), count, stop=stop)
        except QueryFailed as e:
            raise PipelineError(f"{e}; the checkpoint in {config.checkpoint_dir} is kept: fix the cause and run again to resume") from e
        finally:
            for query in queries.values():
                if query.isActive:
                    query.stop()
    finally:
        spark.stop()
    return summary
