"""A dynamic controller quorum (KIP-853) on a real cluster: a controller added and removed under load, checked, and
what the quorum refuses.

One cluster for the module, with one voter to keep it cheap: up with --dynamic-quorum, the
quorum-add-remove-controller scenario on it (a second voter added, a topic created, it removed, a topic created), then
the removal of the only voter refused in one line, then clean. The three-voter scenarios and the active controller's
removal run in the measurements (docs/lifecycle.md).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import RunningCluster, stop_cluster
from tests.helpers import TEST_HEAP, alive_pids, assert_one_line_error, cluster_ports, run_cli

pytestmark = [pytest.mark.cluster, pytest.mark.breaks_cluster, pytest.mark.slow]
ONE_VOTER = ("--set", "cluster.controllers=1", "--set", "actions[2].node=1001")


@pytest.fixture(scope="module")
def dynamic(shared_cluster_holder: dict, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningCluster]:
    if "cluster" in shared_cluster_holder:
        stop_cluster(shared_cluster_holder.pop("cluster"))
    path = tmp_path_factory.mktemp("quorum") / "cluster"
    ports = cluster_ports(3, 2)  # a second controller port free for the one added
    result = run_cli("up", "--dir", str(path), "--controllers", "1", "--dynamic-quorum", "--heap", TEST_HEAP, *ports)
    assert result.returncode == 0, result.stderr
    cluster = RunningCluster(path, result.stdout.strip().splitlines()[-1])
    yield cluster
    if (path / "failsafe-state.json").exists():
        run_cli("clean", "--dir", str(path), "--timeout-s", "20")
    assert alive_pids(path) == [], "a test left Kafka processes running"


# benchmarks/lifecycle.sh quorum runs a controller added and removed under load (docs/benchmarks/lifecycle-quorum.json):
# make test's budget keeps it in make test-long.
@pytest.mark.long
def test_a_controller_added_and_removed_under_load_is_checked(dynamic: RunningCluster, tmp_path: Path) -> None:
    result = dynamic.cli("run", "quorum-add-remove-controller", *ONE_VOTER, "--runs", str(tmp_path), timeout_s=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    results = json.loads(next(tmp_path.glob("quorum-add-remove-controller/*/results.json")).read_text())
    changes = results["measurements"]["quorum_changes"]
    assert [(c["change"], c["nodes"], c["completed"]) for c in changes["by_change"]] == [
        ("add-controller", ["1001"], True),
        ("remove-controller", ["1001"], True),
    ]
    assert changes["topics_created_after"] == 2
    assert results["checkers"]["delivery"]["counts"]["lost"] == 0
    state = json.loads((dynamic.dir / "failsafe-state.json").read_text())
    assert state["spec"]["retired_controllers"] == [1001]
    status = json.loads(dynamic.cli("status", "--json").stdout)
    assert [n["id"] for n in status["nodes"] if n["role"] == "controller"] == [1000]


def test_the_only_voter_is_not_removed(dynamic: RunningCluster) -> None:
    assert_one_line_error(dynamic.cli("controller", "remove", timeout_s=120), "the quorum's only voter")
    assert_one_line_error(dynamic.cli("controller", "remove", "1001"), "no controller 1001")
