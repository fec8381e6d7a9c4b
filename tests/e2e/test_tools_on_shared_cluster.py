"""The tutorials' tools against one shared real cluster (3 brokers, 1 controller, free ports)."""

from __future__ import annotations

import json
import re
import subprocess
from collections import defaultdict
from pathlib import Path

import psutil
import pytest

from failsafe.supervisor import read_pidfile
from failsafe.waiting import wait_until

pytestmark = pytest.mark.cluster


def normalise(text: str) -> list[str]:
    return [" ".join(line.split()) for line in text.strip().splitlines()]


def create_topic(cluster, name: str, partitions: int, rf: int, *configs: str) -> None:
    extra = [a for c in configs for a in ("--config", c)]
    result = cluster.cli(
        "topics", "create", name, "--partitions", str(partitions), "--replication-factor", str(rf), *extra
    )
    assert result.returncode == 0, result.stderr


def test_status_lists_every_node_up_and_an_active_controller(shared_cluster) -> None:
    status = json.loads(shared_cluster.cli("status", "--json").stdout)
    assert [(n["id"], n["role"], n["state"]) for n in status["nodes"]] == [
        (1000, "controller", "up"),
        (0, "broker", "up"),
        (1, "broker", "up"),
        (2, "broker", "up"),
    ]
    assert status["active_controller"] == 1000
    assert status["bootstrap_servers"] == shared_cluster.bootstrap


def test_up_on_a_running_cluster_is_refused(shared_cluster) -> None:
    result = shared_cluster.cli("up")
    assert result.returncode == 2
    assert "already running" in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_replication_factor_above_broker_count_is_refused(shared_cluster) -> None:
    result = shared_cluster.cli("topics", "create", "too-replicated", "--partitions", "1", "--replication-factor", "4")
    assert result.returncode == 2
    assert "--replication-factor 4 is not possible with 3 live brokers" in result.stderr


def test_describe_equals_kafka_topics_describe(shared_cluster) -> None:
    create_topic(shared_cluster, "my-failsafe-topic", 13, 3, "min.insync.replicas=2")
    ours = shared_cluster.cli("topics", "describe", "my-failsafe-topic")
    theirs = shared_cluster.cli("kafka", "topics", "--describe", "--topic", "my-failsafe-topic")
    assert ours.returncode == 0 and theirs.returncode == 0, (ours.stderr, theirs.stderr)
    assert normalise(ours.stdout) == normalise(theirs.stdout)
    assert len(normalise(ours.stdout)) == 14


