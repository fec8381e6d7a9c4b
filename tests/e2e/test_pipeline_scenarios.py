"""The pipeline scenarios end to end on the shared cluster: exactly-once through a broker kill and a driver kill.

Each takes about a minute (Spark's start, 23 s of purchases, a restart, the drain), hence `slow`.
Both leave the cluster whole: the killed broker is restarted, the demo topics are deleted afterwards.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from failsafe.pipeline.sink import read_progress
from tests.conftest import RunningCluster

pytestmark = [pytest.mark.cluster, pytest.mark.spark, pytest.mark.slow]

RUN_TIMEOUT_S = 420
DEMO_TOPICS = (
    "demo.products",
    "demo.purchases",
    "demo.inventories",
    "demo.sales-by-product",
    "demo.purchases-enriched",
)


def delete_demo_topics(cluster: RunningCluster) -> None:
    listed = cluster.cli("topics", "list").stdout.split()
    for topic in DEMO_TOPICS:
        if topic in listed:
            assert cluster.cli("topics", "delete", topic).returncode == 0


def run_pipeline_scenario(cluster: RunningCluster, name: str, runs: Path, *extra: str) -> tuple[Path, dict]:
    result = cluster.cli("run", name, "--runs", str(runs), *extra, timeout_s=RUN_TIMEOUT_S)
    run_dir = sorted((runs / name).iterdir())[-1]
    assert (run_dir / "results.json").is_file(), (result.returncode, result.stdout[-3000:], result.stderr[-3000:])
    results = json.loads((run_dir / "results.json").read_text())
    assert result.returncode == 0, (
        result.stdout[-3000:],
        result.stderr[-3000:],
        (run_dir / "pipeline.log").read_text()[-3000:],
    )
    report = (run_dir / "report.html").read_text()
    assert (
        'class="verdict VALID"' in report
        and report.count("<figure") == 4
        and "<td>event-time clock</td><td>wall</td>" in report
    )
    return run_dir, results


@pytest.fixture
def demo_topics_cleaned(shared_cluster: RunningCluster) -> Iterator[RunningCluster]:
    yield shared_cluster
    delete_demo_topics(shared_cluster)


def assert_exact(results: dict) -> dict:
    assert results["valid"] is True, results
    v = results["verification"]
    assert v["valid"] is True
    totals = v["totals"]
    assert totals["ledger"]["purchases"] > 1000, "the simulator wrote too little to prove anything"
    assert totals["ledger"] == totals["sink"]
    assert v["counts"]["dead_letters"] == v["counts"]["ledger_malformed"] > 0
    return v


def assert_published(results: dict, run_dir: Path, publish: str) -> dict:
    """The totals in demo.sales-by-product as a read_committed reader keeps them: each the ledger's, nothing lost."""
    published = results["checkers"]["published"]
    assert published["valid"] is True and published["publish"] == publish, published
    counts, seen = published["counts"], published["uncommitted"]
    assert counts["records"] >= counts["keys"] > 0 and counts["lost_purchases"] == counts["stale_last"] == 0
    assert published["totals"]["ledger"] == published["totals"]["sink"]
    assert seen["complete"] and seen["records"] >= counts["records"]
    history = [json.loads(line) for line in (run_dir / "history.jsonl").read_text().splitlines()]
    assert {op["publish"] for op in history if op.get("f") == "pipeline-start"} == {publish}
    return published


# benchmarks/bench_publish_modes.py runs pipeline-broker-failover in both publish modes, and the soundness suite's
# corpus run is this scenario (its mutants drop output): make test's budget keeps it in make test-long.
@pytest.mark.long
def test_pipeline_broker_failover_keeps_the_sink_equal_to_the_ledger(
    demo_topics_cleaned: RunningCluster, tmp_path: Path
) -> None:
    run_dir, results = run_pipeline_scenario(demo_topics_cleaned, "pipeline-broker-failover", tmp_path / "runs")
    assert_exact(results)
    facts = results["pipeline"]
    assert results["query_never_stopped"] and facts["starts"] == 1 and facts["unexpected_exits"] == []
    history = [json.loads(line) for line in (run_dir / "history.jsonl").read_text().splitlines()]
    killed = [op for op in history if op.get("f") == "fault-start"]
    assert len(killed) == 1 and killed[0]["target"] == "broker"
    restored = [op for op in history if op.get("f") == "fault-stop"]
    assert restored and restored[0]["ok"] is True

    # The same run with one batch of output removed must be reported as lost: the check can fail.
    tampered = tmp_path / "tampered"
    shutil.copytree(run_dir, tampered)
    batches = sorted((tampered / "output" / "sales_by_product").glob("batch_id=*"))
    shutil.rmtree(batches[-1])
    check = demo_topics_cleaned.cli("check", str(tampered), "--json")
    assert check.returncode == 1, check.stdout + check.stderr
    verification = json.loads(check.stdout)["verification"]
    assert verification["counts"]["undercounted"] + verification["counts"]["missing_windows"] > 0


