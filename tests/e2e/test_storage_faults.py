"""Storage faults on a real cluster: a follower's segment corrupted at rest under acks=all is VALID and the run quotes
the broker's own line about it; on a cluster on disk layers (long), a slow leader costs latency and fails nothing
over, and a follower restarted while its disk reads back wrong bytes cuts its log and fetches it again."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from failsafe.disk import unavailable_reason
from tests.conftest import RunningCluster, module_cluster
from tests.e2e.test_lab_scenarios import assert_valid_run, only_run_dir

pytestmark = [pytest.mark.cluster]
RUN_TIMEOUT_S = 240
UNAVAILABLE = unavailable_reason()


def _run(cluster: RunningCluster, tmp_path: Path, scenario: str, *extra: str) -> tuple[int, dict, list[dict], str]:
    runs = tmp_path / "runs"
    result = cluster.cli("run", scenario, "--runs", str(runs), *extra, timeout_s=RUN_TIMEOUT_S)
    run_dir = only_run_dir(runs, scenario)
    assert (run_dir / "results.json").is_file(), result.stdout + result.stderr
    history = [json.loads(line) for line in (run_dir / "history.jsonl").read_text().splitlines()]
    return result.returncode, assert_valid_run(run_dir), history, result.stdout


def _fault(history: list[dict], f: str) -> dict:
    return next(op for op in history if op["f"] == f and op.get("ok", True))


def test_a_follower_s_corrupted_segment_is_valid_and_the_broker_s_line_is_quoted(
    shared_cluster: RunningCluster, tmp_path: Path
) -> None:
    code, results, history, stdout = _run(shared_cluster, tmp_path, "corrupt-follower-segment")
    assert code == 0, stdout
    start, stop = _fault(history, "fault-start"), _fault(history, "fault-stop")
    ((node, changed),) = start["details"]["changed"].items()
    assert changed["file"].startswith("corrupted-0/") and changed["file"].endswith(".log")
    assert changed["bytes_changed"] >= 1 and changed["size_after"] == changed["size_before"]
    # What Kafka said: its log recovery found the flipped batch and cut its log there (LogSegment, LogLoader).
    (fault,) = results["measurements"]["storage"]["faults"]
    assert fault["detected"] and fault["nodes"] == [int(node)], fault
    assert "corruption-found" in fault["events"] and "log-truncated" in fault["events"], fault
    assert "Found invalid messages in log segment" in fault["first_line"] and "corrupted-0" in fault["first_line"]
    assert any("Corruption found in segment" in line for line in stop["details"]["log_lines"][node])
    assert stop["details"]["refused_to_start"] is None
    assert results["checkers"]["durability"]["counts"]["lost"] == 0


@pytest.fixture(scope="module")
def layered(shared_cluster_holder: dict, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningCluster]:
    yield from module_cluster(shared_cluster_holder, tmp_path_factory, "layered", "--volatile-disks")


@pytest.mark.long
@pytest.mark.breaks_cluster
@pytest.mark.fuse
@pytest.mark.skipif(UNAVAILABLE is not None, reason=UNAVAILABLE or "")
def test_a_slow_leader_is_slowed_and_stays_the_leader(layered: RunningCluster, tmp_path: Path) -> None:
    code, results, history, stdout = _run(layered, tmp_path, "disk-slow-leader")
    assert code == 0, stdout
    stop = _fault(history, "fault-stop")
    assert stop["details"]["slowed_ops"] > 0 and stop["details"]["waited_s"] > 0 and not stop["details"]["was_down"]
    (fault,) = results["checkers"]["availability"]["faults"]
    assert all(p["new_leader"] is None for p in fault["affected_partitions"]), fault  # nothing failed it over
    assert results["measurements"]["faults"][0]["ack_latency_ms"]["acknowledged"] > 0


@pytest.mark.long
@pytest.mark.breaks_cluster
@pytest.mark.fuse
@pytest.mark.skipif(UNAVAILABLE is not None, reason=UNAVAILABLE or "")
def test_a_follower_restarted_on_a_disk_that_reads_wrong_cuts_its_log_and_loses_nothing(
    layered: RunningCluster, tmp_path: Path
) -> None:
    code, results, history, stdout = _run(layered, tmp_path, "corrupt-on-read-follower")
    assert code == 0, stdout
    stop = _fault(history, "fault-stop")
    ((node, reads),) = stop["details"]["corrupted_reads"].items()
    assert reads >= 1, stop  # reads of its segment reached the layer and came back wrong
    (fault,) = results["measurements"]["storage"]["faults"]
    assert fault["detected"] and fault["nodes"] == [int(node)], fault
