"""Tiered storage on a real cluster (docs/tiered-storage.md): a tiered topic whose leader is killed while it copies
segments to the remote tier is VALID, the tier holds the partition's oldest segments, and the acknowledged writes only
the tier held when the run ended were read back by the final read."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from failsafe.cluster import tiered
from failsafe.cluster.state import ClusterDir
from failsafe.disk import unavailable_reason
from tests.conftest import RunningCluster, module_cluster
from tests.e2e.test_lab_scenarios import assert_valid_run, only_run_dir

UNAVAILABLE = unavailable_reason()
pytestmark = [
    pytest.mark.cluster,
    pytest.mark.breaks_cluster,
    pytest.mark.slow,
    pytest.mark.fuse,
    pytest.mark.skipif(UNAVAILABLE is not None, reason=str(UNAVAILABLE)),
]
RUN_TIMEOUT_S = 300


@pytest.fixture(scope="module")
def tiered_cluster(shared_cluster_holder: dict, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningCluster]:
    yield from module_cluster(shared_cluster_holder, tmp_path_factory, "tiered", "--tiered-storage")


def test_a_tiered_topic_s_leader_killed_during_copy_loses_nothing_and_the_tier_is_read(
    tiered_cluster: RunningCluster, tmp_path: Path
) -> None:
    scenario = "tiered-leader-killed-during-copy"
    runs = tmp_path / "runs"
    result = tiered_cluster.cli("run", scenario, "--runs", str(runs), timeout_s=RUN_TIMEOUT_S)
    run_dir = only_run_dir(runs, scenario)
    results = assert_valid_run(run_dir)
    assert result.returncode == 0, result.stdout + result.stderr
    assert results["checkers"]["durability"]["counts"]["lost"] == 0
    history = [json.loads(line) for line in (run_dir / "history.jsonl").read_text().splitlines()]
    start = next(op for op in history if op["f"] == "fault-start")
    assert start["fault"] == "kill" and start["role"] == "leader of tiered-0", start
    # The remote tier holds tiered-0 from its first offset on, and every replica's own disk starts later.
    spec = ClusterDir(tiered_cluster.dir).load().spec
    held = tiered.remote_segments(tiered_cluster.dir, tiered.topic_ids(tiered_cluster.dir, spec))
    assert held["tiered-0"]["segments"] >= 2 and held["tiered-0"]["base_offsets"][0] == 0, held
    starts = tiered.local_log_starts(tiered_cluster.dir, spec)
    # A send acknowledged without its offset (the delivery report said -1, kept as None) has no place to compare.
    acked = {
        (op["partition"], op["offset"])
        for op in history
        if op["f"] == "send" and op["type"] == "ok" and op["offset"] is not None
    }
    read = {(op["partition"], r["offset"]) for op in history if op["f"] == "log-read" for r in op.get("records") or ()}
    only_in_tier = {(p, o) for p, o in acked if o < starts.get(f"tiered-{p}", 0)}
    assert len(only_in_tier) > 100, (starts, len(acked))
    assert only_in_tier <= read
