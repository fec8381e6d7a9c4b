"""A rolling upgrade on a real cluster: Kafka 4.3.1 rolled onto 4.4.0 under load and finalized, checked, and then the
new release through a broker failover.

One cluster for the module, in the order a user would go: up on 4.3.1, the rolling-upgrade scenario on it (one
controller here, so four rolls and the finalize: the three-controller scenario is in the findings, docs/lifecycle.md),
broker-failover on the upgraded cluster, down.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import RunningCluster, stop_cluster
from tests.helpers import TEST_HEAP, alive_pids, cluster_ports, run_cli

pytestmark = [pytest.mark.cluster, pytest.mark.breaks_cluster, pytest.mark.slow]
FROM, TO = "4.3.1", "4.4.0"
LIBRDKAFKA_4953 = {"delivery.duplicate-acknowledged", "delivery.duplicate-unacknowledged"}


@pytest.fixture(scope="module")
def old_cluster(shared_cluster_holder: dict, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningCluster]:
    if "cluster" in shared_cluster_holder:
        stop_cluster(shared_cluster_holder.pop("cluster"))
    path = tmp_path_factory.mktemp("upgrade") / "cluster"
    result = run_cli("up", "--dir", str(path), "--kafka-version", FROM, "--heap", TEST_HEAP, *cluster_ports(3, 1))
    assert result.returncode == 0, result.stderr
    cluster = RunningCluster(path, result.stdout.strip().splitlines()[-1])
    yield cluster
    if (path / "failsafe-state.json").exists():
        run_cli("clean", "--dir", str(path), "--timeout-s", "20")
    assert alive_pids(path) == [], "a test left Kafka processes running"


def _judged(result, runs: Path, scenario: str) -> dict:
    # VALID, or KNOWN for exactly the scenario's declared librdkafka#4953 duplicates (a controlled shutdown moves a
    # leader while produce requests are in flight).
    assert result.returncode in (0, 4), result.stdout[-3000:] + result.stderr[-2000:]
    results = json.loads(next(runs.glob(f"{scenario}/*/results.json")).read_text())
    if result.returncode == 4:
        assert results["verdict"] == "KNOWN" and "unexplained" not in results, results.get("unexplained")
        assert {k["anomaly"] for k in results["known"]} <= LIBRDKAFKA_4953
    assert results["checkers"]["delivery"]["counts"]["lost"] == 0
    return results


# The rolling upgrade under load, step by step: benchmarks/lifecycle.sh upgrade runs it N times
# (docs/benchmarks/lifecycle-rolling-upgrade.json); make test-long runs it here.
@pytest.mark.long
def test_a_rolling_upgrade_under_load_is_checked_step_by_step(old_cluster: RunningCluster, tmp_path: Path) -> None:
    sets = ("--set", "cluster.controllers=1", "--set", "expect[2].value=4")
    result = old_cluster.cli("run", "rolling-upgrade", *sets, "--runs", str(tmp_path), timeout_s=900)
    results = _judged(result, tmp_path, "rolling-upgrade")
    upgrade = results["measurements"]["upgrade"]
    assert (upgrade["completed"], upgrade["finalized"], upgrade["rolls"]) == (True, True, 4)
    assert [s["description"] for s in upgrade["by_step"]][0] == f"roll controller 1000 from Kafka {FROM} to {TO}"
    # Each roll of a broker is a window the availability checker measured.
    rolled = [
        f for f in results["checkers"]["availability"]["faults"] if f["fault"] == "roll" and f["target"] == "broker"
    ]
    assert len(rolled) == 3 and all(f["affected_partitions"] for f in rolled)
    status = json.loads(old_cluster.cli("status", "--json").stdout)
    assert status["kafka_version"] == TO
    state = json.loads((old_cluster.dir / "failsafe-state.json").read_text())
    assert "node_versions" not in state  # finalized: every node runs the cluster's release
    features = old_cluster.cli("kafka", "features", "describe")
    assert "FinalizedVersionLevel: 4.4-" in features.stdout, features.stdout + features.stderr
    # KAFKA-21426: --release-version also moves the static quorum's kraft.version from 0 to 1 (docs/lifecycle.md).
    history = next(tmp_path.glob("rolling-upgrade/*/history.jsonl")).read_text().splitlines()
    moved = {
        op["feature"]: (op["before"], op["level"])
        for op in map(json.loads, history)
        if op.get("f") == "feature-level" and op.get("by") == "finalize"
    }
    assert moved["kraft.version"] == ("0", 1), moved


# A leader killed under load on 4.4.0: the kill cell of failsafe compare, 5 runs
# (docs/benchmarks/compare-4.3.1-4.4.0.json).
@pytest.mark.long
def test_the_upgraded_cluster_passes_broker_failover(old_cluster: RunningCluster, tmp_path: Path) -> None:
    result = old_cluster.cli("run", "broker-failover", "--runs", str(tmp_path), timeout_s=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    manifest = json.loads(next(tmp_path.glob("broker-failover/*/manifest.json")).read_text())
    assert TO in json.dumps(manifest)