# benchmarks/bench_sink_duplicates.py runs pipeline-restart 10 times; make test's budget (45 min on two cores) keeps the
# broker failover and the executor loss, this one runs in make test-long.
@pytest.mark.long
def test_pipeline_restart_from_the_checkpoint_counts_nothing_twice(
    demo_topics_cleaned: RunningCluster, tmp_path: Path
) -> None:
    run_dir, results = run_pipeline_scenario(demo_topics_cleaned, "pipeline-restart", tmp_path / "runs")
    assert_exact(results)
    facts = results["pipeline"]
    assert facts["starts"] == 2 and facts["planned_kills"] == 1 and facts["unexpected_exits"] == []
    # The running totals came back from Spark's state store in the checkpoint (no files of failsafe's own): windows open
    # at the kill were counted on from there, or the sink would be short of the ledger above.
    checkpoint = run_dir / "checkpoint"
    assert (checkpoint / "sales-by-product" / "state" / "0").is_dir() and not (checkpoint / "sales-state").exists()
    # The enriched stream, in the same session through Spark's Kafka sink: every acknowledged purchase is in its topic;
    # copies (at least once) are counted, each within the batch the restarted query ran first.
    sink = results["checkers"]["enriched"]
    assert (
        sink["valid"] is True
        and sink["counts"]["missing"] == 0
        and sink["counts"]["records"] >= sink["counts"]["acknowledged"] > 1000
    )
    assert len(sink["replayed"]) == 1 and sink["counts"]["duplicate_in_replayed_batch"] == sink["counts"]["duplicate"]


# benchmarks/bench_publish_modes.py runs it in both modes (docs/benchmarks/pipeline-publish-timed-kill.json); the
# replay's copies with Spark's Kafka sink depend on where the kill lands, so only the exactly-once run is a test here.
@pytest.mark.long
def test_a_driver_killed_while_a_batch_publishes_leaves_each_batch_once_at_read_committed(
    demo_topics_cleaned: RunningCluster, tmp_path: Path
) -> None:
    run_dir, results = run_pipeline_scenario(demo_topics_cleaned, "pipeline-kill-while-publishing", tmp_path / "runs")
    assert_exact(results)
    published = assert_published(results, run_dir, "exactly-once")
    assert published["counts"]["duplicate"] == 0
    history = [json.loads(line) for line in (run_dir / "history.jsonl").read_text().splitlines()]
    (killed,) = [op for op in history if op.get("f") == "fault-start"]
    hit = killed["details"]["publishing"]["batch"]
    starts = [json.loads(line) for line in (run_dir / "output" / "_publishing.jsonl").read_text().splitlines()]
    # The batch hit was published again by the restarted driver (Spark had not committed it), once.
    assert [s["batch_id"] for s in starts].count(hit) == 2
    assert results["pipeline"]["starts"] == 2


