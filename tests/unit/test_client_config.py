"""The client-config op a worker writes first, and where its client library's own log goes."""

from __future__ import annotations

import logging
from pathlib import Path

import confluent_kafka

from failsafe.history.load import history_from_ops
from failsafe.scenarios.registry import load_scenario
from failsafe.workloads.specs import ConsumerSpec, ProducerSpec
from failsafe.workloads.verifiable.clients import VerifiableConsumerSpec, VerifiableProducerSpec
from failsafe.workloads.worker import client_config_fields, client_logger


def _config(fields: dict) -> dict[str, str]:
    return {entry["name"]: entry["value"] for entry in fields["config"]}


def test_a_producer_names_librdkafka_its_settings_and_its_log(tmp_path: Path) -> None:
    spec = ProducerSpec(
        "producer-0",
        "t",
        bootstrap_servers="127.0.0.1:9092",
        linger_ms=5,
        client_log=str(tmp_path / "logs" / "producer-0.client.log"),
    )
    fields = client_config_fields(spec)
    assert fields["client"] == "librdkafka" and fields["client_version"] == confluent_kafka.libversion()[0]
    assert fields["log"] == "logs/producer-0.client.log"
    config = _config(fields)
    assert "bootstrap.servers" not in config and "logger" not in config
    assert config["acks"] == "all" and config["enable.idempotence"] == "true" and config["linger.ms"] == "5"
    assert config["debug"] == "eos,broker,topic"


def test_a_users_debug_contexts_win() -> None:
    spec = ProducerSpec("p", "t", properties={"debug": "all"}, client_log="/run/logs/p.client.log")
    assert _config(client_config_fields(spec))["debug"] == "all"


def test_without_a_client_log_nothing_is_debugged() -> None:
    fields = client_config_fields(ProducerSpec("p", "t"))
    assert fields["log"] is None and "debug" not in _config(fields)
    assert "debug" not in ConsumerSpec("c", ("t",)).consumer_config()


def test_a_consumer_debugs_its_group_only() -> None:
    fields = client_config_fields(
        ConsumerSpec("consumer-0", ("t",), group="g", client_log="/r/logs/consumer-0.client.log")
    )
    config = _config(fields)
    assert config["debug"] == "cgrp" and config["group.id"] == "g" and fields["log"] == "logs/consumer-0.client.log"


def test_kafkas_verifiable_clients_are_the_java_client() -> None:
    producer = client_config_fields(
        VerifiableProducerSpec("vp", "t", kafka_version="4.1.0", client_log="/r/logs/vp.client.log")
    )
    assert producer["client"] == "kafka-java" and producer["client_version"] == "4.1.0"
    assert _config(producer)["acks"] == "-1" and _config(producer)["enable.idempotence"] == "true"
    consumer = client_config_fields(VerifiableConsumerSpec("vc", ("t",), group="g", session_timeout_ms=6000))
    assert (
        _config(consumer)["group.id"] == "g"
        and _config(consumer)["session.timeout.ms"] == "6000"
        and consumer["log"] is None
    )


def test_the_op_loads_into_the_clients_frame() -> None:
    fields = client_config_fields(ProducerSpec("producer-0", "t", client_log="/r/logs/producer-0.client.log"))
    h = history_from_ops([{"time_ns": 1, "process": "producer-0", "type": "info", "f": "client-config", **fields}])
    row = h.clients.row(0, named=True)
    assert row["client"] == "librdkafka" and {"name": "acks", "value": "all"} in row["config"]


def test_librdkafkas_log_lines_go_to_the_client_log_with_a_time(tmp_path: Path) -> None:
    path = tmp_path / "p.client.log"
    logger = client_logger(ProducerSpec("p", "t", client_log=str(path)))
    try:
        # As confluent-kafka hands librdkafka's debug lines over: level DEBUG, facility, name, text.
        logger.log(logging.DEBUG, "%s [%s] %s", "DRAIN", "rdkafka#producer-1", "drain epoch bump")
        for handler in logger.handlers:
            handler.flush()
        line = path.read_text().strip()
        assert line.endswith("DRAIN [rdkafka#producer-1] drain epoch bump") and line[:4].isdigit()
    finally:
        for handler in list(logger.handlers):
            logger.removeHandler(handler)
            handler.close()


def test_the_manifest_names_each_workers_client_log() -> None:
    scenario = load_scenario("broker-failover")
    logs = scenario.manifest()["client_logs"]
    assert logs and all(path == f"logs/{name}.client.log" for name, path in logs.items())
    assert len(logs) == sum(p.count for p in scenario.producers) + sum(c.count for c in scenario.consumers)


def test_the_pool_names_each_workers_client_log_before_it_starts(tmp_path: Path) -> None:
    import io
    import json
    from types import SimpleNamespace

    from failsafe.workloads.pool import WorkerPool

    spawned: list[list[str]] = []

    class FakeSupervisor:
        def spawn(self, cmd: list[str], **kwargs: object) -> SimpleNamespace:
            spawned.append(cmd)
            return SimpleNamespace(popen=SimpleNamespace(stdout=io.BytesIO(b"")))

    recorder = SimpleNamespace(write_line=lambda line: None)
    pool = WorkerPool(recorder=recorder, supervisor=FakeSupervisor(), logs_dir=tmp_path / "logs")  # type: ignore[arg-type]
    worker = pool.start(ProducerSpec("producer-0", "t"))
    worker.reader.join(5)
    assert worker.spec.client_log == str(tmp_path / "logs" / "producer-0.client.log")
    assert json.loads(spawned[0][-1])["client_log"] == worker.spec.client_log


def test_a_worker_writes_its_client_config_first(tmp_path: Path) -> None:
    import json
    import os
    import subprocess
    import sys

    import orjson

    from failsafe.workloads.specs import spec_to_json

    log = tmp_path / "logs" / "producer-0.client.log"
    log.parent.mkdir()
    # No record to send: the worker needs no broker to start, record its config and close.
    spec = ProducerSpec("producer-0", "t", bootstrap_servers="127.0.0.1:1", count=0, client_log=str(log))
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[2] / "src"), os.environ.get("PYTHONPATH", "")]),
    }
    proc = subprocess.run(
        [sys.executable, "-m", "failsafe.workloads.worker", orjson.dumps(spec_to_json(spec)).decode()],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=60,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    ops = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [op["f"] for op in ops] == ["client-config", "close"]
    assert ops[0]["client"] == "librdkafka" and ops[0]["log"] == "logs/producer-0.client.log"
    assert log.is_file()
