"""failsafe simulate sales on the shared real cluster: the ledger holds exactly what Kafka acknowledged.

Each test starts without demo.* topics and deletes them afterwards, so the other tests on the
shared cluster never see them. Records are read back with confluent-kafka by assignment, with a
throwaway group id that never commits, so no consumer group is left behind.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from confluent_kafka import Consumer, TopicPartition

from failsafe.tools.topics import Topics
from failsafe.waiting import wait_until
from failsafe.workloads.sales.catalogue import PRODUCTS
from failsafe.workloads.sales.generator import parse_time, purchase_values, records_for, share
from failsafe.workloads.sales.ledger import read_ledger
from failsafe.workloads.sales.simulator import TOPICS

pytestmark = pytest.mark.cluster

START = "2024-08-25 11:30:00"


def delete_demo_topics(bootstrap: str) -> None:
    topics = Topics(bootstrap)
    present = [name for name in topics.list() if name.startswith("demo.")]
    for name in present:
        topics.delete(name, missing_ok=True)
    wait_until(
        lambda: not {n for n in topics.list() if n.startswith("demo.")}, 60, f"topics {present} were not deleted"
    )


@pytest.fixture
def cluster(shared_cluster) -> Iterator:
    delete_demo_topics(shared_cluster.bootstrap)
    yield shared_cluster
    delete_demo_topics(shared_cluster.bootstrap)


def read_topic(bootstrap: str, topic: str) -> list[tuple[int, int, str, str]]:
    """Every record of every partition, from the log start to the high watermark: (partition, offset, key, value)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"sales-e2e-{uuid.uuid4()}",
            "enable.auto.commit": False,
            "enable.partition.eof": False,
        }
    )
    try:
        partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10) for p in partitions}
        wanted = {p: high for p, (low, high) in ends.items() if high > low}
        consumer.assign([TopicPartition(topic, p, low) for p, (low, _high) in ends.items()])
        out: list[tuple[int, int, str, str]] = []
        position = {p: ends[p][0] for p in wanted}

        def caught_up() -> bool:
            for msg in consumer.consume(10_000, timeout=0.5):
                assert msg.error() is None, msg.error()
                out.append((msg.partition(), msg.offset(), msg.key().decode(), msg.value().decode()))
                position[msg.partition()] = msg.offset() + 1
            return all(position[p] >= high for p, high in wanted.items())

        wait_until(caught_up, 120, f"could not read {topic} to its high watermarks {wanted}", poll_interval_s=0)
        return out
    finally:
        consumer.close()


def simulate(cluster, ledger: Path, *args: str):
    result = cluster.cli("simulate", "sales", "--ledger", str(ledger), "--start-time", START, *args)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    return result


def test_count_run_ledger_equals_the_topic(cluster, tmp_path: Path) -> None:
    ledger_dir = tmp_path / "ledger"
    result = simulate(cluster, ledger_dir, "--count", "5000", "--seed", "3", "--instances", "2")
    assert "5000 purchases acknowledged, 0 failed" in result.stdout

    ledger = read_ledger(ledger_dir)
    assert (
        ledger.manifest["complete"] is True
        and ledger.manifest["acknowledged"] == 5000
        and ledger.manifest["instances"] == 2
    )
    assert ledger.purchases.height == 5000 and ledger.purchases["transaction_id"].n_unique() == 5000

    records = read_topic(cluster.bootstrap, TOPICS["purchases"])
    assert len(records) == 5000  # exactly the acknowledged purchases: nothing more, nothing twice
    in_topic = {(json.loads(value)["transaction_id"], partition, offset) for partition, offset, _key, value in records}
    in_ledger = set(ledger.purchases.select("transaction_id", "partition", "offset").iter_rows())
    assert in_topic == in_ledger
    # Keyed by product, and the values are the generator's, byte for byte.
    assert all(json.loads(value)["product_id"] == key for _p, _o, key, value in records)
    expected = {v for i in range(2) for v in purchase_values(3, i, parse_time(START), share(5000, 2, i))}
    assert {value for *_, value in records} == expected

    topics = {t.name: t for t in Topics(cluster.bootstrap).describe(list(TOPICS.values()))}
    assert all(len(t.partitions) == 6 and t.replication_factor == 3 for t in topics.values())
    assert dict(topics[TOPICS["products"]].configs).get("cleanup.policy") == "compact"
    products = read_topic(cluster.bootstrap, TOPICS["products"])
    assert sorted(key for _p, _o, key, _v in products) == sorted(p.product_id for p in PRODUCTS)
    restocks = read_topic(cluster.bootstrap, TOPICS["inventories"])
    assert (
        len(restocks) == ledger.manifest["restocks"] >= 2 * len(PRODUCTS)
    )  # each instance's opening stock, then restocks
    assert all(
        json.loads(v)["new_level"] == json.loads(v)["existing_level"] + json.loads(v)["stock_quantity"]
        for *_, v in restocks
    )


