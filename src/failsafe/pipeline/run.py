"""``failsafe pipeline run``: check the cluster, start Spark, run the queries until they stop.

Everything a user can get wrong (no cluster, no topic, no pyspark, no connector) is found here
before the JVM starts, and said in one line.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from failsafe.errors import FailsafeError, KafkaClientError, UserError
from failsafe.pipeline.checkpoint import check_layout, write_layout
from failsafe.pipeline.intervals import interval_us
from failsafe.pipeline.job import (
    ENRICHED_QUERY,
    RESULTS_PARTITIONS,
    SALES_QUERY,
    PipelineConfig,
    QueryFailed,
    first_line,
    read_products,
    start_enriched_query,
    start_queries,
    watch,
)
from failsafe.pipeline.progress import Annotate, ProgressLog
from failsafe.pipeline.publish import EXACTLY_ONCE, marker_group, published_up_to
from failsafe.pipeline.session import SessionSpec, build_session
from failsafe.pipeline.state_census import state_locations
from failsafe.tools.admin import client_config
from failsafe.tools.connections import CLIENT
from failsafe.tools.retry import retrying
from failsafe.tools.topics import Topics
from failsafe.waiting import WaitTimeout, wait_until

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming import StreamingQuery


class PipelineError(FailsafeError):
    """A streaming query stopped with an error (exit 1)."""


@dataclass
class RunSummary:
    batches: int = 0
    input_rows: int = 0
    rows_dropped_by_watermark: int = 0
    last_batch: dict = field(default_factory=dict)


def preflight(config: PipelineConfig, extra_topics: tuple[str, ...] = ()) -> PipelineConfig:
    """The cluster answers and the input topics exist; the results topic and ``extra_topics`` are created if missing.
    Returns ``config`` with the results topic's partition count."""
    try:
        interval_us(config.watermark_delay)
    except ValueError as e:
        raise UserError(f"--watermark: {e}") from e
    topics = Topics(config.bootstrap_servers)
    existing = set(topics.list())
    for topic in (config.purchases_topic, config.products_topic):
        if topic not in existing:
            raise UserError(
                f"topic {topic} does not exist at {config.bootstrap_servers}: "
                "run 'failsafe simulate sales' first (it creates the demo topics)"
            )
    for topic in (config.results_topic, *extra_topics):
        if topic and topic not in existing:
            replication = min(3, len(topics.broker_ids()))
            try:
                topics.create(topic, RESULTS_PARTITIONS, replication, {})
            except KafkaClientError as e:
                if "TOPIC_ALREADY_EXISTS" not in str(e):
                    raise
    if not config.results_topic:
        return config
    # Exactly-once publishing writes each output partition from one task: it needs their number. A topic just created
    # may not be known to the broker asked yet (UNKNOWN_TOPIC_OR_PART): asked again.
    results_topic = config.results_topic
    (info,) = retrying(lambda: topics.describe([results_topic]), f"describing {results_topic}")
    config = replace(config, results_partitions=len(info.partitions))
    if config.publish == EXACTLY_ONCE and config.transactional_prefix:
        _refuse_a_used_prefix(config)
    return config


def _refuse_a_used_prefix(config: PipelineConfig, timeout_s: float = 60.0) -> None:
    """A new checkpoint starts at batch 0: a marker group of the prefix that holds offsets already would make it skip
    the batches an earlier query published under the same ids. Said in one line, before Spark starts.

    Read with a consumer of the group, as the publishing tasks read it: the admin client's ListConsumerGroupOffsets
    crashed this process once (SIGSEGV in librdkafka 2.16.0's OffsetFetch handling of NOT_COORDINATOR for a group it
    had not seen: confluentinc/librdkafka#5040)."""
    from confluent_kafka import Consumer, KafkaException

    if (config.checkpoint_dir / SALES_QUERY / "commits").is_dir():
        return  # a restart of the query that owns the prefix
    group = marker_group(config.transactional_prefix or "")
    consumer = Consumer(
        client_config(
            config.bootstrap_servers,
            CLIENT,
            **{"group.id": group, "enable.auto.commit": False, "isolation.level": "read_committed"},
        )
    )
    partitions = list(range(config.results_partitions))
    try:
        committed = wait_until(
            lambda: published_up_to(consumer, config.results_topic, partitions),
            timeout_s,
            f"cannot read the offsets of {group}",
            retry_on=(KafkaException,),
        )
    except WaitTimeout as e:
        raise KafkaClientError(f"{e} within {timeout_s:g}s: {e.__cause__ or 'no answer'}") from e
    finally:
        consumer.close()
    if any(offset is not None for offset in committed.values()):
        raise UserError(
            f"--transactional-id-prefix {config.transactional_prefix}: its marker group {group} holds offsets of an "
            f"earlier query, and {config.checkpoint_dir} is a new checkpoint, which would skip the batches that query "
            "published; use a new prefix, or delete the group (failsafe kafka consumer-groups --delete --group "
            f"{group})"
        )


