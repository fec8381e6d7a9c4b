"""The mode objects (cluster/modes/mode.py) without processes: what each mode makes, reads, waits for and says."""

from __future__ import annotations

import json
import re
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import pytest

from failsafe.cluster.config import node_properties
from failsafe.cluster.modes import mode as modes
from failsafe.cluster.modes.migration import MIGRATION_CONTROLLER_ID, target_spec
from failsafe.cluster.modes.mode import KRAFT, MIGRATING, ZOOKEEPER, mode_named, mode_of
from failsafe.cluster.nodes.control import LocalNodes
from failsafe.cluster.spec import KRAFT_MODE, MIGRATING_MODE, MODE_NAMES, ZOOKEEPER_MODE, ClusterSpec
from failsafe.cluster.state import ClusterDir
from failsafe.cluster.topology.lifecycle import NodeStatus
from failsafe.errors import UserError
from failsafe.supervisor import DOWN, UP

ZK_SPEC = ClusterSpec.zookeeper_mode(zookeepers=1)
# A migration half-way, as cluster/modes/migration.py saves it: ZooKeeper, one KRaft controller, the brokers.
MIGRATING_SPEC = replace(target_spec(ZK_SPEC), mode=MIGRATING_MODE, zookeepers=1)


def test_each_mode_name_has_its_object_and_an_unknown_one_is_refused() -> None:
    assert [mode_named(name).name for name in MODE_NAMES] == list(MODE_NAMES)
    assert mode_of(ClusterSpec()) is KRAFT and mode_of(ZK_SPEC) is ZOOKEEPER and mode_of(MIGRATING_SPEC) is MIGRATING
    with pytest.raises(ValueError, match="no cluster mode 'raft'"):
        mode_named("raft")


# -- making a cluster --------------------------------------------------------------------------------------
def test_kraft_makes_its_cluster_id_and_formats_every_kafka_node() -> None:
    assert re.fullmatch(r"[A-Za-z0-9_-]{22}", KRAFT.new_cluster_id())
    spec = ClusterSpec(brokers=3, controllers=3)
    assert KRAFT.formatted_nodes(spec) == spec.nodes() and len(spec.nodes()) == 6


def test_zookeeper_mode_leaves_the_id_to_the_first_broker_and_formats_nothing() -> None:
    assert ZOOKEEPER.new_cluster_id() == ""
    assert ZOOKEEPER.formatted_nodes(ZK_SPEC) == []


def test_only_a_migration_makes_a_migrating_cluster() -> None:
    for make in (
        MIGRATING.new_cluster_id,
        lambda: MIGRATING.formatted_nodes(MIGRATING_SPEC),
        lambda: MIGRATING.spec_from_options(
            controllers=None, combined=False, zookeepers=None, zookeeper_port=None, kafka_version=None, brokers=3
        ),
    ):
        with pytest.raises(UserError, match="failsafe migrate"):
            make()


def test_spec_from_options_refuses_the_other_modes_options() -> None:
    options = {
        "controllers": None,
        "combined": False,
        "zookeepers": None,
        "zookeeper_port": None,
        "kafka_version": None,
        "brokers": 3,
    }
    kraft = KRAFT.spec_from_options(**{**options, "combined": True})
    assert kraft.mode == KRAFT_MODE and kraft.controllers == 3 and kraft.combined
    zk = ZOOKEEPER.spec_from_options(**{**options, "zookeeper_port": 3181})
    assert (
        zk.mode == ZOOKEEPER_MODE
        and zk.zookeepers == 1
        and zk.zookeeper_base_port == 3181
        and zk.kafka_version.startswith("3.9.")
    )
    with pytest.raises(UserError, match="need --mode zookeeper"):
        KRAFT.spec_from_options(**{**options, "zookeepers": 3})
    with pytest.raises(UserError, match="KRaft options"):
        ZOOKEEPER.spec_from_options(**{**options, "controllers": 1})