def test_pipeline_executor_loss_on_a_standalone_cluster_keeps_the_sink_equal_to_the_ledger(
    demo_topics_cleaned: RunningCluster, tmp_path: Path
) -> None:
    from tests.helpers import spark_base_port

    port = spark_base_port(2)
    run_dir, results = run_pipeline_scenario(
        demo_topics_cleaned, "pipeline-executor-loss", tmp_path / "runs", "--set", f"pipeline.spark_port={port}"
    )
    assert_exact(results)
    facts = results["pipeline"]
    assert results["query_never_stopped"] and facts["starts"] == 1 and facts["unexpected_exits"] == []
    history = [json.loads(line) for line in (run_dir / "history.jsonl").read_text().splitlines()]
    (up,) = [op for op in history if op.get("f") == "spark-standalone-up"]
    assert up["master"] == f"spark://127.0.0.1:{port}" and up["workers"] == 2
    (start,) = [op for op in history if op.get("f") == "pipeline-start"]
    assert start["master"] == up["master"]
    (killed,) = [op for op in history if op.get("f") == "fault-start"]
    assert (killed["fault"], killed["target"], killed["nodes"]) == (
        "kill-spark-worker",
        "spark-worker",
        ["spark-worker-holding-state"],
    )
    (restored,) = [op for op in history if op.get("f") == "fault-stop"]
    assert restored["ok"] is True
    # The worker's executor died with it: the driver saw an executor lost, and the tasks ran again elsewhere.
    log = (run_dir / "pipeline.log").read_text()
    assert "Lost executor" in log or "lost worker" in log.lower() or "ExecutorLost" in log, log[-3000:]
    # The worker killed was the one holding state: its executor held state partitions before the loss, and another
    # executor loaded them from the checkpoint after it (none is placed on the lost one at the end).
    lost = {f"executor_127.0.0.1_{n}" for n in re.findall(r"Lost executor (\d+)", log)}
    placed = [
        line["state_locations"]
        for line in read_progress(run_dir / "output")
        if line["query"] == "sales-by-product" and line.get("state_locations")
    ]
    assert lost and any(lost & set(p.values()) for p in placed) and not lost & set(placed[-1].values()), (lost, placed)
    # Published exactly once: each batch's totals once at read_committed, every batch with sales rows published by
    # transactions whose ids are the scenario's.
    published = assert_published(results, run_dir, "exactly-once")
    assert published["counts"]["duplicate"] == 0
    output = run_dir / "output"
    lines = [json.loads(line) for line in (output / "_published.jsonl").read_text().splitlines()]
    commits = (output / "sales_by_product" / "_commits.jsonl").read_text().splitlines()
    committed = {json.loads(line)["batch_id"] for line in commits}
    assert committed <= {line["batch_id"] for line in lines}
    assert {line["transactional_prefix"] for line in lines} == {"failsafe-pipeline-executor-loss"}
    # Nothing of the run's Spark cluster outlives it.
    from failsafe.supervisor import read_pidfile

    pidfiles = sorted((run_dir / "spark" / "pids").glob("*.pid"))
    assert len(pidfiles) == 3 and not any(t.alive() for t in map(read_pidfile, pidfiles) if t is not None)


# The same fault with Spark's Kafka sink: about two minutes more, so in make test-long with the comparison benchmark
# (benchmarks/bench_publish_modes.py).
@pytest.mark.long
def test_pipeline_executor_loss_with_at_least_once_publishing_counts_the_copies(
    demo_topics_cleaned: RunningCluster, tmp_path: Path
) -> None:
    from tests.helpers import spark_base_port

    runs = tmp_path / "runs"
    port = spark_base_port(2)
    overrides = ("--set", f"pipeline.spark_port={port}", "--set", 'pipeline.publish="at-least-once"')
    run_dir, results = run_pipeline_scenario(demo_topics_cleaned, "pipeline-executor-loss", runs, *overrides)
    assert_exact(results)
    published = assert_published(results, run_dir, "at-least-once")
    # Spark's Kafka sink writes no transactions: both readers see the same records, copies and all, and the copies are
    # counted, allowed, and never a loss.
    assert published["allow_duplicates"] and published["uncommitted"]["records"] == published["counts"]["records"]
    assert published["uncommitted"]["duplicate"] == published["counts"]["duplicate"] >= 0
    assert not (run_dir / "output" / "_published.jsonl").exists()
    # Judged as exactly-once, the same read is invalid exactly when it holds a copy: the allowance is the mode's.
    history = run_dir / "history.jsonl"
    history.write_text(history.read_text().replace('"publish": "at-least-once"', '"publish": "exactly-once"'))
    check = demo_topics_cleaned.cli("check", str(run_dir), "--json")
    strict = json.loads(check.stdout)["checkers"]["published"]
    assert (check.returncode, strict["valid"]) == ((1, False) if published["counts"]["duplicate"] else (0, True))
