"""The pytest plugin used as a user uses it: a test file of their own, run by pytest with --failsafe-dir, on the shared
cluster. One test runs the exactly-once example and asserts it VALID; one writes through a kill of a partition's
leader inside ``failsafe.fault(...)`` and reads every acknowledged record back after it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.cluster, pytest.mark.slow]
ROOT = Path(__file__).parents[2]

USER_TEST = """
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

SCENARIO = {scenario!r}


def test_my_service_stays_exactly_once(failsafe):
    # 60 s of drain ended one CI run UNKNOWN ("the app had not read all its input"): after the broker kill one
    # instance was still retrying its transactional producer (COORDINATOR_NOT_AVAILABLE, then CONCURRENT_TRANSACTIONS)
    # and the restarted one waited in a JoinGroup; likely the rebalance waited for the first to poll again. A drain
    # long enough for that; a run that still does not drain stays UNKNOWN and fails this test.
    result = failsafe.run(
        SCENARIO,
        overrides=["phases.chaos_s=20", "phases.warmup_s=2", "phases.recover_s=4", "phases.drain_timeout_s=240"],
    )
    result.assert_valid()
    assert result.report.exists()


def test_acknowledged_writes_survive_a_leader_kill(failsafe):
    admin = AdminClient({{"bootstrap.servers": failsafe.bootstrap_servers}})
    topic = NewTopic("plugin-orders", 1, 3, config={{"min.insync.replicas": "2"}})
    admin.create_topics([topic])["plugin-orders"].result()
    acked = []
    producer = Producer({{"bootstrap.servers": failsafe.bootstrap_servers, "acks": "all"}})
    with failsafe.fault("kill", role="leader", partition="plugin-orders-0") as fault:
        for i in range(200):
            producer.produce("plugin-orders", str(i), on_delivery=lambda e, m: e is None and acked.append(m.value()))
        assert producer.flush(60) == 0
    assert fault.nodes and len(acked) == 200
    consumer = Consumer({{"bootstrap.servers": failsafe.bootstrap_servers, "group.id": "plugin-check",
                         "auto.offset.reset": "earliest"}})
    consumer.subscribe(["plugin-orders"])
    read = set()
    while len(read) < len(acked):
        message = consumer.poll(30)
        assert message is not None, f"read {{len(read)}} of {{len(acked)}}"
        read.add(message.value())
    consumer.close()
    admin.delete_topics(["plugin-orders"])["plugin-orders"].result()
"""


def test_a_users_test_file_runs_a_scenario_and_a_fault_through_the_plugin(shared_cluster_holder, tmp_path_factory):
    from tests.conftest import shared_cluster_in

    cluster = shared_cluster_in(shared_cluster_holder, tmp_path_factory)
    tmp = tmp_path_factory.mktemp("user")
    example = (ROOT / "examples/apps/eos-broker-and-instance-kill.toml").read_text()
    scenario = tmp / "my-service.toml"
    scenario.write_text(example.replace('"examples/apps/', f'"{ROOT}/examples/apps/'))
    (tmp / "test_my_service.py").write_text(USER_TEST.format(scenario=str(scenario)))
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--failsafe-dir", str(cluster.dir)],
        cwd=tmp,
        capture_output=True,
        text=True,
        timeout=600,
    )
    cluster.cli("topics", "delete", "app-in")
    cluster.cli("topics", "delete", "app-out")
    assert done.returncode == 0 and "2 passed" in done.stdout, done.stdout[-4000:] + done.stderr[-2000:]
