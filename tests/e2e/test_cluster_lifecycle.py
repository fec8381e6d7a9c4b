"""The harness itself on real clusters of their own: nothing left running, faults are real."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

from failsafe.waiting import wait_until
from tests.conftest import start_cluster
from tests.helpers import TEST_HEAP, alive_pids, cluster_ports, run_cli, tracked_processes

pytestmark = [pytest.mark.cluster, pytest.mark.breaks_cluster]


def partitions(bootstrap: str, topic: str) -> dict[int, tuple[int, list[int], list[int]]]:
    """partition -> (leader, replicas, isr) straight from a broker's metadata."""
    meta = AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic=topic, timeout=10)
    return {p.id: (p.leader, list(p.replicas), sorted(p.isrs)) for p in meta.topics[topic].partitions.values()}


def test_combined_quorum_up_down_and_up_again_keeps_data(own_cluster_dir: Path) -> None:
    cluster = start_cluster(own_cluster_dir, "--combined", brokers=3, controllers=3)
    status = json.loads(cluster.cli("status", "--json").stdout)
    assert [(n["id"], n["role"], n["state"]) for n in status["nodes"]] == [
        (i, "broker+controller", "up") for i in range(3)
    ]
    assert status["active_controller"] in {0, 1, 2}
    assert cluster.cli("topics", "create", "kept", "--partitions", "2", "--replication-factor", "3").returncode == 0
    pids = [t.pid for t in tracked_processes(own_cluster_dir)]
    assert len(pids) == 3

    down = cluster.cli("down")
    assert down.returncode == 0, down.stderr
    assert alive_pids(own_cluster_dir) == []
    assert not any((own_cluster_dir / "pids").glob("*.pid"))

    again = cluster.cli("up")
    assert again.returncode == 0, again.stderr
    assert "kept" in cluster.cli("topics", "list").stdout.split()
    assert cluster.cli("clean").returncode == 0
    assert not own_cluster_dir.exists()


def test_failed_up_stops_whatever_it_started(own_cluster_dir: Path) -> None:
    result = run_cli("up", "--dir", str(own_cluster_dir), "--heap", TEST_HEAP, *cluster_ports(), "--timeout-s", "1")
    assert result.returncode == 5, "a cluster that would not start: failsafe could not carry it out"
    assert "within 1s" in result.stderr and "Traceback" not in result.stderr
    assert len(tracked_processes(own_cluster_dir)) == 0 or alive_pids(own_cluster_dir) == []


def test_sigkill_of_up_while_it_waits_leaves_no_process(own_cluster_dir: Path) -> None:
    # A relative --dir, as a user types it: the watchdog must still find the pidfiles.
    up = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "failsafe.cli.main",
            "up",
            "--dir",
            own_cluster_dir.name,
            "--heap",
            TEST_HEAP,
            *cluster_ports(),
        ],
        cwd=own_cluster_dir.parent,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_until(lambda: len(alive_pids(own_cluster_dir)) == 4, 120, "up never started its 4 nodes")
        started = alive_pids(own_cluster_dir)
    finally:
        up.send_signal(signal.SIGKILL)
        up.wait()
    wait_until(lambda: alive_pids(own_cluster_dir) == [], 60, f"nodes {started} outlived the SIGKILLed up")
    assert "killing" in (own_cluster_dir / "logs" / "watchdog.log").read_text()


def test_leader_kill_new_leader_from_isr_restart_and_preferred_election(own_cluster_dir: Path) -> None:
    cluster = start_cluster(own_cluster_dir)
    topic = "my-failsafe-topic"
    assert cluster.cli("topics", "create", topic, "--partitions", "6", "--replication-factor", "3").returncode == 0
    wait_until(
        lambda: all(len(isr) == 3 for _, _, isr in partitions(cluster.bootstrap, topic).values()), 30, "ISR never full"
    )
    before = partitions(cluster.bootstrap, topic)
    victim, _, isr_before = before[0]

    assert cluster.cli("broker", "kill", str(victim)).returncode == 0
    # Before the dead broker is fenced, metadata may still name it as the "controller" that
    # librdkafka sends DescribeTopics to; describe must still answer.
    for _ in range(3):
        described = cluster.cli("topics", "describe", topic)
        assert described.returncode == 0, described.stderr

    # The controller fences the broker after broker.session.timeout.ms (9 s by default), then
    # moves leadership to another ISR member and shrinks the ISR.
    def failed_over() -> bool:
        leader, _, isr = partitions(cluster.bootstrap, topic)[0]
        return leader not in (victim, -1) and victim not in isr

    wait_until(failed_over, 60, f"partition 0 kept leader {victim} or its ISR")
    leader, _, isr = partitions(cluster.bootstrap, topic)[0]
    assert leader in isr_before
    assert isr == sorted(set(isr_before) - {victim})
    assert all(victim not in isr for _, _, isr in partitions(cluster.bootstrap, topic).values())

    assert cluster.cli("broker", "start", str(victim)).returncode == 0
    wait_until(
        lambda: all(len(isr) == 3 for _, _, isr in partitions(cluster.bootstrap, topic).values()),
        60,
        f"broker {victim} did not rejoin every ISR",
    )

    assert cluster.cli("leader-election", "--topic", topic).returncode == 0
    wait_until(
        lambda: all(leader == replicas[0] for leader, replicas, _ in partitions(cluster.bootstrap, topic).values()),
        30,
        "preferred leaders were not restored",
    )


def test_controlled_shutdown_moves_leadership_before_the_broker_exits(own_cluster_dir: Path) -> None:
    cluster = start_cluster(own_cluster_dir)
    topic = "controlled"
    assert cluster.cli("topics", "create", topic, "--partitions", "6", "--replication-factor", "3").returncode == 0
    wait_until(
        lambda: all(len(isr) == 3 for _, _, isr in partitions(cluster.bootstrap, topic).values()), 30, "ISR never full"
    )
    assert cluster.cli("broker", "stop", "1").returncode == 0
    assert json.loads(cluster.cli("status", "--json").stdout)["nodes"][2]["state"] == "down"
    # No wait: a controlled shutdown hands leadership over before the process exits.
    assert all(leader not in (1, -1) for leader, _, _ in partitions(cluster.bootstrap, topic).values())
