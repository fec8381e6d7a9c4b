"""The pipeline's plumbing without Spark: connector jars, session settings, progress lines, scenarios, child
processes."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from failsafe.jvm.spark import artifact_of, drop_shipped
from failsafe.pipeline.progress import ProgressLog, progress_line
from failsafe.pipeline.session import SessionSpec, session_conf
from failsafe.scenarios.base import ScenarioError
from failsafe.scenarios.registry import load_scenario, parse_scenario


@pytest.mark.parametrize(
    "jar, artifact",
    [
        ("kafka-clients-3.9.0.jar", "kafka-clients"),
        ("spark-sql-kafka-0-10_2.13-4.0.0.jar", "spark-sql-kafka-0-10_2.13"),
        ("snappy-java-1.1.10.5.jar", "snappy-java"),
        ("scala-library-2.13.15.jar", "scala-library"),
        ("hadoop-client-runtime-3.4.1.jar", "hadoop-client-runtime"),
        ("jsr305-3.0.0.jar", "jsr305"),
        ("zstd-jni-1.5.6-9.jar", "zstd-jni"),
        ("no-version.jar", "no-version"),
    ],
)
def test_artifact_of_a_jar_name(jar: str, artifact: str) -> None:
    assert artifact_of(jar) == artifact


def test_jars_pyspark_already_ships_are_dropped_whatever_their_version() -> None:
    resolved = [
        Path(n)
        for n in (
            "spark-sql-kafka-0-10_2.13-4.0.0.jar",
            "kafka-clients-3.9.0.jar",
            "lz4-java-1.8.0.jar",
            "snappy-java-1.1.10.5.jar",
            "slf4j-api-1.7.36.jar",
            "commons-pool2-2.12.0.jar",
        )
    ]
    shipped = ["lz4-java-1.8.0.jar", "snappy-java-1.1.10.7.jar", "slf4j-api-2.0.16.jar", "commons-pool-1.5.4.jar"]
    kept, dropped = drop_shipped(resolved, shipped)
    assert [j.name for j in kept] == [
        "spark-sql-kafka-0-10_2.13-4.0.0.jar",
        "kafka-clients-3.9.0.jar",
        "commons-pool2-2.12.0.jar",
    ]
    assert {j.name for j in dropped} == {"lz4-java-1.8.0.jar", "snappy-java-1.1.10.5.jar", "slf4j-api-1.7.36.jar"}


def test_local_sessions_bind_loopback_and_cluster_sessions_do_not() -> None:
    local = session_conf(SessionSpec(jars=("/a.jar", "/b.jar")))
    assert local["spark.driver.host"] == local["spark.driver.bindAddress"] == "127.0.0.1"
    assert local["spark.jars"] == "/a.jar,/b.jar"
    assert local["spark.sql.session.timeZone"] == "UTC"
    assert local["spark.sql.parquet.outputTimestampType"] == "TIMESTAMP_MICROS"
    cluster = session_conf(SessionSpec(master="spark://host:7077"))
    assert "spark.driver.host" not in cluster and "spark.jars" not in cluster


def test_the_state_store_is_rocksdb_with_changelog_checkpointing_unless_a_session_says_otherwise() -> None:
    conf = session_conf(SessionSpec())
    assert conf["spark.sql.streaming.stateStore.providerClass"].endswith(".RocksDBStateStoreProvider")
    assert conf["spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled"] == "true"
    hdfs = "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"
    assert (
        session_conf(SessionSpec(extra={"spark.sql.streaming.stateStore.providerClass": hdfs}))[
            "spark.sql.streaming.stateStore.providerClass"
        ]
        == hdfs
    )


SPARK_PROGRESS = {
    "batchId": 7,
    "timestamp": "2026-11-22T06:41:12.526Z",
    "numInputRows": 120,
    "inputRowsPerSecond": 40.0,
    "processedRowsPerSecond": 60.0,
    "durationMs": {"triggerExecution": 2000},
    "eventTime": {"watermark": "2024-08-25T13:20:16.794Z"},
    "stateOperators": [
        {"numRowsDroppedByWatermark": 3, "numRowsTotal": 40, "numShufflePartitions": 4},
        {"numRowsDroppedByWatermark": 1, "numRowsTotal": 2, "numShufflePartitions": 4},
    ],
    "sources": [{"endOffset": '{"demo.purchases":{"0":10,"1":12}}'}],
}


def test_progress_line_keeps_the_contract_fields() -> None:
    line = progress_line("sales-by-product", SPARK_PROGRESS)
    assert line["batch_id"] == 7 and line["num_input_rows"] == 120
    assert line["rows_dropped_by_watermark"] == 4 and line["state_rows"] == 42
    assert progress_line("q", {**SPARK_PROGRESS, "stateOperators": []})["state_rows"] is None
    assert line["end_offsets"] == {"demo.purchases": {"0": 10, "1": 12}}
    assert line["watermark"] == "2024-08-25T13:20:16.794Z"


def test_progress_log_annotates_batches_that_read_something_once(tmp_path: Path) -> None:
    asked = []
    log = ProgressLog(
        tmp_path,
        lambda query, line: asked.append((query, line["batch_id"])) or {"state_locations": {"0": "executor_h_1"}},
    )
    idle = {**SPARK_PROGRESS, "batchId": 8, "numInputRows": 0}
    lines = log.record_new("q", [SPARK_PROGRESS, SPARK_PROGRESS, idle])
    assert (
        asked == [("q", 7)]
        and lines[0]["state_locations"] == {"0": "executor_h_1"}
        and "state_locations" not in lines[1]
    )
    assert lines[0]["state_partitions"] == 8


def test_progress_log_writes_each_batch_once(tmp_path: Path) -> None:
    log = ProgressLog(tmp_path)
    second = {**SPARK_PROGRESS, "batchId": 8, "timestamp": "2026-11-22T06:41:14.526Z"}
    assert len(log.record_new("q", [SPARK_PROGRESS])) == 1
    assert len(log.record_new("q", [SPARK_PROGRESS, second])) == 1
    assert len(log.path.read_text().splitlines()) == 2


def test_both_pipeline_scenarios_parse() -> None:
    assert load_scenario("pipeline-broker-failover").faults[0].params.partition == "demo.purchases-0"
    assert load_scenario("pipeline-restart").faults[0].fault == "kill-driver"


def test_the_publishing_scenarios_name_the_sinks_transactions_and_its_output() -> None:
    """A scenario's transactional ids are named after it, so a fault can name their coordinator; the output topic's
    partitions can be named too."""
    killed = load_scenario("pipeline-txn-coordinator-kill")
    assert killed.pipeline.publish == "exactly-once"
    assert killed.faults[0].params.transactional_id == "failsafe-pipeline-txn-coordinator-kill-0"
    isolated = load_scenario("pipeline-output-leader-isolated")
    assert (isolated.faults[0].fault, isolated.faults[0].params.partition) == ("isolate", "demo.sales-by-product-0")
    assert parse_scenario({**PIPELINE, "faults": [COORDINATOR_KILL]}).faults[0].params.role == "txn-coordinator"


def test_a_driver_kill_can_be_timed_into_a_batchs_publishing() -> None:
    timed = load_scenario("pipeline-kill-while-publishing").faults[0]
    assert (timed.fault, timed.params.when, timed.params.delay_ms) == ("kill-driver", "publishing", 700.0)
    assert load_scenario("pipeline-restart").faults[0].params.when == "now"


COORDINATOR_KILL = {
    "fault": "kill",
    "role": "txn-coordinator",
    "transactional_id": "failsafe-p-3",
    "at_s": 1,
    "duration_s": 5,
}
PIPELINE = {
    "name": "p",
    "kind": "pipeline",
    "faults": [{"fault": "kill", "role": "leader", "partition": "demo.purchases-0", "at_s": 1, "duration_s": 5}],
}


@pytest.mark.parametrize(
    "change, message",
    [
        ({"simulator": {"rate_per_s": 0}}, "p.simulator.rate_per_s: a pipeline scenario needs a fixed rate above 0"),
        ({"simulator": {"rate": 5}}, "unknown field 'rate'"),
        ({"cluster": {"brokers": 1}}, "p.cluster.brokers: 1: the demo topics have replication factor 3"),
        (
            {
                "faults": [
                    {"fault": "pause", "role": "leader", "partition": "demo.purchases-9", "at_s": 1, "duration_s": 1}
                ]
            },
            "'demo.purchases-9' must name a partition of the scenario's topics as TOPIC-N, e.g. demo.purchases-0",
        ),
        ({"pipeline": {"publish": "twice"}}, "p.pipeline.publish: 'twice' is not one of exactly-once, at-least-once"),
        (
            {"faults": [{"fault": "kill-driver", "when": "later", "at_s": 1, "duration_s": 5}]},
            'must be "now" or "publishing"',
        ),
        (
            {"faults": [{"fault": "kill-driver", "when": "publishing", "delay_ms": -1, "at_s": 1, "duration_s": 5}]},
            "must be a number of milliseconds from 0 to 60000",
        ),
        (
            {"faults": [{**COORDINATOR_KILL, "transactional_id": "failsafe-other-0"}]},
            "transactional_id",
        ),
        (
            {"pipeline": {"publish": "at-least-once"}, "faults": [COORDINATOR_KILL]},
            "transactional_id",
        ),
        (
            {"faults": [{"fault": "kill-consumer", "consumer": "c-0", "at_s": 1, "duration_s": 1}]},
            "'kill-consumer' is not one of",
        ),
        ({"faults": [{"fault": "kill-driver", "at_s": 1}]}, "give duration_s"),
        ({"faults": [{"fault": "kill-driver", "at_s": 99, "duration_s": 1}]}, "after the chaos phase ends"),
        ({"colour": "red"}, "unknown field 'colour'"),
    ],
)
def test_bad_pipeline_scenarios_name_the_field(change: dict, message: str) -> None:
    with pytest.raises(ScenarioError, match=message.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
        parse_scenario({**PIPELINE, **change})


def test_a_session_on_a_loopback_standalone_master_binds_loopback_too() -> None:
    conf = session_conf(SessionSpec(master="spark://127.0.0.1:7077"))
    assert conf["spark.driver.host"] == conf["spark.driver.bindAddress"] == "127.0.0.1"
    assert "spark.driver.host" not in session_conf(SessionSpec(master="spark://127.0.0.1:7077,spark-2:7077"))


def test_the_executor_loss_scenario_runs_on_a_standalone_cluster_of_its_own() -> None:
    scenario = load_scenario("pipeline-executor-loss")
    assert (scenario.pipeline.master, scenario.pipeline.spark_workers) == ("standalone", 2)
    (fault,) = scenario.faults
    assert (fault.fault, fault.params.node, fault.duration_s) == ("kill-spark-worker", "holding-state", 15)


@pytest.mark.parametrize(
    "change, message",
    [
        (
            {"faults": [{"fault": "kill-spark-worker", "at_s": 1, "duration_s": 1}]},
            'kill-spark-worker needs a Spark cluster of the run\'s own: set pipeline.master = "standalone"',
        ),
        (
            {
                "pipeline": {"master": "standalone", "spark_workers": 2},
                "faults": [{"fault": "kill-spark-worker", "node": 2, "at_s": 1, "duration_s": 1}],
            },
            "p.faults[0].node: 2 is not a worker of the run's Spark cluster (0-1)",
        ),
        (
            {
                "pipeline": {"master": "standalone", "spark_workers": 2},
                "faults": [{"fault": "kill-spark-worker", "node": "busiest", "at_s": 1, "duration_s": 1}],
            },
            'must be a worker\'s index (0, 1, ...) or "holding-state"',
        ),
        (
            {"pipeline": {"master": "yarn"}},
            "p.pipeline.master: 'yarn': use local[N], spark://HOST:PORT or \"standalone\"",
        ),
        ({"pipeline": {"master": "standalone", "spark_workers": 0}}, "spark_workers must be 1-8"),
        ({"simulator": {"clock": "fast"}}, "p.simulator.clock: 'fast' is not one of wall, accelerated"),
    ],
)
def test_bad_spark_settings_name_the_field(change: dict, message: str) -> None:
    with pytest.raises(ScenarioError, match=re.escape(message)):
        parse_scenario({**PIPELINE, **change})


def test_kill_spark_worker_kills_the_named_worker_and_its_undo_starts_it() -> None:
    from failsafe.faults import FAULT_TYPES, FaultSpec, FaultTargets
    from failsafe.faults.clients import KILL_SPARK_WORKER, WorkerChoice

    class Clients:
        def __init__(self) -> None:
            self.calls: list[tuple[str, str]] = []

        def kill_client(self, name: str) -> None:
            self.calls.append(("kill", name))

        def close_client(self, name: str) -> None:
            self.calls.append(("close", name))

        def restart_client(self, name: str) -> None:
            self.calls.append(("restart", name))

        def process_of(self, name: str) -> str:
            return name

        def wait_settled(self, timeout_s: float) -> str:
            return ""

    clients = Clients()
    spec = FaultSpec(KILL_SPARK_WORKER, 1.0, 5.0, WorkerChoice(node=1))
    applied = FAULT_TYPES[KILL_SPARK_WORKER].start(spec, FaultTargets(None, clients, lambda _: None))
    assert (applied.target, applied.nodes, clients.calls) == (
        "spark-worker",
        ["spark-worker-1"],
        [("kill", "spark-worker-1")],
    )
    applied.undo()
    assert clients.calls[-1] == ("restart", "spark-worker-1") and applied.undone


def test_standalone_ports_and_the_workers_the_master_counts(tmp_path: Path) -> None:
    from failsafe.pipeline.standalone import StandaloneCluster, StandaloneSpec

    spec = StandaloneSpec(workers=3, port=17077)
    assert spec.master_url == "spark://127.0.0.1:17077" and spec.ui_port == 18077
    assert spec.ports() == [17077, 18077, 17078, 18078, 17079, 18079, 17080, 18080]
    cluster = StandaloneCluster(tmp_path, spec)
    # Hand-written: the master's /json/ view, with one worker lost (DEAD stays listed), one of another cluster, one
    # ALIVE.
    view = {
        "status": "ALIVE",
        "workers": [
            {"port": 17078, "state": "DEAD"},
            {"port": 17080, "state": "ALIVE"},
            {"port": 9999, "state": "ALIVE"},
            {"port": 17078, "state": "ALIVE"},
        ],
    }
    assert cluster.registered_workers(view) == {0, 2}
    assert cluster.registered_workers({**view, "status": "STANDBY"}) == set()
    status = cluster.status()  # nothing runs there: every process down, the master unanswering
    assert status["master"] == {"pid": None, "state": "down", "status": None}
    assert [w["state"] for w in status["workers"]] == ["down"] * 3


def test_spark_commands_without_a_spark_cluster_are_one_line(tmp_path: Path) -> None:
    from tests.helpers import run_cli

    for command in ("status", "down"):
        result = run_cli("spark", command, "--dir", str(tmp_path / "nothing"))
        assert result.returncode == 2 and result.stderr.strip().count("\n") == 0, result.stderr
        assert "no Spark standalone cluster at" in result.stderr and "failsafe spark up" in result.stderr


def test_master_is_refused_for_a_lab_scenario(tmp_path: Path) -> None:
    from tests.helpers import run_cli

    result = run_cli("run", "pubsub", "--master", "local[2]", "--dir", str(tmp_path))
    assert result.returncode == 2 and "--master is for pipeline scenarios: pubsub (lab) do not take it" in result.stderr


@pytest.mark.parametrize(
    "master, slots",
    [
        ("local", 1),
        ("local[4]", 4),
        ("local[4,2]", 4),
        ("local[*]", os.cpu_count()),
        ("local[x]", None),
        ("spark://127.0.0.1:7077", None),
        (None, None),
    ],
)
def test_task_slots_of_a_master(master: str | None, slots: int | None) -> None:
    from failsafe.pipeline.run import task_slots

    assert task_slots(master) == slots


def test_enrich_refuses_available_now_under_the_real_time_trigger() -> None:
    from tests.helpers import run_cli

    result = run_cli("pipeline", "enrich", "--bootstrap-server", "127.0.0.1:1", "--realtime", "5", "--available-now")
    assert result.returncode == 2 and result.stderr.strip().count("\n") == 0
    assert "--available-now is a micro-batch trigger" in result.stderr


def test_kill_driver_lands_a_set_time_into_a_publishing_job_that_starts_after_it_waits(tmp_path: Path) -> None:
    import json
    import threading
    import time
    from types import SimpleNamespace

    from failsafe.faults import FaultError
    from failsafe.scenarios.kinds.pipeline.workload import PipelineWorkload

    workload = PipelineWorkload(load_scenario("pipeline-kill-while-publishing"))
    events: list[str] = []
    workload.ctx = SimpleNamespace(run_path=tmp_path, event=events.append)
    starts = tmp_path / "output" / "_publishing.jsonl"
    starts.parent.mkdir()
    earlier = {"batch_id": 3, "publish": "exactly-once", "started_at": time.time() - 5}
    starts.write_text(json.dumps(earlier) + "\n")

    def sink_starts_batch_4() -> None:
        line = {"batch_id": 4, "publish": "exactly-once", "started_at": time.time()}
        with open(starts, "a", encoding="utf-8") as f:
            f.write(json.dumps(line) + '\n{"batch_id": 5, "pub')  # and a line still being written

    timer = threading.Timer(0.2, sink_starts_batch_4)
    timer.start()
    hit = workload.wait_publishing(0.05, 5.0)
    timer.join()
    assert hit == {"batch": 4, "publish": "exactly-once", "for_ms": 50.0}
    assert time.time() >= json.loads(starts.read_text().splitlines()[1])["started_at"] + 0.05
    assert events == ["kill-driver: batch 4 publishing (exactly-once) for 50 ms"]
    with pytest.raises(FaultError, match="no micro-batch started publishing within 0.2 s"):
        workload.wait_publishing(0.05, 0.2)