def test_round_trip_of_1000_keyed_messages_through_kcat_and_consume(shared_cluster) -> None:
    create_topic(shared_cluster, "round-trip", 6, 3)
    sent = [(f"key-{i % 17}", f"value-{i}") for i in range(1000)]
    produced = shared_cluster.cli(
        "produce", "round-trip", "--key-separator", ":", input="".join(f"{k}:{v}\n" for k, v in sent)
    )
    assert produced.returncode == 0, produced.stderr

    kcat = subprocess.run(
        ["kcat", "-b", shared_cluster.bootstrap, "-C", "-t", "round-trip", "-e", "-q", "-f", "%k\t%s\n"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    ours = shared_cluster.cli("consume", "round-trip", "--from-beginning", "--exit-at-end", "--format", "%k\\t%s\\n")
    assert ours.returncode == 0, ours.stderr

    def per_key(text: str) -> dict[str, list[str]]:
        out: dict[str, list[str]] = defaultdict(list)
        for line in text.splitlines():
            key, value = line.split("\t")
            out[key].append(value)
        return dict(out)

    expected: dict[str, list[str]] = defaultdict(list)
    for k, v in sent:
        expected[k].append(v)
    assert per_key(kcat.stdout) == dict(expected)
    assert per_key(ours.stdout) == dict(expected)


def test_kcat_metadata_sees_every_broker_leader_replica_and_isr(shared_cluster) -> None:
    create_topic(shared_cluster, "kcat-metadata", 4, 3)
    listing = subprocess.run(
        ["kcat", "-b", shared_cluster.bootstrap, "-L", "-t", "kcat-metadata"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    brokers = {int(b) for b in re.findall(r"broker (\d+) at 127\.0\.0\.1:\d+", listing)}
    assert brokers == {0, 1, 2}
    kcat_partitions = {
        int(p): (int(leader), replicas, isrs)
        for p, leader, replicas, isrs in re.findall(
            r"partition (\d+), leader (\d+), replicas: ([\d,]+), isrs: ([\d,]+)", listing
        )
    }
    ours = {}
    for line in shared_cluster.cli("topics", "describe", "kcat-metadata").stdout.splitlines()[1:]:
        fields = dict(f.split(": ", 1) for f in line.strip().split("\t") if ": " in f)
        ours[int(fields["Partition"])] = (int(fields["Leader"]), fields["Replicas"], fields["Isr"])
    assert len(kcat_partitions) == 4
    for p, (leader, replicas, isrs) in kcat_partitions.items():
        assert (leader, replicas) == ours[p][:2]
        assert set(isrs.split(",")) == set(ours[p][2].split(",")) == {"0", "1", "2"}


def test_group_describe_shows_committed_offsets_and_lag(shared_cluster) -> None:
    create_topic(shared_cluster, "grouped", 3, 3)
    # Keyed, so that every partition gets records and so a committed offset (librdkafka's sticky
    # partitioner could put 30 unkeyed records in one partition).
    assert (
        shared_cluster.cli(
            "produce", "grouped", "--key-separator", ":", input="".join(f"k{i}:m{i}\n" for i in range(30))
        ).returncode
        == 0
    )
    consumed = shared_cluster.cli("consume", "grouped", "--group", "mygroup", "--from-beginning", "--exit-at-end")
    assert consumed.returncode == 0 and len(consumed.stdout.splitlines()) == 30
    assert (
        "% Group mygroup rebalanced" in consumed.stderr
        and "assigned: grouped [0], grouped [1], grouped [2]" in consumed.stderr
    )
    assert (
        shared_cluster.cli("produce", "grouped", "--key-separator", ":", input="k1:late1\nk2:late2\n").returncode == 0
    )
    desc = json.loads(shared_cluster.cli("groups", "describe", "mygroup", "--json").stdout)
    assert desc["members"] == 0
    assert sum(r["lag"] for r in desc["partitions"]) == 2, desc
    assert len(desc["partitions"]) == 3
    assert sum(r["current_offset"] for r in desc["partitions"]) == 30
    assert "mygroup" in shared_cluster.cli("groups", "list").stdout
    theirs = shared_cluster.cli("kafka", "consumer-groups", "--describe", "--group", "mygroup")
    assert normalise(shared_cluster.cli("groups", "describe", "mygroup").stdout) == normalise(theirs.stdout)


def test_produce_reports_failures_in_the_seeds_words(shared_cluster) -> None:
    create_topic(shared_cluster, "keyed", 1, 1)
    result = shared_cluster.cli("produce", "keyed", "--key-separator", ":", input="k:v\nno separator here\n")
    assert result.returncode == 1
    assert "Failed to deliver no separator here: no key separator ':' in line 2" in result.stderr
    out = shared_cluster.cli("consume", "keyed", "--from-beginning", "--exit-at-end", "--format", "%k=%s\\n")
    assert out.stdout == "k=v\n"


def test_pause_stops_the_process_and_resume_continues_it(shared_cluster) -> None:
    pid = read_pidfile(Path(shared_cluster.dir) / "pids" / "server-2.pid").pid
    assert shared_cluster.cli("broker", "pause", "2").returncode == 0
    try:
        assert psutil.Process(pid).status() == psutil.STATUS_STOPPED
        with open(f"/proc/{pid}/stat") as fh:
            assert fh.read().rsplit(")", 1)[1].split()[0] == "T"
        assert json.loads(shared_cluster.cli("status", "--json").stdout)["nodes"][3]["state"] == "paused"
    finally:
        assert shared_cluster.cli("broker", "resume", "2").returncode == 0
    assert psutil.Process(pid).status() != psutil.STATUS_STOPPED
    wait_until(
        lambda: shared_cluster.cli("topics", "list", "--timeout-s", "5").returncode == 0,
        30,
        "cluster did not answer after resume",
    )


def test_kafka_tools_run_from_the_cached_jars(shared_cluster) -> None:
    version = shared_cluster.cli("kafka", "topics", "--version")
    assert version.returncode == 0 and re.search(r"\b4\.\d+\.\d+\b", version.stdout), version
    quorum = shared_cluster.cli(
        "kafka", "metadata-quorum", "--bootstrap-server", shared_cluster.bootstrap, "describe", "--status"
    )
    assert quorum.returncode == 0, quorum.stderr
    assert re.search(r"LeaderId:\s+1000", quorum.stdout)
