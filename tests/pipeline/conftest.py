"""One SparkSession for every pipeline test, and builders of Kafka-shaped input rows.

pyspark hands timestamps back as naive datetimes in the test process's local time zone,
whatever the session's; ``utc`` turns a contract time string into that same value, so
expectations read in UTC on any machine.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Iterator, Sequence

import pytest
from pyspark.sql import DataFrame, SparkSession

from failsafe.pipeline.schema import KAFKA_SOURCE_SCHEMA
from failsafe.pipeline.session import SessionSpec, build_session
from tests.conftest import RunningCluster

KAFKA_TIME = dt.datetime(2024, 8, 25, 13, 30, tzinfo=dt.UTC)
PIPELINE_TIMEOUT_S = 300
DEMO_TOPICS = ("demo.products", "demo.purchases", "demo.inventories", "demo.sales-by-product")


def delete_demo_topics(cluster: RunningCluster) -> None:
    listed = cluster.cli("topics", "list").stdout.split()
    for topic in DEMO_TOPICS:
        if topic in listed:
            assert cluster.cli("topics", "delete", topic).returncode == 0


@pytest.fixture
def clean_demo(shared_cluster: RunningCluster) -> Iterator[RunningCluster]:
    """The session's cluster without the demo topics, before and after the test."""
    delete_demo_topics(shared_cluster)
    yield shared_cluster
    delete_demo_topics(shared_cluster)


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    session = build_session(SessionSpec(app_name="failsafe-tests", master="local[2]", shuffle_partitions=2))
    yield session
    session.stop()


def _encode(value: object) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode()
    return json.dumps(value).encode()


def kafka_tuples(
    values: Sequence[object],
    *,
    topic: str = "demo.purchases",
    keys: Sequence[str | None] | None = None,
    partitions: Sequence[int] | None = None,
    offsets: Sequence[int] | None = None,
) -> list[tuple]:
    """Rows in KAFKA_SOURCE_SCHEMA: a dict value becomes its JSON, a str or bytes is sent as is, None is a tombstone.

    The key defaults to the dict's product_id; offsets count up from 0 on partition 0.
    """
    rows = []
    for i, value in enumerate(values):
        key = keys[i] if keys is not None else (value.get("product_id") if isinstance(value, dict) else None)
        partition = partitions[i] if partitions is not None else 0
        offset = offsets[i] if offsets is not None else i
        rows.append((_encode(key), _encode(value), topic, partition, offset, KAFKA_TIME, 0))
    return rows


@pytest.fixture
def kafka_frame(spark: SparkSession) -> Callable[..., DataFrame]:
    """Build a DataFrame shaped like Spark's Kafka source from values (see kafka_tuples)."""

    def build(values: Sequence[object], **kwargs) -> DataFrame:
        return spark.createDataFrame(kafka_tuples(values, **kwargs), KAFKA_SOURCE_SCHEMA)

    return build


def as_collected(text: str) -> dt.datetime:
    """A UTC 'YYYY-MM-DD HH:MM:SS[.ffffff]' as pyspark's collect() returns that instant."""
    return dt.datetime.fromisoformat(text).replace(tzinfo=dt.UTC).astimezone().replace(tzinfo=None)


@pytest.fixture
def utc() -> Callable[[str], dt.datetime]:
    return as_collected