def run_pipeline(
    config: PipelineConfig,
    session: SessionSpec,
    on_batch: Callable[[dict], None] = lambda _: None,
    stop: threading.Event | None = None,
    enriched_topic: str | None = None,
) -> RunSummary:
    """Run the queries until they end, one fails, or ``stop`` is set (then they are stopped between polls).

    ``enriched_topic``: the enriched purchase stream to that topic too, in the same Spark session (its own query and
    checkpoint; Spark's Kafka sink, at least once), so that a fault of the driver hits both."""
    check_layout(config.checkpoint_dir)
    config = preflight(config, (enriched_topic,) if enriched_topic else ())
    write_layout(config.checkpoint_dir)

    def start(spark: SparkSession, products: DataFrame) -> dict[str, StreamingQuery]:
        queries = start_queries(spark, config, products)
        if enriched_topic:
            queries |= start_enriched_query(spark, config, products, enriched_topic)
        return queries

    return _run(config, session, on_batch, stop, start, SALES_QUERY)


def run_enrich(
    config: PipelineConfig,
    session: SessionSpec,
    topic: str,
    realtime_s: float | None,
    on_batch: Callable[[dict], None] = lambda _: None,
    stop: threading.Event | None = None,
) -> RunSummary:
    """The enriched purchase stream to ``topic``, micro-batch or real-time, until stopped or drained (available-now)."""
    preflight(replace(config, results_topic=topic))
    if realtime_s is not None:
        _check_task_slots(config, session.master)
    return _run(
        config,
        session,
        on_batch,
        stop,
        lambda spark, products: start_enriched_query(spark, config, products, topic, realtime_s),
        ENRICHED_QUERY,
    )


def task_slots(master: str | None) -> int | None:
    """Cores Spark runs tasks on for ``local``, ``local[N]``, ``local[N,F]`` and ``local[*]``; None for a cluster (not
    known here)."""
    if master == "local":
        return 1
    if master is None or not (master.startswith("local[") and master.endswith("]")):
        return None
    threads = master[len("local[") : -1].split(",")[0]
    if threads == "*":
        return os.cpu_count() or 1
    return int(threads) if threads.isdigit() else None


def _check_task_slots(config: PipelineConfig, master: str | None) -> None:
    (info,) = Topics(config.bootstrap_servers).describe([config.purchases_topic])
    slots = task_slots(master)
    if slots is not None and slots < len(info.partitions):
        raise UserError(
            f"real-time mode needs a task slot per Kafka partition: {config.purchases_topic} has "
            f"{len(info.partitions)}, "
            f"--master {master} gives {slots}; use --master local[{len(info.partitions)}] or more"
        )


def _run(
    config: PipelineConfig,
    session: SessionSpec,
    on_batch: Callable[[dict], None],
    stop: threading.Event | None,
    start: Callable,
    counted: str,
) -> RunSummary:
    """Start the queries and watch them; the summary counts the batches of ``counted``."""
    spark = build_session(session)
    summary = RunSummary()

    def count(progress: dict) -> None:
        if progress["query"] == counted:
            summary.batches += 1
            summary.input_rows += progress["num_input_rows"] or 0
            summary.rows_dropped_by_watermark += progress["rows_dropped_by_watermark"] or 0
            summary.last_batch = progress
        on_batch(progress)

    try:
        queries = start(spark, read_products(spark, config))
        try:
            watch(
                spark,
                queries,
                ProgressLog(config.output_dir, _state_locations(spark, queries, config)),
                count,
                stop=stop,
            )
        except QueryFailed as e:
            raise PipelineError(
                f"{e}; the checkpoint in {config.checkpoint_dir} is kept: fix the cause and run again to resume"
            ) from e
        finally:
            for query in queries.values():
                if query.isActive:
                    query.stop()
    finally:
        spark.stop()
    return summary


def _state_locations(
    spark: SparkSession, queries: dict[str, StreamingQuery], config: PipelineConfig
) -> Annotate | None:
    """The progress log's annotation of a sales batch: which executor holds each state partition (state_census.py)."""
    from py4j.protocol import Py4JError

    if SALES_QUERY not in queries:
        return None

    def annotate(query: str, line: dict) -> dict:
        if query != SALES_QUERY or not line.get("state_partitions") or not queries[SALES_QUERY].isActive:
            return {}  # a stopped query's partitions are unloaded: the coordinator knows no location any more
        try:
            return {
                "state_locations": state_locations(
                    spark, queries[SALES_QUERY], str(config.checkpoint_dir / SALES_QUERY), line["state_partitions"]
                )
            }
        except Py4JError as e:  # Spark internals moved: the census is lost, the run is not
            return {"state_locations": None, "state_locations_error": first_line(str(e))}

    return annotate
