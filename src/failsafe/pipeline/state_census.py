"""Where the sales query's state is: which executor holds each state partition, and how many rows each partition has.

Spark schedules the tasks of a stateful operator where the partition's state store is already
loaded, and its ``StateStoreCoordinator`` on the driver keeps that map (executor by partition);
``state_locations`` asks it after each batch. Rows per partition come from Spark's State Data
Source (the ``statestore`` format) over the query's checkpoint. Together they say how the
running totals are spread over the executors, and that a lost executor's partitions were loaded
again elsewhere.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.streaming import StreamingQuery

STORE_NAME = "default"
OPERATOR_ID = 0  # the query's one stateful operator (the windowed aggregation)


def state_locations(
    spark: SparkSession, query: StreamingQuery, query_checkpoint: str, partitions: int
) -> dict[str, str]:
    """{partition: executor} for every state partition the coordinator knows a location of (``executor_HOST_ID``)."""
    jvm = spark._jvm
    state = jvm.org.apache.spark.sql.execution.streaming.state
    hadoop_path = jvm.org.apache.hadoop.fs.Path(query_checkpoint.rstrip("/") + "/state")
    root = hadoop_path.getFileSystem(spark._jsc.hadoopConfiguration()).makeQualified(hadoop_path).toString()
    coordinator = state.StateStoreCoordinatorRef.forDriver(
        spark._jsc.sc().env(), spark._jsparkSession.sessionState().conf()
    )
    run_id = jvm.java.util.UUID.fromString(str(query.runId))
    found = {}
    for partition in range(partitions):
        provider = state.StateStoreProviderId(state.StateStoreId(root, OPERATOR_ID, partition, STORE_NAME), run_id)
        location = coordinator.getLocation(provider)
        if location.isDefined():
            found[str(partition)] = location.get()
    return found


def state_rows_by_partition(spark: SparkSession, query_checkpoint: str) -> dict[int, int]:
    """Rows of the newest committed state version, per partition (Spark's State Data Source)."""
    # The reader reports to the session's StateStoreCoordinator, which Spark makes with the session's streaming
    # query manager: without one ("Cannot find endpoint: StateStoreCoordinator") the RocksDB store will not load.
    spark.streams.active  # noqa: B018
    rows = spark.read.format("statestore").load(query_checkpoint).groupBy("partition_id").count().collect()
    return {row["partition_id"]: row["count"] for row in rows}