def test_each_mode_writes_its_brokers_properties(tmp_path: Path) -> None:
    kraft = ClusterSpec()
    assert node_properties(kraft, kraft.brokers_nodes()[0], tmp_path)["process.roles"] == "broker"
    zk_broker = node_properties(ZK_SPEC, ZK_SPEC.brokers_nodes()[0], tmp_path)
    assert zk_broker["zookeeper.connect"] == "127.0.0.1:2181" and "process.roles" not in zk_broker
    # Half-way through a migration brokers still register in ZooKeeper; the controller is a KRaft node.
    assert "zookeeper.connect" in node_properties(MIGRATING_SPEC, MIGRATING_SPEC.brokers_nodes()[0], tmp_path)
    controller = MIGRATING_SPEC.controller_nodes()[0]
    assert controller.node_id == MIGRATION_CONTROLLER_ID
    assert node_properties(MIGRATING_SPEC, controller, tmp_path)["process.roles"] == "controller"
    assert node_properties(MIGRATING_SPEC, MIGRATING_SPEC.zookeeper_nodes()[0], tmp_path)["clientPort"] == "2181"


def test_each_mode_describes_its_quorum_and_the_wait_for_brokers() -> None:
    assert KRAFT.quorum(ClusterSpec(brokers=3, controllers=3, combined=True)) == "3 controllers (combined)"
    assert (
        ZOOKEEPER.quorum(ClusterSpec.zookeeper_mode(zookeepers=3))
        == "3 ZooKeeper nodes (127.0.0.1:2181,127.0.0.1:2182,127.0.0.1:2183)"
    )
    assert ZOOKEEPER.quorum(ZK_SPEC) == "1 ZooKeeper node (127.0.0.1:2181)"
    assert MIGRATING.quorum(MIGRATING_SPEC) == "1 controller in migration mode and 1 ZooKeeper node (127.0.0.1:2181)"
    assert (KRAFT.registered, KRAFT.registry) == ("registered and unfenced", "the controller quorum")
    assert (ZOOKEEPER.registered, ZOOKEEPER.registry) == ("registered", "ZooKeeper")
    assert (MIGRATING.registered, MIGRATING.registry) == ("registered", "the controller quorum")
    assert [m.describes_elr for m in (KRAFT, ZOOKEEPER, MIGRATING)] == [True, False, False]


# -- reading a running cluster -----------------------------------------------------------------------------
class FakeCluster:
    """What a mode reads of a cluster: its spec, its directory, and each node's process state."""

    def __init__(self, root: Path, spec: ClusterSpec, up: set[int]) -> None:
        self.dir, self.spec, self._up = ClusterDir(root), spec, up
        self.nodes = LocalNodes(self.dir)  # where the quorum state files are read

    def node_state(self, node) -> str:
        return UP if node.node_id in self._up else DOWN

    def persist_quorum_state(self, node_id: int, leader: int, epoch: int) -> None:
        node = next(n for n in self.spec.controller_nodes() if n.node_id == node_id)
        path = self.dir.data_dir(node) / "__cluster_metadata-0" / "quorum-state"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"leaderId": leader, "leaderEpoch": epoch}))


def test_kraft_reads_the_active_controller_from_the_quorum_state_of_running_controllers(tmp_path: Path) -> None:
    spec = ClusterSpec(brokers=1, controllers=3)
    cluster = FakeCluster(tmp_path, spec, up={0, 1000, 1001, 1002})
    assert KRAFT.active_controller(cluster) is None  # type: ignore[arg-type]
    cluster.persist_quorum_state(1000, leader=1000, epoch=1)
    cluster.persist_quorum_state(1001, leader=1002, epoch=2)  # the newer epoch wins
    assert KRAFT.active_controller(cluster) == 1002  # type: ignore[arg-type]
    stale = FakeCluster(tmp_path, spec, up={0, 1000, 1001})  # the leader it persisted is not running
    assert KRAFT.active_controller(stale) is None  # type: ignore[arg-type]
    assert MIGRATING.active_controller(FakeCluster(tmp_path, MIGRATING_SPEC, up=set())) is None  # type: ignore[arg-type]


