"""ZooKeeper mode on a real Kafka 3.9 cluster: the seed 000 tour, seed 004's ZooKeeper outage, the live migration to
KRaft.

One cluster for the module, in the order a user would go: up, tour, outage, migrate, down (the
migration turns it into a KRaft cluster, so it comes last).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from failsafe.waiting import wait_until
from tests.conftest import RunningCluster, stop_cluster
from tests.e2e.test_cluster_lifecycle import partitions
from tests.e2e.test_tools_on_shared_cluster import normalise
from tests.helpers import TEST_HEAP, alive_pids, cluster_ports, free_port_block, run_cli

pytestmark = [pytest.mark.cluster, pytest.mark.breaks_cluster, pytest.mark.slow]
TOPIC = "my-failsafe-topic"


@pytest.fixture(scope="module")
def zk_cluster(shared_cluster_holder: dict, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningCluster]:
    if "cluster" in shared_cluster_holder:
        stop_cluster(shared_cluster_holder.pop("cluster"))
    path = tmp_path_factory.mktemp("zookeeper") / "cluster"
    result = run_cli(
        "up",
        "--mode",
        "zookeeper",
        "--dir",
        str(path),
        "--heap",
        TEST_HEAP,
        *cluster_ports(3, 1),
        "--zookeeper-port",
        str(free_port_block(1)),
    )
    assert result.returncode == 0, result.stderr
    cluster = RunningCluster(path, result.stdout.strip().splitlines()[-1])
    yield cluster
    if (path / "failsafe-state.json").exists():
        run_cli("down", "--dir", str(path), "--timeout-s", "20")
    assert alive_pids(path) == [], "a test left Kafka or ZooKeeper processes running"


def test_status_shows_the_zookeeper_node_and_the_controller_broker(zk_cluster: RunningCluster) -> None:
    status = json.loads(zk_cluster.cli("status", "--json").stdout)
    assert status["mode"] == "zookeeper" and status["kafka_version"].startswith("3.9.")
    assert [(n["role"], n["state"]) for n in status["nodes"]] == [("zookeeper", "up")] + [("broker", "up")] * 3
    assert status["nodes"][0]["zookeeper_mode"] == "standalone"
    assert status["active_controller"] in (0, 1, 2)
    assert [n["id"] for n in status["nodes"] if n["active_controller"]] == [status["active_controller"]]
    assert status["cluster_id"]  # read from /cluster/id once the first broker made it
    shell = zk_cluster.cli("kafka", "zookeeper-shell", "ls", "/brokers/ids")
    assert shell.returncode == 0 and "[0, 1, 2]" in shell.stdout, shell.stderr


def test_the_console_shows_zookeeper_and_the_controller_broker_and_acts_on_zookeeper(
    zk_cluster: RunningCluster,
) -> None:
    import httpx

    from tests.e2e.console_helpers import start_console, stop_console

    console = start_console(zk_cluster.dir)
    try:
        with httpx.Client(base_url=console.base, headers=console.headers, timeout=60) as http:
            shown = http.get("/api/cluster").json()
            status = json.loads(zk_cluster.cli("status", "--json").stdout)
            assert shown["mode"] == "zookeeper" and shown["active_controller"] == status["active_controller"]
            assert [(n["role"], n["state"], n.get("zookeeper_mode")) for n in shown["nodes"]][0] == (
                "zookeeper",
                "up",
                "standalone",
            )
            refused = http.post("/api/nodes/controller/1000/kill")
            assert refused.status_code == 409 and "ZooKeeper mode" in refused.json()["error"]
            assert http.post(f"/api/nodes/zookeeper/{status['nodes'][0]['id']}/pause").json()["state"] == "paused"
            assert http.post(f"/api/nodes/zookeeper/{status['nodes'][0]['id']}/resume").json()["state"] == "up"
    finally:
        stop_console(console, zk_cluster.dir)
    actions = json.loads(zk_cluster.cli("status", "--json").stdout)["operator_actions"]
    assert [(a["action"], a["role"], a["source"]) for a in actions[-2:]] == [
        ("pause", "zookeeper", "console"),
        ("resume", "zookeeper", "console"),
    ]


def test_seed_000_tour_in_zookeeper_mode(zk_cluster: RunningCluster) -> None:
    created = zk_cluster.cli("topics", "create", TOPIC, "--partitions", "3", "--replication-factor", "3")
    assert created.returncode == 0, created.stderr
    wait_until(
        lambda: all(len(isr) == 3 for _, _, isr in partitions(zk_cluster.bootstrap, TOPIC).values()),
        30,
        "ISR never full",
    )
    ours = zk_cluster.cli("topics", "describe", TOPIC)
    theirs = zk_cluster.cli("kafka", "topics", "--describe", "--topic", TOPIC)
    assert ours.returncode == 0 and theirs.returncode == 0, (ours.stderr, theirs.stderr)
    assert normalise(ours.stdout) == normalise(theirs.stdout)

    victim, _, isr_before = partitions(zk_cluster.bootstrap, TOPIC)[0]
    assert zk_cluster.cli("broker", "kill", str(victim)).returncode == 0

    # ZooKeeper deletes the dead broker's /brokers/ids entry when its session expires
    # (zookeeper.session.timeout.ms 18000); the controller then elects a leader from the ISR.
    def failed_over() -> bool:
        leader, _, isr = partitions(zk_cluster.bootstrap, TOPIC)[0]
        return leader not in (victim, -1) and victim not in isr

    wait_until(failed_over, 90, f"partition 0 kept leader {victim} or its ISR")
    leader, _, _ = partitions(zk_cluster.bootstrap, TOPIC)[0]
    assert leader in isr_before
    assert zk_cluster.cli("broker", "start", str(victim)).returncode == 0
    wait_until(
        lambda: all(len(isr) == 3 for _, _, isr in partitions(zk_cluster.bootstrap, TOPIC).values()),
        90,
        f"broker {victim} did not rejoin every ISR",
    )


def test_a_topic_create_without_zookeeper_fails_with_one_line(zk_cluster: RunningCluster) -> None:
    assert zk_cluster.cli("zookeeper", "stop", "1").returncode == 0
    try:
        created = zk_cluster.cli(
            "topics", "create", "no-zookeeper", "--partitions", "1", "--replication-factor", "1", "--timeout-s", "5"
        )
        assert created.returncode != 0
        assert "Traceback" not in created.stderr and len(created.stderr.strip().splitlines()) == 1, created.stderr
        # Brokers keep serving what they have: metadata of the existing topic still answers.
        assert len(partitions(zk_cluster.bootstrap, TOPIC)) == 3
    finally:
        assert zk_cluster.cli("zookeeper", "start", "1").returncode == 0


# Long: the cold catalog benchmark (benchmarks/cold_catalog.py, docs/benchmarks/cold-catalog.json) runs this scenario.
@pytest.mark.long
def test_zookeeper_outage_scenario_passes(zk_cluster: RunningCluster, tmp_path: Path) -> None:
    result = zk_cluster.cli("run", "zookeeper-outage", "--runs", str(tmp_path), timeout_s=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "VALID  zookeeper-outage" in result.stdout


# benchmarks/modes.sh migration runs zk-to-kraft-migration N times per client library; make test's budget (45 min on two
# cores) keeps the ZooKeeper-mode lab, this one runs in make test-long.
@pytest.mark.long
def test_live_migration_to_kraft_under_load(zk_cluster: RunningCluster, tmp_path: Path) -> None:
    result = zk_cluster.cli("run", "zk-to-kraft-migration", "--runs", str(tmp_path), timeout_s=900)
    # VALID, or KNOWN for exactly the scenario's declared librdkafka#4953 duplicates (a roll moves a
    # leader while produce requests are in flight: seen in 1 of 4 runs, docs/findings.md section 3).
    assert result.returncode in (0, 4), result.stdout[-3000:] + result.stderr[-2000:]
    results = json.loads(next(tmp_path.glob("zk-to-kraft-migration/*/results.json")).read_text())
    if result.returncode == 4:
        assert results["verdict"] == "KNOWN" and "unexplained" not in results, results.get("unexplained")
        assert {k["anomaly"] for k in results["known"]} <= {
            "delivery.duplicate-acknowledged",
            "delivery.duplicate-unacknowledged",
        }
    assert results["measurements"]["migration"]["completed"] is True
    assert results["checkers"]["delivery"]["counts"]["lost"] == 0
    status = json.loads(zk_cluster.cli("status", "--json").stdout)
    assert status["mode"] == "kraft" and status["active_controller"] == 3000
    assert [(n["role"], n["state"]) for n in status["nodes"]] == [("controller", "up")] + [("broker", "up")] * 3
    # The data written in ZooKeeper mode is still there, now served by KRaft.
    assert len(partitions(zk_cluster.bootstrap, TOPIC)) == 3


def test_down_leaves_nothing_running(zk_cluster: RunningCluster) -> None:
    stop_cluster(zk_cluster)
    assert alive_pids(zk_cluster.dir) == []


def test_a_zookeeper_quorum_survives_its_leader(own_cluster_dir: Path) -> None:
    result = run_cli(
        "up",
        "--mode",
        "zookeeper",
        "--zookeepers",
        "3",
        "--brokers",
        "1",
        "--dir",
        str(own_cluster_dir),
        "--heap",
        TEST_HEAP,
        *cluster_ports(1, 1),
        "--zookeeper-port",
        str(free_port_block(3)),
    )
    assert result.returncode == 0, result.stderr
    cluster = RunningCluster(own_cluster_dir, result.stdout.strip().splitlines()[-1])

    def modes() -> dict[int, str | None]:
        status = json.loads(cluster.cli("status", "--json").stdout)
        return {n["id"]: n.get("zookeeper_mode") for n in status["nodes"] if n["role"] == "zookeeper"}

    first = modes()
    assert sorted(first.values()) == ["follower", "follower", "leader"], first
    leader = next(i for i, m in first.items() if m == "leader")
    assert cluster.cli("zookeeper", "kill", str(leader)).returncode == 0
    # Two of three still form a quorum: one of them becomes leader, and the broker stays registered.
    wait_until(
        lambda: sorted(m for i, m in modes().items() if i != leader) == ["follower", "leader"],
        60,
        "the two remaining ZooKeeper nodes did not elect a leader",
    )
    shell = cluster.cli("kafka", "zookeeper-shell", "ls", "/brokers/ids")
    assert "[0]" in shell.stdout, shell.stderr
    assert cluster.cli("zookeeper", "start", str(leader)).returncode == 0
    assert modes()[leader] == "follower"
    stop_cluster(cluster)
