"""A broker added to a running cluster and partitions moved to it, on real clusters (make test-long: the scenarios
run N times in benchmarks/lifecycle.sh reassign, docs/lifecycle.md).

- `failsafe broker add` then `failsafe reassign` on a cluster of the test's: the new broker registered, the topic's
  replicas on broker 0 on broker 3 after, the plan kept;
- reassign-destination-killed as a newcomer runs it: the run starts its own cluster, adds a broker, moves to it,
  kills it mid-move, and deletes the cluster after (nothing left running), VALID with the move completed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import stop_cluster
from tests.helpers import TEST_HEAP, alive_pids, cluster_ports, run_cli

pytestmark = [pytest.mark.cluster, pytest.mark.breaks_cluster, pytest.mark.slow, pytest.mark.long]


@pytest.fixture(autouse=True)
def _no_shared_cluster(shared_cluster_holder: dict) -> None:
    if "cluster" in shared_cluster_holder:  # one cluster at a time on this machine
        stop_cluster(shared_cluster_holder.pop("cluster"))


def test_a_broker_added_takes_the_replicas_moved_to_it(tmp_path: Path) -> None:
    cluster = tmp_path / "cluster"
    ports = cluster_ports(4, 1)  # a fourth broker port free for the one added
    up = run_cli("up", "--dir", str(cluster), "--heap", TEST_HEAP, *ports)
    assert up.returncode == 0, up.stderr
    try:
        # Made on the three brokers first: every partition has a replica on broker 0.
        env = {"FAILSAFE_DIR": str(cluster)}
        made = run_cli(
            "kafka", "topics", "--create", "--topic", "moved", "--partitions", "3", "--replication-factor", "3", env=env
        )
        assert made.returncode == 0, made.stderr
        added = run_cli("broker", "add", "--dir", str(cluster), timeout_s=300)
        assert added.returncode == 0, added.stderr
        assert "broker 3" in added.stderr and "the cluster has 4 brokers" in added.stderr
        moved = run_cli(
            "reassign", "--dir", str(cluster), "--from", "0", "--topic", "moved", "--throttle", "1000000", timeout_s=300
        )
        assert moved.returncode == 0, moved.stderr
        assert "3 partition(s) moved from broker 0 to broker 3" in moved.stderr
        described = run_cli("kafka", "topics", "--describe", "--topic", "moved", env=env).stdout
        rows = [line for line in described.splitlines() if "Replicas: " in line]
        replicas = [row.split("Replicas: ")[1].split("\t")[0] for row in rows]
        assert len(replicas) == 3 and all("3" in r.split(",") and "0" not in r.split(",") for r in replicas), described
        assert len(list(cluster.glob("reassignment-*.json"))) == 1
    finally:
        run_cli("clean", "--dir", str(cluster), "--timeout-s", "20")
    assert alive_pids(cluster) == []


def test_a_move_whose_destination_is_killed_completes_and_loses_nothing(tmp_path: Path) -> None:
    cluster, runs = tmp_path / "cluster", tmp_path / "runs"
    result = run_cli(
        "run",
        "reassign-destination-killed",
        "--dir",
        str(cluster),
        "--runs",
        str(runs),
        "--heap",
        TEST_HEAP,
        "--set",
        "phases.warmup_s=5",
        timeout_s=600,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    results = json.loads(next(runs.glob("reassign-destination-killed/*/results.json")).read_text())
    moved = results["measurements"]["reassignment"]
    assert (moved["brokers_added"], moved["moves_completed"], moved["faults_during_moves"]) == (1, 1, 1)
    assert results["checkers"]["delivery"]["counts"]["lost"] == 0
    # The run left the cluster with four brokers: it deleted it, its runs kept.
    assert not (cluster / "failsafe-state.json").exists()
    assert alive_pids(cluster) == []
