"""The pipeline on a Spark standalone cluster that 'failsafe spark up' started: same input, same totals as local[2].

Shares the session's Kafka cluster (demo topics deleted afterwards); the Spark cluster is the test's own,
on free ports, and 'failsafe spark down' must leave none of its JVMs (master, workers, executors) running.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import polars as pl
import psutil
import pytest

from failsafe.checkers.pipeline.sales import KEY, current_totals
from failsafe.pipeline.sink import read_progress, read_sales_rows
from failsafe.pipeline.state_census import state_rows_by_partition
from tests.conftest import RunningCluster
from tests.helpers import run_cli, spark_base_port
from tests.pipeline.conftest import PIPELINE_TIMEOUT_S

# Long (make test-long): pipeline-executor-loss (tests/e2e/test_pipeline_scenarios.py) runs the pipeline on a standalone
# cluster it starts and stops, with the sink checked against the ledger, in make test; this one adds 'failsafe spark
# up/down' by hand and the equality with local[*], at 140 s.
pytestmark = [pytest.mark.spark, pytest.mark.cluster, pytest.mark.slow, pytest.mark.long]


class Descendants:
    """Every process below the workers while the job runs: their executor JVMs, to check they are gone after 'down'."""

    def __init__(self, roots: list[int]) -> None:
        self.roots = roots
        self.seen: set[tuple[int, float]] = set()
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._watch, daemon=True)
        self.thread.start()

    def _watch(self) -> None:
        while not self.done.wait(0.5):
            for pid in self.roots:
                try:
                    self.seen |= {(c.pid, c.create_time()) for c in psutil.Process(pid).children(recursive=True)}
                except psutil.NoSuchProcess:
                    pass

    def stop(self) -> set[tuple[int, float]]:
        self.done.set()
        self.thread.join()
        return self.seen


def alive(pid: int, create_time: float) -> bool:
    """Still running: a zombie has exited (it waits only for its new parent, init, to collect it)."""
    try:
        process = psutil.Process(pid)
        return abs(process.create_time() - create_time) < 0.05 and process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_the_pipeline_on_spark_standalone_equals_local_and_spark_down_leaves_nothing(
    clean_demo: RunningCluster, tmp_path: Path, spark
) -> None:
    ledger = tmp_path / "ledger"
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
        "13",
        "--ledger",
        str(ledger),
        timeout_s=PIPELINE_TIMEOUT_S,
    )
    assert sim.returncode == 0, sim.stderr

    def pipeline(name: str, *master: str):
        return clean_demo.cli(
            "pipeline",
            "run",
            "--available-now",
            "--no-publish",
            "--output",
            str(tmp_path / name),
            "--checkpoint",
            str(tmp_path / f"{name}-ck"),
            *master,
            timeout_s=PIPELINE_TIMEOUT_S,
        )

    local = pipeline("local")
    assert local.returncode == 0, local.stderr[-3000:]

    spark_dir = tmp_path / "spark-home"
    up = run_cli(
        "spark", "up", "--dir", str(spark_dir), "--port", str(spark_base_port(2)), timeout_s=PIPELINE_TIMEOUT_S
    )
    try:
        assert up.returncode == 0, up.stderr
        master_url = up.stdout.strip()
        assert master_url.startswith("spark://127.0.0.1:")
        status = json.loads(run_cli("spark", "status", "--dir", str(spark_dir), "--json").stdout)
        assert status["master"]["status"] == "ALIVE" and [w["registered"] for w in status["workers"]] == [True, True]
        daemons = [(status["master"]["pid"], None)] + [(w["pid"], None) for w in status["workers"]]
        daemons = [(p.pid, p.create_time()) for p in (psutil.Process(pid) for pid, _ in daemons)]
        executors = Descendants([w["pid"] for w in status["workers"]])
        try:
            standalone = pipeline("standalone", "--master", master_url)
        finally:
            below_workers = executors.stop()
        assert standalone.returncode == 0, standalone.stderr[-3000:]
        assert below_workers, "no executor ran under the workers: the job did not run on the standalone cluster"
        submitted = spark_submit(master_url, clean_demo.bootstrap, tmp_path / "submitted")
        assert submitted.returncode == 0, submitted.stderr[-3000:]
    finally:
        down = run_cli("spark", "down", "--dir", str(spark_dir), timeout_s=120)
    assert down.returncode == 0, down.stderr
    left = [pid for pid, created in [*daemons, *below_workers] if alive(pid, created)]
    assert left == [], f"processes of the Spark cluster still running after 'spark down': {left}"
    assert "nothing of Spark was running" in run_cli("spark", "down", "--dir", str(spark_dir)).stderr

    for name in ("local", "standalone", "submitted"):
        verify = run_cli("pipeline", "verify", "--output", str(tmp_path / name), "--ledger", str(ledger), "--json")
        assert verify.returncode == 0, (name, verify.stdout[-3000:])
        assert json.loads(verify.stdout)["totals"]["ledger"]["purchases"] == 3000
    # The running totals are spread over both executors: Spark's coordinator placed state partitions on each, and the
    # State Data Source finds rows in the partitions of each (their sum: the last batch's state rows).
    progress = [line for line in read_progress(tmp_path / "standalone") if line["query"] == "sales-by-product"]
    locations = [line["state_locations"] for line in progress if line.get("state_locations")][-1]
    assert len(locations) == progress[-1]["state_partitions"] == 4 and len(set(locations.values())) == 2, locations
    rows = state_rows_by_partition(spark, str(tmp_path / "standalone-ck" / "sales-by-product"))
    assert (
        sum(rows.values()) == progress[-1]["state_rows"] > 0
    )  # the newest version: after the last batch, no-data ones included
    by_executor = {
        executor: sum(rows.get(int(p), 0) for p, e in locations.items() if e == executor)
        for executor in set(locations.values())
    }
    assert all(by_executor.values()), by_executor
    local_totals = sink_now(tmp_path / "local")
    assert local_totals.height > 0
    assert local_totals.equals(sink_now(tmp_path / "standalone")) and local_totals.equals(
        sink_now(tmp_path / "submitted")
    )


def sink_now(output: Path) -> pl.DataFrame:
    """Each (window, product)'s current total (the checker's rule), without the batch it came from: batch boundaries
    differ between runs."""
    return current_totals(read_sales_rows(output)).drop("batch_id").sort(KEY)


def spark_submit(master_url: str, bootstrap: str, output: Path) -> subprocess.CompletedProcess:
    """docs/pipeline.md's spark-submit path, with the resolved connector as --jars instead of --packages (no Maven at
    test time)."""
    import pyspark

    import failsafe.pipeline.submit
    from failsafe.jvm.spark import spark_kafka_dist

    jars = ",".join(str(j) for j in spark_kafka_dist().jars)
    return subprocess.run(
        [
            str(Path(pyspark.__file__).parent / "bin" / "spark-submit"),
            "--master",
            master_url,
            "--jars",
            jars,
            failsafe.pipeline.submit.__file__,
            "--bootstrap-server",
            bootstrap,
            "--output",
            str(output),
            "--checkpoint",
            str(output.with_name("submitted-ck")),
            "--available-now",
            "--no-publish",
        ],
        capture_output=True,
        text=True,
        timeout=PIPELINE_TIMEOUT_S,
        env={**os.environ, "PYSPARK_PYTHON": sys.executable},
    )
