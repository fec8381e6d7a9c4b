"""`failsafe pipeline enrich`: the stateless part, micro-batch and real-time, on the session's cluster."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition

from failsafe.tools.admin import client_config
from failsafe.waiting import wait_until
from tests.conftest import RunningCluster
from tests.pipeline.conftest import PIPELINE_TIMEOUT_S

pytestmark = [pytest.mark.spark, pytest.mark.cluster, pytest.mark.slow]


def enriched(bootstrap: str, topic: str) -> list[dict]:
    consumer = Consumer(client_config(bootstrap, **{"group.id": "test-enriched", "enable.auto.commit": False}))
    consumer.assign([TopicPartition(topic, p, 0) for p in range(6)])
    values = []
    try:
        while batch := consumer.consume(5000, timeout=2.0):
            values += [json.loads(m.value()) for m in batch if m.error() is None]
    finally:
        consumer.close()
    return values


def test_enriched_purchases_micro_batch_and_real_time_carry_every_acknowledged_purchase(
    clean_demo: RunningCluster, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger"
    sim = clean_demo.cli(
        "simulate",
        "sales",
        "--rate",
        "0",
        "--count",
        "2000",
        "--malformed-every",
        "50",
        "--seed",
        "17",
        "--ledger",
        str(ledger),
        timeout_s=PIPELINE_TIMEOUT_S,
    )
    assert sim.returncode == 0, sim.stderr

    too_few = clean_demo.cli(
        "pipeline",
        "enrich",
        "--realtime",
        "5",
        "--master",
        "local[2]",
        "--output",
        str(tmp_path / "o0"),
        "--checkpoint",
        str(tmp_path / "c0"),
    )
    assert (
        too_few.returncode == 2
        and "real-time mode needs a task slot per Kafka partition: demo.purchases has 6" in too_few.stderr
    )

    batch = clean_demo.cli(
        "pipeline",
        "enrich",
        "--available-now",
        "--topic",
        "demo.enriched-mb",
        "--output",
        str(tmp_path / "o1"),
        "--checkpoint",
        str(tmp_path / "c1"),
        timeout_s=PIPELINE_TIMEOUT_S,
    )
    assert batch.returncode == 0, batch.stderr[-3000:]
    values = enriched(clean_demo.bootstrap, "demo.enriched-mb")
    assert len(values) == len({v["transaction_id"] for v in values}) == 2000  # the malformed records are not purchases
    assert all(v["product_name"] != "unknown" and v["category"] for v in values)

    # Real-time: runs until stopped; Ctrl-C (SIGINT) stops the query and exits 130, however pyspark handles SIGINT.
    realtime = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "failsafe.cli.main",
            "pipeline",
            "enrich",
            "--realtime",
            "5",
            "--topic",
            "demo.enriched-rt",
            "--output",
            str(tmp_path / "o2"),
            "--checkpoint",
            str(tmp_path / "c2"),
        ],
        env={**os.environ, "FAILSAFE_DIR": str(clean_demo.dir)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_until(
            lambda: len(enriched(clean_demo.bootstrap, "demo.enriched-rt")) >= 2000 or realtime.poll() is not None,
            PIPELINE_TIMEOUT_S,
            "the real-time query did not publish every purchase",
            2.0,
        )
        assert realtime.poll() is None, realtime.stderr.read()[-3000:]
        realtime.send_signal(signal.SIGINT)
        _, err = realtime.communicate(timeout=120)
    finally:
        if realtime.poll() is None:
            realtime.kill()
            realtime.communicate()
    assert realtime.returncode == 130, err[-3000:]
    assert "Traceback" not in err and "failsafe: interrupted (the query was stopped; the checkpoint is kept)" in err
    assert {v["transaction_id"] for v in enriched(clean_demo.bootstrap, "demo.enriched-rt")} == {
        v["transaction_id"] for v in values
    }
