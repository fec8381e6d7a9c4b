"""The pipeline's plumbing without Spark: connector jars, session settings, progress lines, scenarios, child processes."""

from __future__ import annotations

from pathlib import Path

import pytest

from failsafe.dist.spark import artifact_of, drop_shipped
from failsafe.pipeline.progress import ProgressLog, progress_line
from failsafe.pipeline.session import SessionSpec, session_conf
from failsafe.scenarios.pipeline_schema import parse_pipeline_scenario
from failsafe.scenarios.registry import load_scenario
from failsafe.scenarios.schema import ScenarioError


@pytest.mark.parametrize("jar, artifact", [
    ("kafka-clients-3.9.0.jar", "kafka-clients"),
    ("spark-sql-kafka-0-10_2.13-4.0.0.jar", "spark-sql-kafka-0-10_2.13"),
    ("snappy-java-1.1.10.5.jar", "snappy-java"),
    ("scala-library-2.13.15.jar", "scala-library"),
    ("hadoop-client-runtime-3.4.1.jar", "hadoop-client-runtime"),
    ("jsr305-3.0.0.jar", "jsr305"),
    ("zstd-jni-1.5.6-9.jar", "zstd-jni"),
    ("no-version.jar", "no-version"),
])
def test_artifact_of_a_jar_name(jar: str, artifact: str) -> None:
    assert artifact_of(jar) == artifact


def test_jars_pyspark_already_ships_are_dropped_whatever_their_version() -> None:
    resolved = [Path(n) for n in ("spark-sql-kafka-0-10_2.13-4.0.0.jar", "kafka-clients-3.9.0.jar", "lz4-java-1.8.0.jar",
                                  "snappy-java-1.1.10.5.jar", "slf4j-api-1.7.36.jar", "commons-pool2-2.12.0.jar")]
    shipped = ["lz4-java-1.8.0.jar", "snappy-java-1.1.10.7.jar", "slf4j-api-2.0.16.jar", "commons-pool-1.5.4.jar"]
    kept, dropped = drop_shipped(resolved, shipped)
    assert [j.name for j in kept] == ["spark-sql-kafka-0-10_2.13-4.0.0.jar", "kafka-clients-3.9.0.jar", "commons-pool2-2.12.0.jar"]
    assert {j.name for j in dropped} == {"lz4-java-1.8.0.jar", "snappy-java-1.1.10.5.jar", "slf4j-api-1.7.36.jar"}


def test_local_sessions_bind_loopback_and_cluster_sessions_do_not() -> None:
    local = session_conf(SessionSpec(jars=("/a.jar", "/b.jar")))
    assert local["spark.driver.host"] == local["spark.driver.bindAddress"] == "127.0.0.1"
    assert local["spark.jars"] == "/a.jar,/b.jar"
    assert local["spark.sql.session.timeZone"] == "UTC"
    assert local["spark.sql.parquet.outputTimestampType"] == "TIMESTAMP_MICROS"
    cluster = session_conf(SessionSpec(master="spark://host:7077"))
    assert "spark.driver.host" not in cluster and "spark.jars" not in cluster


SPARK_PROGRESS = {
    "batchId": 7, "timestamp": "2026-11-22T06:41:12.526Z", "numInputRows": 120, "inputRowsPerSecond": 40.0,
    "processedRowsPerSecond": 60.0, "durationMs": {"triggerExecution": 2000},
    "eventTime": {"watermark": "2024-08-25T13:20:16.794Z"},
    "stateOperators": [{"numRowsDroppedByWatermark": 3}, {"numRowsDroppedByWatermark": 1}],
    "sources": [{"endOffset": '{"demo.purchases":{"0":10,"1":12}}'}],
}


def test_progress_line_keeps_the_contract_fields() -> None:
    line = progress_line("sales-by-product", SPARK_PROGRESS)
    assert line["batch_id"] == 7 and line["num_input_rows"] == 120
    assert line["rows_dropped_by_watermark"] == 4
    assert line["end_offsets"] == {"demo.purchases": {"0": 10, "1": 12}}
    assert line["watermark"] == "2024-08-25T13:20:16.794Z"


def test_progress_log_writes_each_batch_once(tmp_path: Path) -> None:
    log = ProgressLog(tmp_path)
    second = {**SPARK_PROGRESS, "batchId": 8, "timestamp": "2026-11-22T06:41:14.526Z"}
    assert len(log.record_new("q", [SPARK_PROGRESS])) == 1
    assert len(log.record_new("q", [SPARK_PROGRESS, second])) == 1
    assert len(log.path.read_text().splitlines()) == 2


def test_both_pipeline_scenarios_parse() -> None:
    assert load_scenario("pipeline-broker-failover").faults[0].partition == "demo.purchases-0"
    assert load_scenario("pipeline-restart").faults[0].fault == "kill-driver"


PIPELINE = {"name": "p", "kind": "pipeline", "faults": [{"fault": "kill", "role": "leader", "partition": "demo.purchases-0",
                                                          "at_s": 1, "duration_s": 5}]}


@pytest.mark.parametrize("change, message", [
    ({"simulator": {"rate_per_s": 0}}, "p.simulator.rate_per_s: a pipeline scenario needs a fixed rate above 0"),
    ({"simulator": {"rate": 5}}, "unknown field 'rate'"),
    ({"cluster": {"brokers": 1}}, "p.cluster.brokers: 1: the demo topics have replication factor 3"),
    ({"faults": [{"fault": "pause", "role": "leader", "partition": "demo.purchases-9", "at_s": 1, "duration_s": 1}]},
     "'demo.purchases-9' must name a partition of demo.purchases"),
    ({"faults": [{"fault": "quorum-loss", "at_s": 1, "duration_s": 1}]}, "'quorum-loss' is not one of"),
    ({"faults": [{"fault": "kill-driver", "at_s": 1}]}, "give duration_s"),
    ({"faults": [{"fault": "kill-driver", "at_s": 99, "duration_s": 1}]}, "after the chaos phase ends"),
    ({"colour": "red"}, "unknown field 'colour'"),
])
def test_bad_pipeline_scenarios_name_the_field(change: dict, message: str) -> None:
    with pytest.raises(ScenarioError, match=message.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
        parse_pipeline_scenario({**PIPELINE, **change})
