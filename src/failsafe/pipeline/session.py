"""The SparkSession failsafe runs on: loopback only, UTC, few shuffle partitions, UI off.

On ``local[*]`` Spark binds the machine's external address unless told otherwise, and its Python
workers start with whatever ``python3`` is first on the PATH, which lacks our packages:
both are pinned here before the JVM starts. On a Spark cluster (``spark-submit``) the session
already exists and ``build_session`` only adds what is missing.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from failsafe.pipeline.standalone import is_loopback_master
from failsafe.tools import connections

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DEFAULT_MASTER = "local[2]"
# The sales query's running totals live in Spark's state store: RocksDB (off the JVM heap, so a large state does not
# grow the executors' garbage-collected memory), checkpointed as a changelog per batch instead of a snapshot upload
# (docs/benchmarks.md, "The pipeline's state in Spark", has what each cost). Spark keeps the provider of a query in
# its checkpoint: a query restarted from one keeps the provider it was started with.
STATE_STORE_CONF = {
    "spark.sql.streaming.stateStore.providerClass": "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",  # noqa: E501
    "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
}
DEFAULT_SHUFFLE_PARTITIONS = 4


@dataclass(frozen=True)
class SessionSpec:
    app_name: str = "failsafe-pipeline"
    master: str | None = DEFAULT_MASTER  # None: take the master spark-submit gave
    jars: tuple[str, ...] = ()
    shuffle_partitions: int = DEFAULT_SHUFFLE_PARTITIONS
    driver_memory: str = "1g"
    extra: dict[str, str] = field(default_factory=dict)


def session_conf(spec: SessionSpec) -> dict[str, str]:
    """Every setting the session gets, as Spark configuration keys."""
    conf = {
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.shuffle.partitions": str(spec.shuffle_partitions),
        # Parquet readers other than Spark (polars in 'pipeline verify') read INT96 poorly.
        "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.driver.memory": spec.driver_memory,
        "spark.sql.streaming.stopGracefullyOnShutdown": "true",
        **STATE_STORE_CONF,
    }
    if is_loopback_master(spec.master):
        conf |= {"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1"}
    if spec.jars:
        conf["spark.jars"] = ",".join(spec.jars)
    # The executors' Python workers publish with confluent-kafka: they find a secured cluster's client settings as
    # every client of failsafe's does (tools/connections.py), also on a standalone cluster's executors, which do not
    # inherit the driver's environment. Paths only, never a secret.
    if os.environ.get(connections.ENV):
        conf[f"spark.executorEnv.{connections.ENV}"] = os.environ[connections.ENV]
    return conf | spec.extra


def build_session(spec: SessionSpec = SessionSpec()) -> SparkSession:
    """Start (or join) the SparkSession described by ``spec``."""
    if is_loopback_master(spec.master):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(spec.app_name)
    if spec.master is not None:
        builder = builder.master(spec.master)
    for key, value in session_conf(spec).items():
        builder = builder.config(key, value)
    # pyspark's SparkContext replaces the SIGINT handler with one that cancels every job and raises
    # KeyboardInterrupt wherever Python is: the caller's own handler (failsafe's commands stop their
    # queries between batches) is put back.
    in_main = threading.current_thread() is threading.main_thread()
    previous = signal.getsignal(signal.SIGINT) if in_main else None
    session = builder.getOrCreate()
    if in_main and previous is not None:
        signal.signal(signal.SIGINT, previous)
    session.sparkContext.setLogLevel("WARN")
    return session
