"""A cluster made with a profile, on a cluster of its own: every broker setting the profile declares is in force on the
running brokers, and every client setting reaches the clients a scenario starts, as their client-config ops and the Java
client's own logged configs show.

fast-failover (cluster/profiles/fast-failover.toml): its broker settings read back from each broker's logged
``KafkaConfig values:`` and from ``kafka-configs --describe --all``; its producer and consumer settings from the history
of two short scenarios: a lab one (failsafe's librdkafka clients, Kafka's verifiable clients, a KIP-848 member that must
not get the classic session settings) and a transaction one whose writer and processor run on Kafka's Java client
(failsafe's TxnDriver logs the ``ProducerConfig values:`` and ``ConsumerConfig values:`` Kafka prints; the verifiable
tools log warnings only).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import orjson
import pytest

from failsafe.cluster.profiles import load_profile
from tests.conftest import start_cluster

pytestmark = [pytest.mark.cluster, pytest.mark.breaks_cluster]

PROFILE = "fast-failover"
RUN_TIMEOUT_S = 280
# What the KIP-848 and share members may not be given (workloads/client_defaults.py).
CLASSIC_ONLY = ("session.timeout.ms", "heartbeat.interval.ms")

LAB = """
name = "profile-lab"
description = "Every client library failsafe starts, on a cluster made with a profile: no fault."

[[topics]]
name = "profiled"
partitions = 3
replication_factor = 3

[[producers]]
name = "producer"
topic = "profiled"
rate_per_s = 50

[[producers]]
name = "vproducer"
topic = "profiled"
rate_per_s = 50
driver = "kafka-verifiable"

[[consumers]]
name = "classic"
topics = ["profiled"]
group = "profiled-classic"

[[consumers]]
name = "vclassic"
topics = ["profiled"]
group = "profiled-verifiable"
driver = "kafka-verifiable"

[[consumers]]
name = "kip848"
topics = ["profiled"]
group = "profiled-kip848"
group_protocol = "consumer"

[phases]
warmup_s = 2
chaos_s = 3
recover_s = 1
"""

TXN = """
kind = "txn"
name = "profile-txn"
description = "A writer and a processor on Kafka's Java client, on a cluster made with a profile: no fault."

[[topics]]
name = "profiled-txn"
partitions = 3
replication_factor = 3

[[topics]]
name = "profiled-in"
partitions = 3
replication_factor = 3

[[topics]]
name = "profiled-out"
partitions = 3
replication_factor = 3

[[writers]]
name = "jwriter"
topics = ["profiled-txn"]
rate_per_s = 10
driver = "kafka-java"

[[producers]]
name = "feeder"
topic = "profiled-in"
rate_per_s = 50

[[processors]]
name = "jctp"
input = "profiled-in"
output = "profiled-out"
group = "profiled-jctp"
driver = "kafka-java"

[[consumers]]
name = "committed"
topics = ["profiled-txn", "profiled-out"]
group = "profiled-readers"

[phases]
warmup_s = 3
chaos_s = 4
recover_s = 1
"""


def java_config_blocks(text: str, name: str) -> list[dict[str, str]]:
    """Each ``NAME values:`` block Kafka's AbstractConfig logged: its ``\\tkey = value`` lines."""
    blocks = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if f"{name} values:" in line:
            block = {}
            for entry in lines[i + 1 :]:
                if not entry.startswith("\t"):
                    break
                key, _, value = entry.strip().partition(" = ")
                block[key] = value
            blocks.append(block)
    return blocks


def described_configs(output: str) -> dict[str, str]:
    """``kafka-configs --describe --all``'s lines: ``  key=value sensitive=... synonyms={...}``."""
    return {m.group(1): m.group(2) for m in re.finditer(r"^\s+([\w.-]+)=(\S*) sensitive=", output, re.MULTILINE)}


def client_configs(run_dir: Path) -> dict[str, tuple[str, dict[str, str]]]:
    """Each worker's client-config op: process -> (client library, settings)."""
    ops = [orjson.loads(line) for line in (run_dir / "history.jsonl").read_bytes().splitlines()]
    return {
        op["process"]: (op["client"], {e["name"]: e["value"] for e in op["config"]})
        for op in ops
        if op["f"] == "client-config"
    }


def run_scenario(cluster, text: str, name: str, tmp_path: Path) -> Path:
    path = tmp_path / f"{name}.toml"
    path.write_text(text)
    runs = tmp_path / "runs"
    result = cluster.cli("run", str(path), "--runs", str(runs), timeout_s=RUN_TIMEOUT_S)
    assert result.returncode == 0, (result.stdout[-3000:], result.stderr[-2000:])
    [run_dir] = sorted(p for p in (runs / name).iterdir() if p.is_dir())
    return run_dir


