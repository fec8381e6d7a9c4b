"""The pipeline on a real cluster with Spark's own Kafka source: a known set in, exact totals out.

Shares the session's cluster; uses the demo topics and deletes them afterwards.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import RunningCluster
from tests.helpers import run_cli
from tests.pipeline.conftest import PIPELINE_TIMEOUT_S

pytestmark = [pytest.mark.spark]


def test_an_unreachable_cluster_is_one_line() -> None:
    result = run_cli("pipeline", "run", "--bootstrap-server", "127.0.0.1:1", "--available-now", timeout_s=60)
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0 and "no Kafka broker answered at 127.0.0.1:1" in result.stderr


@pytest.mark.cluster
def test_pipeline_totals_equal_the_ledger_and_a_rerun_counts_nothing_twice(
    clean_demo: RunningCluster, tmp_path: Path
) -> None:
    out, ck, ledger = tmp_path / "out", tmp_path / "ck", tmp_path / "ledger"
    run = ("pipeline", "run", "--available-now", "--output", str(out), "--checkpoint", str(ck))

    missing = clean_demo.cli(*run, timeout_s=PIPELINE_TIMEOUT_S)
    assert missing.returncode == 2 and "topic demo.purchases does not exist" in missing.stderr, missing.stderr

    sim = clean_demo.cli(
        "simulate",
        "sales",
        "--rate",
        "0",
        "--count",
        "3000",
        "--malformed-every",
        "100",
        "--seed",
        "11",
        "--ledger",
        str(ledger),
        timeout_s=PIPELINE_TIMEOUT_S,
    )
    assert sim.returncode == 0, sim.stderr

    first = clean_demo.cli(*run, timeout_s=PIPELINE_TIMEOUT_S)
    assert first.returncode == 0, first.stderr[-3000:]
    verify = run_cli("pipeline", "verify", "--output", str(out), "--ledger", str(ledger), "--json")
    assert verify.returncode == 0, verify.stdout
    result = json.loads(verify.stdout)
    assert result["totals"]["ledger"] == result["totals"]["sink"]
    manifest = json.loads((ledger / "manifest.json").read_text())
    assert result["totals"]["ledger"]["purchases"] == manifest["acknowledged"] == 3000
    assert result["counts"]["dead_letters"] == result["counts"]["ledger_malformed"] == manifest["malformed"] > 0

    # Started again on the same checkpoint, the pipeline finds nothing new and the sink is unchanged.
    batches_before = sorted(p.name for p in (out / "sales_by_product").glob("batch_id=*"))
    again = clean_demo.cli(*run, timeout_s=PIPELINE_TIMEOUT_S)
    assert again.returncode == 0, again.stderr[-3000:]
    assert sorted(p.name for p in (out / "sales_by_product").glob("batch_id=*")) == batches_before
    assert run_cli("pipeline", "verify", "--output", str(out), "--ledger", str(ledger)).returncode == 0

    published = clean_demo.cli(
        "consume", "demo.sales-by-product", "--from-beginning", "--max-messages", "5", "--timeout-s", "30"
    )
    assert published.returncode == 0, published.stderr
    assert len(published.stdout.splitlines()) == 5 and '"revenue"' in published.stdout

    # Published exactly once, under transactional ids of the query's own (Spark's id of it, from its checkpoint); the
    # rerun found every batch published already or had none to publish.
    query_id = json.loads((ck / "sales-by-product" / "metadata").read_text().splitlines()[0])["id"]
    lines = [json.loads(line) for line in (out / "_published.jsonl").read_text().splitlines()]
    assert {line["transactional_prefix"] for line in lines} == {f"failsafe-sales-by-product-{query_id}"}
    assert all(p["published"] and p["attempts"] == 1 for line in lines for p in line["partitions"])
    # Each batch's publishing job noted its start (what kill-driver when = "publishing" waits for).
    starts = [json.loads(line) for line in (out / "_publishing.jsonl").read_text().splitlines()]
    assert [s["batch_id"] for s in starts] == [line["batch_id"] for line in lines]
    assert all(s["started_at"] <= line["written_at"] for s, line in zip(starts, lines, strict=True))
    # A new checkpoint under a prefix whose marker group holds offsets would skip batches: refused in one line.
    reused = clean_demo.cli(
        *run[:-1],
        str(tmp_path / "ck-new"),
        "--transactional-id-prefix",
        f"failsafe-sales-by-product-{query_id}",
        timeout_s=PIPELINE_TIMEOUT_S,
    )
    assert reused.returncode == 2 and "holds offsets of an earlier query" in reused.stderr, reused.stderr[-2000:]
    assert reused.stderr.strip().count("\n") == 0


@pytest.mark.long
def test_the_ceiling_benchmark_runs_end_to_end_in_smoke_mode(clean_demo: RunningCluster, tmp_path: Path) -> None:
    """benchmarks/bench_pipeline.py on a tiny backlog: the pipeline's and the ceiling query's rates are both
    measured."""
    import subprocess
    import sys

    out = tmp_path / "pipeline.json"
    proc = subprocess.run(
        [
            sys.executable,
            "benchmarks/bench_pipeline.py",
            "--dir",
            str(clean_demo.dir),
            "--work",
            str(tmp_path / "work"),
            "--backlog",
            "2000",
            "--batch",
            "1000",
            "--live-s",
            "0",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=PIPELINE_TIMEOUT_S,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    backlog = json.loads(out.read_text())["backlog"]
    assert backlog["steady_records_per_s"] > 0 and backlog["ceiling"]["steady_records_per_s"] > 0
    assert backlog["ceiling"]["records"] >= 2000 and backlog["sink_equals_ledger"] is True
    assert backlog["pipeline_wall_s_over_ceiling"] > 0 and backlog["pipeline_steady_over_ceiling"] > 0
