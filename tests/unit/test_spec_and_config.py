from __future__ import annotations

from pathlib import Path

import pytest

from failsafe.cluster.config import node_properties, render_server_properties
from failsafe.cluster.spec import ClusterSpec
from failsafe.errors import UserError


def test_default_spec_is_the_seeds_layout() -> None:
    spec = ClusterSpec()
    brokers = spec.brokers_nodes()
    assert [(n.node_id, n.port) for n in brokers] == [(0, 9092), (1, 9093), (2, 9094)]
    [controller] = spec.controller_nodes()
    assert controller.roles == ("controller",) and controller.controller_port == 9192
    assert spec.bootstrap_servers() == "127.0.0.1:9092,127.0.0.1:9093,127.0.0.1:9094"
    assert spec.quorum_voters() == "1000@127.0.0.100:9192"
    # Replication on each broker's own address and port, clients where the seeds put them.
    assert [(n.address, n.replication_port) for n in brokers] == [
        ("127.0.0.10", 9292),
        ("127.0.0.11", 9293),
        ("127.0.0.12", 9294),
    ]


def test_controllers_come_first_so_brokers_find_a_quorum() -> None:
    assert [n.role for n in ClusterSpec(controllers=3).nodes()] == ["controller"] * 3 + ["broker"] * 3


def test_combined_mode_puts_controllers_inside_the_first_brokers() -> None:
    spec = ClusterSpec(brokers=3, controllers=2, combined=True)
    assert [n.roles for n in spec.nodes()] == [("broker", "controller"), ("broker", "controller"), ("broker",)]
    assert spec.quorum_voters() == "0@127.0.0.10:9192,1@127.0.0.11:9193"


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [
        (ClusterSpec(brokers=0), "--brokers 0"),
        (ClusterSpec(controllers=0), "--controllers 0"),
        (ClusterSpec(brokers=2, controllers=3, combined=True), "--combined with --controllers 3"),
        (ClusterSpec(base_port=9092, controller_base_port=9093), "overlap"),
        (ClusterSpec(base_port=65534), "out of range"),
        (ClusterSpec(base_port=9092, replication_base_port=9192), "replication ports from 9192"),
        (ClusterSpec(brokers=91), "its own loopback address"),
    ],
)
def test_invalid_specs_are_refused_with_the_option_named(spec: ClusterSpec, fragment: str) -> None:
    with pytest.raises(UserError, match=fragment):
        spec.validate()


def test_broker_properties_bind_loopback_and_use_own_log_dir(tmp_path: Path) -> None:
    spec = ClusterSpec(base_port=19092)
    broker1 = spec.brokers_nodes()[1]
    props = node_properties(spec, broker1, tmp_path)
    assert props["node.id"] == "1"
    assert props["process.roles"] == "broker"
    assert props["listeners"] == "PLAINTEXT://127.0.0.1:19093,REPLICATION://127.0.0.11:19293"
    assert props["advertised.listeners"] == "PLAINTEXT://127.0.0.1:19093,REPLICATION://127.0.0.11:19293"
    assert props["inter.broker.listener.name"] == "REPLICATION"
    assert "REPLICATION:PLAINTEXT" in props["listener.security.protocol.map"]
    assert props["log.dirs"] == str(tmp_path / "kafka-1")
    assert props["controller.quorum.voters"] == "1000@127.0.0.100:19192"
    assert props["offsets.topic.replication.factor"] == "3"
    assert "0.0.0.0" not in render_server_properties(spec, broker1, tmp_path)


def test_controller_has_only_a_controller_listener(tmp_path: Path) -> None:
    spec = ClusterSpec()
    props = node_properties(spec, spec.controller_nodes()[0], tmp_path)
    assert props["listeners"] == "CONTROLLER://127.0.0.100:9192"
    assert "advertised.listeners" not in props
    assert "offsets.topic.replication.factor" not in props


def test_combined_node_has_both_listeners(tmp_path: Path) -> None:
    spec = ClusterSpec(combined=True, controllers=3)
    props = node_properties(spec, spec.nodes()[2], tmp_path)
    assert props["process.roles"] == "broker,controller"
    assert props["listeners"] == "PLAINTEXT://127.0.0.1:9094,REPLICATION://127.0.0.12:9294,CONTROLLER://127.0.0.12:9194"


def test_a_cluster_made_before_node_addresses_keeps_its_one_listener(tmp_path: Path) -> None:
    old = ClusterSpec.from_json(
        {k: v for k, v in ClusterSpec().to_json().items() if k not in ("node_addresses", "replication_base_port")}
    )
    props = node_properties(old, old.brokers_nodes()[0], tmp_path)
    assert props["listeners"] == "PLAINTEXT://127.0.0.1:9092" and props["inter.broker.listener.name"] == "PLAINTEXT"
    assert old.quorum_voters() == "1000@127.0.0.1:9192"
    assert ClusterSpec.zookeeper_mode().brokers_nodes()[0].replication_port is None


def test_overrides_win_over_failsafe_defaults(tmp_path: Path) -> None:
    spec = ClusterSpec(overrides={"offsets.topic.replication.factor": "1", "min.insync.replicas": "2"})
    props = node_properties(spec, spec.brokers_nodes()[0], tmp_path)
    assert props["offsets.topic.replication.factor"] == "1"
    assert props["min.insync.replicas"] == "2"


def test_single_broker_cluster_keeps_internal_topics_creatable(tmp_path: Path) -> None:
    spec = ClusterSpec(brokers=1)
    props = node_properties(spec, spec.brokers_nodes()[0], tmp_path)
    assert props["offsets.topic.replication.factor"] == "1"
    assert props["transaction.state.log.min.isr"] == "1"
