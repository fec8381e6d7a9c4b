"""Clock faults on a real cluster made with --clock-faults: every broker and controller runs with libfaketime reading
its clock file; a broker clock jumped an hour past a topic's retention deletes acknowledged writes early (INVALID, each
one deleted early), a jump of a minute deletes nothing (the controlled comparison); a failsafe killed mid-jump leaves
no clock apart, and down leaves no node or keeper running."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from failsafe.cluster import clocks
from failsafe.cluster.state import ClusterDir
from failsafe.waiting import wait_until
from tests.conftest import RunningCluster, start_cluster, stop_cluster
from tests.e2e.test_lab_scenarios import only_run_dir
from tests.helpers import alive_pids, sigkill_run_when

pytestmark = [pytest.mark.cluster, pytest.mark.breaks_cluster]
RUN_TIMEOUT_S = 240
SCENARIO = "retention-clock-jump"
# What the scenario's cluster needs (its [cluster] overrides): retention checked every second from a second after start.
RETENTION_CHECKS = ("log.retention.check.interval.ms=1000", "log.initial.task.delay.ms=1000")


@pytest.fixture(scope="module")
def clocked(shared_cluster_holder: dict, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningCluster]:
    if "cluster" in shared_cluster_holder:
        stop_cluster(shared_cluster_holder.pop("cluster"))
    overrides = [arg for pair in RETENTION_CHECKS for arg in ("--override", pair)]
    cluster = start_cluster(tmp_path_factory.mktemp("clocked") / "cluster", "--clock-faults", *overrides)
    yield cluster
    stop_cluster(cluster)  # the last test stopped it already: down again finds nothing running


def _run(cluster: RunningCluster, tmp_path: Path, *extra: str) -> tuple[int, dict, list[dict]]:
    runs = tmp_path / "runs"
    result = cluster.cli("run", SCENARIO, "--runs", str(runs), *extra, timeout_s=RUN_TIMEOUT_S)
    run_dir = only_run_dir(runs, SCENARIO)
    assert (run_dir / "results.json").is_file(), result.stdout + result.stderr
    history = [json.loads(line) for line in (run_dir / "history.jsonl").read_text().splitlines()]
    return result.returncode, json.loads((run_dir / "results.json").read_text()), history


def test_every_node_reads_its_own_clock_file(clocked: RunningCluster) -> None:
    spec = ClusterDir(clocked.dir).load().spec
    for node in spec.nodes():
        pid = int((clocked.dir / "pids" / f"{node.name}.pid").read_text().split()[0])
        env = psutil.Process(pid).environ()
        assert env["LD_PRELOAD"] == str(clocks.library()), node.name
        assert Path(env["FAKETIME_TIMESTAMP_FILE"]) == clocks.clock_file(clocked.dir.resolve(), node.name)
        assert env["FAKETIME_DONT_FAKE_MONOTONIC"] == "1"
    assert set(clocks.offsets(clocked.dir).values()) == {0.0}


def test_a_broker_clock_an_hour_ahead_deletes_acknowledged_writes_within_their_retention(
    clocked: RunningCluster, tmp_path: Path
) -> None:
    code, results, history = _run(clocked, tmp_path)
    durability = results["checkers"]["durability"]
    start = next(op for op in history if op["f"] == "fault-start")
    assert start["fault"] == "clock-jump" and set(start["details"]["offsets_s"].values()) == {3600.0}, start
    counts = durability["counts"]
    assert counts["lost-deleted-early"] > 0, counts
    assert counts["lost"] == counts["lost-deleted-early"], counts  # every loss is a deletion retention did not allow
    assert code == 1, results["checkers"]
    assert set(clocks.offsets(clocked.dir).values()) == {0.0}


# benchmarks/clock_runs.py runs it 3 times (docs/clock-faults.md); make test keeps the jump past retention.
@pytest.mark.long
def test_a_clock_a_minute_ahead_deletes_nothing(clocked: RunningCluster, tmp_path: Path) -> None:
    code, results, _ = _run(clocked, tmp_path, "--set", "faults[0].offset_s=60")
    counts = results["checkers"]["durability"]["counts"]
    assert counts["lost"] == 0 and counts["unverified"] == 0, counts
    assert code == 0, results["checkers"]


def test_a_failsafe_killed_mid_jump_puts_every_clock_back_and_down_leaves_nothing(
    clocked: RunningCluster, tmp_path: Path
) -> None:
    sigkill_run_when(
        clocked.dir,
        SCENARIO,
        tmp_path,
        lambda: any(offset for offset in clocks.offsets(clocked.dir).values()),
        "the run's clock jump",
    )
    # The keeper sees its failsafe's pipe close and puts the clocks back by itself.
    wait_until(
        lambda: set(clocks.offsets(clocked.dir).values()) == {0.0}, 10, "a dead failsafe's clock jump stayed in force"
    )
    stopped = clocked.cli("down")
    assert stopped.returncode == 0, stopped.stderr
    assert alive_pids(clocked.dir) == [], "down left a node or a clock keeper running"
    assert not list(clocks.clocks_dir(clocked.dir).glob("keeper-*.pid"))
