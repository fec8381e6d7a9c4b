"""Transactions on the shared cluster: a kill of a writer's transaction coordinator, zombies fenced, writers killed, on
both clients.

One run, read by every test: the catalog's txn-coordinator-kill scenario, with a writer and a processor on Kafka's Java
client (failsafe's TxnDriver) beside the librdkafka ones, and the zombie scenario's client faults on one of each."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from failsafe.cluster.observe.coordinators import coordinator_partition

pytestmark = [pytest.mark.cluster, pytest.mark.slow]
RUN_TIMEOUT_S = 280
# What the txn scenarios leave on the shared cluster.
TXN_TOPICS = ("txn-a", "txn-b", "txn-in", "txn-out", "txn-jout")
TXN_GROUPS = ("txn-readers", "txn-ctp", "txn-jctp")


def _ops(run_dir: Path) -> list[dict]:
    return [orjson.loads(line) for line in (run_dir / "history.jsonl").read_bytes().splitlines()]


def _run(cluster, scenario: str, runs: Path, *overrides: str) -> tuple[Path, dict]:
    result = cluster.cli(
        "run", scenario, "--runs", str(runs), *[a for o in overrides for a in ("--set", o)], timeout_s=RUN_TIMEOUT_S
    )
    assert result.returncode == 0, (result.stdout[-3000:], result.stderr[-2000:])
    [run_dir] = sorted(p for p in (runs / "txn-faults").iterdir() if p.is_dir())
    return run_dir, json.loads((run_dir / "results.json").read_text())


# Added to the catalog's coordinator kill: Java clients, and client faults on a librdkafka and a Java one of each kind.
JAVA_CLIENTS = """
[[topics]]
name = "txn-jout"
partitions = 3
replication_factor = 3
configs = { "min.insync.replicas" = "2" }

[[writers]]
name = "jwriter"
driver = "kafka-java"
topics = ["txn-a", "txn-b"]
rate_per_s = 20
abort_probability = 0.15

[[processors]]
name = "jctp"
driver = "kafka-java"
input = "txn-in"
output = "txn-jout"
group = "txn-jctp"
batch = 100
abort_probability = 0.1

"""
FAULTS = """
[[faults]]
fault = "kill"
role = "txn-coordinator"
transactional_id = "writer-0"
at_s = 1

[[faults]]
fault = "zombie-txn-client"
client = "ctp-0"
at_s = 2
duration_s = 12

[[faults]]
fault = "zombie-txn-client"
client = "jctp-0"
at_s = 2
duration_s = 12

[[faults]]
fault = "kill-txn-client"
client = "writer-1"
at_s = 3
duration_s = 2

