"""Network faults on a real cluster, as root: links really cut and restored, clients kept or cut as the fault says,
no rule left after heal, down, or a SIGKILL of failsafe mid-partition, another cluster's rules never touched."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest

from failsafe.cluster.net import netfilter
from failsafe.cluster.state import ClusterDir
from failsafe.history.load import load_history
from failsafe.waiting import wait_until
from tests.conftest import RunningCluster, start_cluster, stop_cluster
from tests.e2e.test_lab_scenarios import only_run_dir
from tests.helpers import TEST_HEAP, Result, alive_pids, free_port_block, run_cli

UNAVAILABLE = netfilter.unavailable_reason()
pytestmark = [
    pytest.mark.cluster,
    pytest.mark.breaks_cluster,
    pytest.mark.skipif(UNAVAILABLE is not None, reason=UNAVAILABLE or ""),
]

CONNECT_TIMEOUT_S = 2.0
RUN_TIMEOUT_S = 300
# How long the leash may take to delete a dead run's rules.
LEASH_TIMEOUT_S = 30.0


@pytest.fixture(scope="module")
def net_cluster(shared_cluster_holder: dict, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningCluster]:
    if "cluster" in shared_cluster_holder:
        stop_cluster(shared_cluster_holder.pop("cluster"))
    cluster = start_cluster(tmp_path_factory.mktemp("network") / "cluster")
    yield cluster
    if ClusterDir(cluster.dir).has_state():  # the last tests clean it away
        stop_cluster(cluster)
    assert alive_pids(cluster.dir) == [] and netfilter.list_chains(cluster.dir) == [], (
        "down left nodes or network rules behind"
    )


def _spec(cluster: RunningCluster):
    return ClusterDir(cluster.dir).load().spec


def _node(cluster: RunningCluster, node_id: int):
    return next(n for n in _spec(cluster).nodes() if n.node_id == node_id)


def _gid(cluster: RunningCluster, node_id: int) -> int:
    nodes = _spec(cluster).nodes()
    return netfilter.node_gid(cluster.dir, nodes.index(_node(cluster, node_id)))


def connects(address: str, port: int, as_node_of: RunningCluster | None = None, node_id: int | None = None) -> bool:
    """A TCP connect, as a client (root's own group) or as a process of node ``node_id`` (its group id)."""
    code = f"import socket; socket.create_connection(({address!r}, {port}), timeout={CONNECT_TIMEOUT_S}).close()"
    cmd = [sys.executable, "-c", code]
    if as_node_of is not None and node_id is not None:
        cmd = netfilter.with_gid(cmd, _gid(as_node_of, node_id))
    return subprocess.run(cmd, capture_output=True, timeout=30).returncode == 0


def _status(cluster: RunningCluster) -> list[dict]:
    result = cluster.cli("net", "status", "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["faults"]


def test_every_node_runs_under_its_own_group_id(net_cluster: RunningCluster) -> None:
    cdir = ClusterDir(net_cluster.dir)
    spec = cdir.load().spec
    for slot, node in enumerate(spec.nodes()):
        pid = int(cdir.pidfile(node).read_text().split()[0])
        assert netfilter.process_gid(pid) == netfilter.node_gid(net_cluster.dir, slot), node.name


def test_isolate_cuts_the_node_from_the_other_nodes_and_heal_restores_it(net_cluster: RunningCluster) -> None:
    b0, b1, controller = _node(net_cluster, 0), _node(net_cluster, 1), _spec(net_cluster).controller_nodes()[0]
    assert connects(b1.address, b1.replication_port, net_cluster, 0)
    result = net_cluster.cli("net", "isolate", "0")
    assert result.returncode == 0, result.stderr
    assert "partition {0} | {1000,1,2}" in result.stderr
    try:
        # Broker 0 cannot reach broker 1 or the controller; they cannot reach it.
        assert not connects(b1.address, b1.replication_port, net_cluster, 0)
        assert not connects(controller.address, controller.controller_port, net_cluster, 0)
        assert not connects(b0.address, b0.replication_port, net_cluster, 1)
        # Links that do not cross the partition, and every client, still work.
        assert connects(controller.address, controller.controller_port, net_cluster, 1)
        assert connects("127.0.0.1", b0.port) and connects("127.0.0.1", b1.port)
        (fault,) = _status(net_cluster)
        assert fault["fault"] == "partition {0} | {1000,1,2}" and len(fault["rules"]) == 2
    finally:
        healed = net_cluster.cli("net", "heal")
    assert healed.returncode == 0 and "fault_1" in healed.stderr, healed.stderr
    assert connects(b1.address, b1.replication_port, net_cluster, 0)
    assert _status(net_cluster) == []
    assert "net-heal" in net_cluster.cli("status").stdout


def test_cut_clients_cuts_clients_only(net_cluster: RunningCluster) -> None:
    b2 = _node(net_cluster, 2)
    result = net_cluster.cli("net", "cut-clients", "2")
    assert result.returncode == 0, result.stderr
    try:
        assert not connects("127.0.0.1", b2.port)
        assert connects("127.0.0.1", _node(net_cluster, 0).port)
        assert connects(b2.address, b2.replication_port, net_cluster, 0)
    finally:
        assert net_cluster.cli("net", "heal").returncode == 0
    assert connects("127.0.0.1", b2.port)


def test_bad_sides_and_unknown_nodes_are_one_line_and_exit_2(net_cluster: RunningCluster) -> None:
    for args, fragment in (
        (("partition", "{0} | {bob}"), "'bob' is not a node id"),
        (("isolate", "7"), "no node with id 7"),
        (("partition", "{leader} | {others}"), "give the fault a partition"),
        (("heal", "fault_99"), "no network fault fault_99"),
    ):
        result = net_cluster.cli("net", *args)
        assert result.returncode == 2 and fragment in result.stderr and "Traceback" not in result.stderr, (
            args,
            result.stderr,
        )
        assert len(result.stderr.strip().splitlines()) == 1


def test_without_root_a_network_fault_is_one_line_saying_so(tmp_path: Path) -> None:
    nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"]
    env = {**os.environ, "HOME": str(tmp_path)}
    result = subprocess.run(
        [*nobody, sys.executable, "-m", "failsafe", "net", "isolate", "0", "--dir", str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert result.returncode == 2, result.stderr
    assert (
        result.stderr.strip()
        == "failsafe: network faults need root (nftables rules, and nodes under their own group ids): run "
        "failsafe as root"
    )


def test_a_run_killed_mid_partition_leaves_no_rule(net_cluster: RunningCluster, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    cmd = [sys.executable, "-m", "failsafe", "run", "leader-isolated", "--runs", str(runs)]
    err = tmp_path / "run.stderr"
    with open(err, "wb") as stderr:
        run = subprocess.Popen(
            cmd, env={**os.environ, "FAILSAFE_DIR": str(net_cluster.dir)}, stdout=subprocess.DEVNULL, stderr=stderr
        )
    try:
        wait_until(
            lambda: netfilter.list_chains(net_cluster.dir) or run.poll() is not None,
            120,
            "the run's isolate fault never started",
        )
        assert run.poll() is None, err.read_text()
        run.send_signal(signal.SIGKILL)
        run.wait(timeout=30)
        wait_until(
            lambda: not netfilter.list_chains(net_cluster.dir),
            LEASH_TIMEOUT_S,
            "the leash did not delete the dead run's rules",
        )
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
        netfilter.delete_table(
            net_cluster.dir
        )  # a failure here must not leave the shared cluster split for the next test
    log = (only_run_dir(runs, "leader-isolated") / "network-leash.log").read_text()
    assert "failsafe ended with fault_1 in force; deleted it" in log
    # The run's own workers died with it (parent-death signal); the cluster's nodes did not.
    assert len(alive_pids(net_cluster.dir)) == len(_spec(net_cluster).nodes())


@pytest.mark.slow
# long: benchmarks/network.sh runs leader-isolated 5 times (docs/network.md), the isolate test above the fault itself.
@pytest.mark.long
def test_leader_isolated_loses_nothing_acknowledged_with_acks_all(net_cluster: RunningCluster, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    result = net_cluster.cli("run", "leader-isolated", "--runs", str(runs), timeout_s=RUN_TIMEOUT_S)
    assert result.returncode == 0, result.stdout + result.stderr
    run_dir = only_run_dir(runs, "leader-isolated")
    results = json.loads((run_dir / "results.json").read_text())
    assert results["valid"] is True
    delivery = results["checkers"]["delivery"]
    by_process = delivery["by_process"]
    # Every way of losing an acks=all write counts, lost after it was read included: a VALID run had none of them.
    assert (
        by_process["acksall"]["lost"] == by_process["acksall"]["lost-after-read"] == 0
        and by_process["acksall"]["acknowledged"] > 0
    )
    assert by_process["acksall"]["durable"] is True and by_process["acks1"]["may_lose"] is True
    assert delivery["counts"]["lost"] == delivery["counts"]["lost-allowed"]
    assert delivery["counts"]["lost-after-read"] == delivery["counts"]["lost-after-read-allowed"]
    starts = [
        json.loads(line) for line in (run_dir / "history.jsonl").read_text().splitlines() if '"fault-start"' in line
    ]
    assert (
        starts
        and starts[0]["target"] == "network"
        and starts[0]["family"] == "network"
        and len(starts[0]["sides"]) == 2
    )
    assert netfilter.list_chains(net_cluster.dir) == []


def test_down_and_clean_delete_this_clusters_rules_and_never_another_clusters(
    net_cluster: RunningCluster, tmp_path: Path
) -> None:
    other = tmp_path / "another-cluster"
    netfilter.add_chain(
        other, "fault_1", "another cluster's fault", ["meta skgid 4242 ip daddr 127.0.0.250 counter drop"]
    )
    try:
        assert net_cluster.cli("net", "isolate", "1").returncode == 0
        assert net_cluster.cli("net", "heal").returncode == 0
        assert [c.comment for c in netfilter.list_chains(other)] == ["another cluster's fault"]
        assert net_cluster.cli("net", "isolate", "1").returncode == 0
        assert run_cli("down", "--dir", str(net_cluster.dir)).returncode == 0
        assert netfilter.list_chains(net_cluster.dir) == []
        assert [c.comment for c in netfilter.list_chains(other)] == ["another cluster's fault"]
        listing = subprocess.run(["nft", "list", "ruleset"], capture_output=True, text=True, check=True).stdout
        assert netfilter.table_name(net_cluster.dir) not in listing and netfilter.table_name(other) in listing
    finally:
        netfilter.delete_table(other)
    # Rules a crashed failsafe left for a stopped cluster: clean deletes them with the directory.
    netfilter.add_chain(
        net_cluster.dir, "fault_1", "left by a crash", ["meta skgid 4242 ip daddr 127.0.0.250 counter drop"]
    )
    assert run_cli("clean", "--dir", str(net_cluster.dir)).returncode == 0
    assert (
        netfilter.table_name(net_cluster.dir)
        not in subprocess.run(["nft", "list", "tables"], capture_output=True, text=True).stdout
    )
    # The scenarios below start clusters of their own.


def _run_own(module_cluster: RunningCluster, scenario: str, tmp_path: Path, *extra: str) -> tuple[Result, dict, Path]:
    """``failsafe run`` on a cluster the run starts at a fresh directory (and stops after); the module's cluster is down
    first."""
    if ClusterDir(module_cluster.dir).has_state():
        assert run_cli("down", "--dir", str(module_cluster.dir)).returncode == 0
    runs = tmp_path / "runs"
    result = run_cli(
        "run",
        scenario,
        "--dir",
        str(tmp_path / "cluster"),
        "--heap",
        TEST_HEAP,
        "--base-port",
        str(free_port_block(6)),
        "--runs",
        str(runs),
        *extra,
        timeout_s=RUN_TIMEOUT_S + 120,
    )
    run_dir = only_run_dir(runs, scenario)
    assert (run_dir / "results.json").is_file(), result.stdout + result.stderr
    assert alive_pids(tmp_path / "cluster") == [], "the run left nodes running"
    assert netfilter.list_chains(tmp_path / "cluster") == []
    return result, json.loads((run_dir / "results.json").read_text()), run_dir


@pytest.mark.slow
@pytest.mark.long
def test_zone_outage_loses_nothing_and_only_rack_blind_partitions_refuse_writes(
    net_cluster: RunningCluster, tmp_path: Path
) -> None:
    result, results, run_dir = _run_own(net_cluster, "zone-outage", tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert results["checkers"]["delivery"]["counts"]["lost"] == 0
    sends = load_history(run_dir / "history.jsonl").sends
    refused = set(
        sends.filter(pl.col("error") == "NOT_ENOUGH_REPLICAS").select("topic", "partition").unique().iter_rows()
    )
    # Only the rack-blind partitions with two replicas in the lost rack ever refused a write.
    assert refused and refused <= {("unzoned", 0), ("unzoned", 1)}, refused


# Long: benchmarks/network.sh runs it (with unclean elections enabled, disabled and with ELR) and the cold catalog too.
@pytest.mark.slow
@pytest.mark.long
def test_unclean_election_is_invalid_for_the_writes_it_lost_and_names_them(
    net_cluster: RunningCluster, tmp_path: Path
) -> None:
    result, results, run_dir = _run_own(net_cluster, "unclean-election", tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    delivery = results["checkers"]["delivery"]
    assert results["valid"] is False and "lost-after-read" in delivery["violations"]
    assert delivery["counts"]["lost-after-read"] > 0 and [e["valid"] for e in results["expectations"]] == [True]
    examples = delivery["examples"]["lost-after-read"]
    assert examples and all(
        e["topic"] == "unclean" and e["offset"] is not None and e["log_value"] != e["value"] for e in examples
    )
    explained = run_cli("explain", str(run_dir))
    assert "it was truncated after it was read (the offset now holds" in explained.stdout, (
        explained.stdout + explained.stderr
    )
