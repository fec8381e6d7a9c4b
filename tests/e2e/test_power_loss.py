"""Power loss on a real cluster whose data sits on disk layers (failsafe up --volatile-disks): with Kafka's default
flush an acknowledged write dies with the page cache and the delivery checker names it; with flush.messages=1 nothing
acknowledged is lost; a SIGKILL of failsafe mid-fault, ``down`` and ``clean`` leave no mount behind."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from failsafe.cluster.state import ClusterDir
from failsafe.disk import find_layers, is_mounted, unavailable_reason
from tests.conftest import RunningCluster, start_cluster, stop_cluster
from tests.e2e.test_lab_scenarios import only_run_dir
from tests.helpers import alive_pids, sigkill_run_when

UNAVAILABLE = unavailable_reason()
pytestmark = [
    pytest.mark.cluster,
    pytest.mark.breaks_cluster,
    pytest.mark.fuse,
    pytest.mark.skipif(UNAVAILABLE is not None, reason=UNAVAILABLE or ""),
]

SCENARIO = "power-loss-single-broker"
RUN_TIMEOUT_S = 240
FLUSH_EACH = ("--set", 'topics[0].configs."flush.messages"="1"', "--set", 'expect[0].op="=="')


def mounts_under(root: Path) -> list[str]:
    """Every disk layer's mountpoint under ``root``, from the kernel's own table."""
    prefix = str(root.resolve()) + "/"
    with open("/proc/self/mountinfo") as f:
        fields = [line.split() for line in f]
    return [f[4] for f in fields if f[f.index("-") + 1] == "fuse.failsafe-disk" and f[4].startswith(prefix)]


@pytest.fixture(scope="module")
def disk_cluster(shared_cluster_holder: dict, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningCluster]:
    if "cluster" in shared_cluster_holder:
        stop_cluster(shared_cluster_holder.pop("cluster"))
    cluster = start_cluster(
        tmp_path_factory.mktemp("power") / "cluster", "--volatile-disks", "--brokers", "1", brokers=1
    )
    yield cluster
    if ClusterDir(cluster.dir).has_state():  # the last test cleans it away
        stop_cluster(cluster)
    assert mounts_under(cluster.dir.parent) == [], "a disk layer outlived its cluster"


def _run(cluster: RunningCluster, tmp_path: Path, *extra: str) -> tuple[int, dict, str]:
    runs = tmp_path / "runs"
    # A group of its own: a power cut rolls __consumer_offsets back too (default flush), and the deletion of the group a
    # run before used (the setup's) with it, so that group's old commits would come back (docs/disk-faults.md).
    group = ("--set", f'consumers[0].group="readers-{tmp_path.name}"')
    result = cluster.cli("run", SCENARIO, "--runs", str(runs), *group, *extra, timeout_s=RUN_TIMEOUT_S)
    run_dir = only_run_dir(runs, SCENARIO)
    assert (run_dir / "results.json").is_file(), result.stdout + result.stderr
    history = (run_dir / "history.jsonl").read_text()
    return result.returncode, json.loads((run_dir / "results.json").read_text()), history


def test_every_node_keeps_its_data_on_a_mounted_layer(disk_cluster: RunningCluster) -> None:
    cdir = ClusterDir(disk_cluster.dir)
    nodes = cdir.load().spec.nodes()
    assert sorted(mounts_under(disk_cluster.dir)) == sorted(str(cdir.data_dir(n).resolve()) for n in nodes)
    assert all((cdir.root / f"{cdir.data_dir(n).name}.disk" / "meta.properties").is_file() for n in nodes)
    status = disk_cluster.cli("status", "--json")
    assert status.returncode == 0, status.stderr
    disks = [n["disk"] for n in json.loads(status.stdout)["nodes"]]
    assert len(disks) == len(nodes) and all(
        d is not None and d["unsynced_bytes"] >= 0 and d["injection"]["full"] is False for d in disks
    )


def test_default_flush_loses_acknowledged_writes_and_the_delivery_checker_names_them(
    disk_cluster: RunningCluster, tmp_path: Path
) -> None:
    code, results, history = _run(disk_cluster, tmp_path)
    delivery = results["checkers"]["delivery"]
    assert code == 1 and results["valid"] is False, delivery
    assert delivery["counts"]["lost-after-read"] > 0 and "lost-after-read" in delivery["violations"]
    assert [e["valid"] for e in results["expectations"]] == [True]
    examples = delivery["examples"]["lost-after-read"]
    assert examples and all(e["topic"] == "unflushed" and e["offset"] is not None for e in examples)
    start = next(json.loads(line) for line in history.splitlines() if '"fault-start"' in line)
    assert (
        start["fault"] == "power-loss" and start["family"] == "disk" and start["details"]["lost"]["0"]["bytes_lost"] > 0
    )


def test_flush_messages_1_loses_nothing_acknowledged(disk_cluster: RunningCluster, tmp_path: Path) -> None:
    code, results, _ = _run(disk_cluster, tmp_path, *FLUSH_EACH)
    counts = results["checkers"]["delivery"]["counts"]
    assert counts["acknowledged"] > 0 and counts["lost"] == 0 and counts["lost-after-read"] == 0, counts
    assert code == 0 and results["valid"] is True, results["checkers"]


def test_a_sigkill_of_failsafe_mid_fault_then_down_and_clean_leave_no_mount_nor_injection(
    disk_cluster: RunningCluster, tmp_path: Path
) -> None:
    cdir = ClusterDir(disk_cluster.dir)
    broker = cdir.load().spec.brokers_nodes()[0]
    # The power cut unmounts the broker's layer; the heal mounts it again 3 s later.
    sigkill_run_when(
        disk_cluster.dir, SCENARIO, tmp_path, lambda: not is_mounted(cdir.data_dir(broker)), "the run's power loss"
    )
    # A disk-full or disk-error left in force by a dead failsafe lives in its layer's daemon: down takes it with the
    # mount.
    from failsafe.cluster.topology.lifecycle import Cluster

    cluster = Cluster.open(disk_cluster.dir)
    controller = cluster.spec.controller_nodes()[0]
    assert cluster.disk_inject(controller, "error", ops="read", glob="*.snapshot")["injection"]["error"] == {
        "ops": "read",
        "glob": "*.snapshot",
    }
    # The nodes and their layers outlive failsafe, as they do after 'up'; down stops the one, unmounts the other.
    result = disk_cluster.cli("down")
    assert result.returncode == 0, result.stderr
    assert (
        alive_pids(disk_cluster.dir) == []
        and mounts_under(disk_cluster.dir) == []
        and find_layers(disk_cluster.dir) == []
    )
    # Up again: the layers are mounted again over what the broker had made durable; clean unmounts them before it
    # deletes.
    result = disk_cluster.cli("up")
    assert result.returncode == 0, result.stderr
    assert len(mounts_under(disk_cluster.dir)) == 2
    status = json.loads(disk_cluster.cli("status", "--json").stdout)
    assert all(
        n["disk"]["injection"] == {"full": False, "error": None, "slow": None, "corrupt": None} for n in status["nodes"]
    ), status["nodes"]
    result = disk_cluster.cli("clean")
    assert result.returncode == 0, result.stderr
    assert not disk_cluster.dir.exists() and mounts_under(disk_cluster.dir) == []