def test_zookeeper_mode_reads_the_controller_broker_from_zookeeper(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: dict[str, tuple[set[int], int | None] | None] = {}
    monkeypatch.setattr(modes.zookeeper, "view", lambda hosts: seen.get(hosts))
    cluster = FakeCluster(tmp_path, ZK_SPEC, up={0, 1, 2})
    assert ZOOKEEPER.active_controller(cluster) is None and not ZOOKEEPER.controller_elected(ZK_SPEC)  # type: ignore[arg-type]
    seen["127.0.0.1:2181"] = ({0, 1, 2}, None)
    assert not ZOOKEEPER.controller_elected(ZK_SPEC)
    seen["127.0.0.1:2181"] = ({0, 1, 2}, 1)
    assert ZOOKEEPER.active_controller(cluster) == 1 and ZOOKEEPER.controller_elected(ZK_SPEC)  # type: ignore[arg-type]
    assert ZOOKEEPER.controller_role == "broker" and KRAFT.controller_role == MIGRATING.controller_role == "controller"
    assert KRAFT.controller_elected(ClusterSpec()) and MIGRATING.controller_elected(MIGRATING_SPEC)


def test_only_zookeeper_mode_finds_a_cluster_id_after_start(monkeypatch: pytest.MonkeyPatch) -> None:
    from kazoo.handlers.threading import KazooTimeoutError

    answers: list[object] = ["made-by-broker-0"]

    @contextmanager
    def connected(hosts: str):
        if isinstance(answers[0], Exception):
            raise answers[0]
        yield hosts

    monkeypatch.setattr(modes.zookeeper, "connected", connected)
    monkeypatch.setattr(modes.zookeeper, "cluster_id", lambda client: answers[0])
    assert ZOOKEEPER.found_cluster_id(ZK_SPEC) == "made-by-broker-0"
    answers[0] = KazooTimeoutError("no answer")
    assert ZOOKEEPER.found_cluster_id(ZK_SPEC) is None
    assert KRAFT.found_cluster_id(ClusterSpec()) is None and MIGRATING.found_cluster_id(MIGRATING_SPEC) is None


def _rows(spec: ClusterSpec, up: set[str]) -> list[NodeStatus]:
    return [NodeStatus(n, UP if n.name in up else DOWN, None, False) for n in spec.nodes()]


def test_status_says_why_no_controller_is_shown_only_when_one_could_be() -> None:
    kraft = ClusterSpec(brokers=1, controllers=1)
    assert "quorum is electing" in KRAFT.no_controller_note(_rows(kraft, {"server-1000"}))
    assert KRAFT.no_controller_note(_rows(kraft, {"server-0"})) is None
    assert "no broker holds /controller" in ZOOKEEPER.no_controller_note(_rows(ZK_SPEC, {"server-0"}))
    assert (
        ZOOKEEPER.no_controller_note(_rows(ZK_SPEC, {"zookeeper-1"})) is None
    )  # no broker runs that could be controller
    assert "quorum is electing" in MIGRATING.no_controller_note(
        _rows(MIGRATING_SPEC, {f"server-{MIGRATION_CONTROLLER_ID}"})
    )


def test_which_modes_can_migrate_and_which_can_make_a_dr_pair(tmp_path: Path) -> None:
    ZOOKEEPER.check_can_migrate(tmp_path)
    with pytest.raises(UserError, match="already runs in KRaft mode"):
        KRAFT.check_can_migrate(tmp_path)
    with pytest.raises(UserError, match="stopped half-way"):
        MIGRATING.check_can_migrate(tmp_path)
    KRAFT.check_can_pair()
    for mode in (ZOOKEEPER, MIGRATING):
        with pytest.raises(UserError, match="a DR pair runs in KRaft mode"):
            mode.check_can_pair()