def assert_has(settings: dict[str, str], wanted: dict[str, str], who: str) -> None:
    wrong = {k: (settings.get(k), v) for k, v in wanted.items() if settings.get(k) != v}
    assert not wrong, f"{who}: (found, the profile's) {wrong}"


def test_a_profiles_settings_are_in_force_on_brokers_and_clients(own_cluster_dir: Path, tmp_path: Path) -> None:
    profile = load_profile(PROFILE)
    assert profile.broker and profile.client("producer", "librdkafka") and profile.client("consumer", "kafka-java")
    cluster = start_cluster(own_cluster_dir, "--profile", PROFILE, brokers=3)

    status = json.loads(cluster.cli("status", "--json").stdout)
    assert status["profile"] == {"name": PROFILE, "version": profile.version}

    # Every broker setting, on every running broker: as it logged its config at start, and as it describes it now.
    for node in status["nodes"]:
        if "broker" not in node["role"]:
            # A controller logs no KafkaConfig; what it was started with is its properties file.
            props = (own_cluster_dir / f"server-{node['id']}.properties").read_text().splitlines()
            assert_has(
                dict(line.split("=", 1) for line in props if "=" in line and not line.startswith("#")),
                profile.broker,
                f"controller {node['id']}'s properties",
            )
            continue
        logged = java_config_blocks((own_cluster_dir / "logs" / f"server-{node['id']}.log").read_text(), "KafkaConfig")
        assert logged, f"broker {node['id']} logged no KafkaConfig values"
        assert_has(logged[-1], profile.broker, f"broker {node['id']}'s logged KafkaConfig")
        described = cluster.cli(
            "kafka", "configs", "--describe", "--all", "--entity-type", "brokers", "--entity-name", str(node["id"])
        )
        assert described.returncode == 0, described.stderr
        assert_has(
            described_configs(described.stdout), profile.broker, f"broker {node['id']}'s kafka-configs --describe --all"
        )

    # Every client setting, on every client of the lab: librdkafka's and the Java client's own sections.
    lab = client_configs(run_scenario(cluster, LAB, "profile-lab", tmp_path))
    sides = {
        "producer": "producer",
        "vproducer": "producer",
        "classic-0": "consumer",
        "vclassic-0": "consumer",
        "kip848-0": "consumer",
    }
    assert set(lab) == set(sides), lab.keys()
    for process, side in sides.items():
        library, settings = lab[process]
        wanted = profile.client(side, library)
        if process == "kip848-0":
            assert not set(CLASSIC_ONLY) & set(settings), f"{process} was given {set(CLASSIC_ONLY) & set(settings)}"
            wanted = {k: v for k, v in wanted.items() if k not in CLASSIC_ONLY}
        assert_has(settings, wanted, f"{process}'s client-config ({library})")
    assert lab["producer"][0] == "librdkafka" and lab["vproducer"][0] == "kafka-java"

    # The Java client's own word for it: the configs Kafka logs when a producer or consumer is made (failsafe's
    # TxnDriver).
    txn_dir = run_scenario(cluster, TXN, "profile-txn", tmp_path)
    txn = client_configs(txn_dir)
    java_producer, java_consumer = profile.client("producer", "kafka-java"), profile.client("consumer", "kafka-java")
    assert_has(txn["jwriter-0"][1], java_producer, "jwriter-0's client-config")
    assert_has(txn["feeder"][1], profile.client("producer", "librdkafka"), "feeder's client-config")
    assert_has(txn["committed-0"][1], profile.client("consumer", "librdkafka"), "committed-0's client-config")
    for process, kinds in (("jwriter-0", ("ProducerConfig",)), ("jctp-0", ("ProducerConfig", "ConsumerConfig"))):
        log = (txn_dir / "logs" / f"{process}.client.log").read_text()
        for kind in kinds:
            blocks = java_config_blocks(log, kind)
            assert blocks, f"{process}'s client log has no {kind} values"
            wanted = java_producer if kind == "ProducerConfig" else java_consumer
            # A processor's session is its own (CtpSpec.session_timeout_ms): the profile's heartbeat and backoff reach
            # it.
            if process == "jctp-0" and kind == "ConsumerConfig":
                wanted = {k: v for k, v in wanted.items() if k != "session.timeout.ms"}
            assert_has(blocks[-1], wanted, f"{process}'s logged {kind}")