[[faults]]
fault = "kill-txn-client"
client = "jwriter-0"
at_s = 3
duration_s = 2
"""


@pytest.fixture(scope="module")
def txn_run(shared_cluster_holder, tmp_path_factory) -> Iterator[tuple[Path, dict, object]]:
    from tests.conftest import shared_cluster_in

    cluster = shared_cluster_in(shared_cluster_holder, tmp_path_factory)
    catalog = Path(__file__).parents[2] / "src/failsafe/scenarios/catalog/txn-coordinator-kill.toml"
    text = catalog.read_text()
    text = text[: text.index("[[faults]]")] + JAVA_CLIENTS + FAULTS + text[text.index("[phases]") :]
    scenario = tmp_path_factory.mktemp("scenario") / "txn-faults.toml"
    scenario.write_text(text.replace('name = "txn-coordinator-kill"', 'name = "txn-faults"'))
    runs = tmp_path_factory.mktemp("runs")
    try:
        yield (*_run(cluster, str(scenario), runs, "phases.chaos_s=14"), cluster)
    finally:
        _clean(cluster)


def _clean(cluster) -> None:
    listed = cluster.cli("topics", "list").stdout.split()
    for topic in TXN_TOPICS:
        if topic in listed:
            assert cluster.cli("topics", "delete", topic).returncode == 0
    groups = cluster.cli("groups", "list").stdout.split()
    for group in TXN_GROUPS:
        if group in groups:
            cluster.cli("kafka", "consumer-groups", "--delete", "--group", group)


def test_transactions_through_a_kill_of_their_coordinator(txn_run) -> None:
    run_dir, results, cluster = txn_run
    checker = results["checkers"]["transactions"]
    assert checker["valid"] is True, checker
    assert checker["counts"]["committed"] > 0 and checker["counts"]["aborted"] > 0
    ops = _ops(run_dir)
    # The history records how each transaction ended, and which writes it made.
    ended = {(op["process"], op["txn"]): op["type"] for op in ops if op["f"] == "txn" and op["type"] != "invoke"}
    assert {"ok", "fail"} <= set(ended.values())
    assert any(op["f"] == "send" and op.get("txn") is not None for op in ops)
    # The fault took the broker that led writer-0's __transaction_state partition when it started.
    [start] = [op for op in ops if op["f"] == "fault-start" and op["fault"] == "kill"]
    partition = coordinator_partition("writer-0")
    assert start["role"] == f"transaction coordinator of writer-0 (__transaction_state-{partition})", start
    # Kafka's own tool names the coordinator the same way failsafe finds it (the partition's leader now).
    described = cluster.cli("kafka", "transactions", "describe", "--transactional-id", "writer-0")
    assert described.returncode == 0, described.stderr
    coordinator = int(described.stdout.strip().splitlines()[-1].split()[0])
    leaders = cluster.cli("kafka", "topics", "--describe", "--topic", "__transaction_state").stdout
    line = next(x for x in leaders.splitlines() if f"\tPartition: {partition}\t" in x)
    assert f"Leader: {coordinator}\t" in line, line
    assert [e for e in ops if e["f"] == "feature-level"][0]["level"] == 2
    # Transactions committed after the kill: the history shows the first one.
    assert any(op["f"] == "txn" and op["type"] == "ok" and op["time_ns"] > start["time_ns"] for op in ops)


@pytest.mark.parametrize(
    ("processor", "writer"), [("ctp-0", "writer-1"), ("jctp-0", "jwriter-0")], ids=["librdkafka", "kafka-java"]
)
def test_a_zombie_processor_is_fenced_and_no_input_is_processed_twice(txn_run, processor: str, writer: str) -> None:
    run_dir, results, _ = txn_run
    checker = results["checkers"]["transactions"]
    assert checker["counts"]["duplicate-processed"] == 0
    ops = _ops(run_dir)
    [zombie_close] = [op for op in ops if op["f"] == "close" and op["process"] == processor]
    # Turned away by Kafka for its stale epoch ("was fenced"), or stopped by another error once superseded, never to
    # open a producer that would fence the newer instance ("was superseded": a commit that timed out while it was
    # frozen).
    assert re.search(rf"^{re.escape(processor)} was (fenced|superseded): ", zombie_close["error"]), zombie_close
    # The instance that took over committed transactions with the input offsets in them.
    assert any(op["f"] == "txn" and op["process"] == f"{processor}.1" and op["type"] == "ok" for op in ops)
    assert any(op["f"] == "txn-end" and op["process"] == f"{processor}.1" and op.get("offsets") for op in ops)
    # The killed writer's new instance, with the same transactional.id, went on committing.
    assert any(op["f"] == "txn" and op["process"] == f"{writer}.1" and op["type"] == "ok" for op in ops)


def test_the_java_clients_are_kafkas_own_at_read_committed(txn_run) -> None:
    run_dir, _, _ = txn_run
    clients = {op["process"]: op for op in _ops(run_dir) if op["f"] == "client-config"}
    assert {clients[p]["client"] for p in ("jwriter-0", "jwriter-0.1", "jctp-0", "jctp-0.1")} == {"kafka-java"}
    assert {clients[p]["client"] for p in ("writer-0", "ctp-0")} == {"librdkafka"}
    assert {"name": "isolation.level", "value": "read_committed"} in clients["jctp-0"]["config"]