def test_malformed_records_are_in_the_topic_and_in_the_ledger_apart(cluster, tmp_path: Path) -> None:
    ledger_dir = tmp_path / "ledger"
    simulate(cluster, ledger_dir, "--count", "1000", "--seed", "5", "--malformed-every", "10", "--acks", "1")
    ledger = read_ledger(ledger_dir)
    broken = records_for(1000, 10) - 1000
    assert ledger.purchases.height == 1000 and ledger.malformed.height == ledger.manifest["malformed"] == broken

    by_position = {(p, o): v for p, o, _k, v in read_topic(cluster.bootstrap, TOPICS["purchases"])}
    assert len(by_position) == 1000 + broken
    for partition, offset, value in ledger.malformed.iter_rows():
        assert by_position[(partition, offset)] == value
        with pytest.raises(json.JSONDecodeError):
            json.loads(value)
    malformed_at = set(ledger.malformed.select("partition", "offset").iter_rows())
    assert all(json.loads(v) for at, v in by_position.items() if at not in malformed_at)


def _children(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def _start(cluster, ledger: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "failsafe.cli.main", "simulate", "sales", "--ledger", str(ledger), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "FAILSAFE_DIR": str(cluster.dir)},
    )


def test_ctrl_c_stops_every_instance_cleanly(cluster, tmp_path: Path) -> None:
    ledger_dir = tmp_path / "ledger"
    proc = _start(cluster, ledger_dir, "--rate", "400", "--instances", "3", "--seed", "8")
    try:
        workers = wait_until(
            lambda: len(_children(proc.pid)) == 3 and _children(proc.pid), 60, "the 3 workers did not start"
        )
        wait_until(lambda: len(read_topic(cluster.bootstrap, TOPICS["purchases"])) > 100, 60, "no purchases arrived")
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err  # an open-ended run ends with Ctrl-C
    assert "Traceback" not in err
    assert not [w for w in workers if w.is_running() and w.status() != psutil.STATUS_ZOMBIE]
    ledger = read_ledger(ledger_dir)
    assert ledger.manifest["complete"] is True and ledger.purchases.height > 100
    assert ledger.purchases.height == len(read_topic(cluster.bootstrap, TOPICS["purchases"]))
    assert f"{ledger.purchases.height} purchases acknowledged" in out


def test_workers_die_with_a_killed_simulator(cluster, tmp_path: Path) -> None:
    ledger_dir = tmp_path / "ledger"
    proc = _start(cluster, ledger_dir, "--rate", "200", "--instances", "2")
    try:
        workers = wait_until(
            lambda: len(_children(proc.pid)) == 2 and _children(proc.pid), 60, "the 2 workers did not start"
        )
    finally:
        proc.kill()
        proc.communicate(timeout=30)
    wait_until(
        lambda: not any(w.is_running() and w.status() != psutil.STATUS_ZOMBIE for w in workers),
        30,
        "a worker outlived its killed simulator",
    )
    assert read_ledger(ledger_dir, require_complete=False).manifest["complete"] is False
