"""ZooKeeper mode without processes: the spec, the configs, the measurements of seed 004 and of a migration, bad
input."""

from __future__ import annotations

from pathlib import Path

import pytest

from failsafe.checkers.measure.faults import measure
from failsafe.cluster.config import node_properties
from failsafe.cluster.modes.migration import Migration, target_spec
from failsafe.cluster.spec import KRAFT_MODE, ClusterSpec
from failsafe.cluster.state import ClusterDir, ClusterState
from failsafe.errors import UserError
from failsafe.jvm.kafka import KafkaDist
from failsafe.scenarios.base import ScenarioError
from failsafe.scenarios.engine.placement import misfit, needs_of
from failsafe.scenarios.registry import load_scenario
from failsafe.tools.kafka_tools import main_class, zookeeper_shell_args
from tests.helpers import assert_one_line_error, free_port_block, run_cli
from tests.unit.test_checker_builders import at, fault, history, topology


def controller(ms: float, node: int | None) -> dict:
    return {"time_ns": at(ms), "process": "runner", "type": "info", "f": "controller", "controller": node}


# -- the spec and its configs ----------------------------------------------------------------------
def test_a_zookeeper_mode_cluster_is_an_ensemble_and_brokers_without_controllers() -> None:
    spec = ClusterSpec.zookeeper_mode(zookeepers=3).validate()
    assert [(n.name, n.role, n.port) for n in spec.nodes()] == [
        ("zookeeper-1", "zookeeper", 2181),
        ("zookeeper-2", "zookeeper", 2182),
        ("zookeeper-3", "zookeeper", 2183),
        ("server-0", "broker", 9092),
        ("server-1", "broker", 9093),
        ("server-2", "broker", 9094),
    ]
    assert spec.controller_nodes() == []
    assert spec.zookeeper_connect() == "127.0.0.1:2181,127.0.0.1:2182,127.0.0.1:2183"
    assert spec.kafka_version.startswith("3.9.")
    assert ClusterDir(Path("/c")).data_dir(spec.nodes()[0]) == Path("/c/zookeeper-1")


def test_seed_style_broker_and_zookeeper_properties(tmp_path: Path) -> None:
    spec = ClusterSpec.zookeeper_mode(zookeepers=3)
    broker = node_properties(spec, spec.brokers_nodes()[1], tmp_path)
    assert broker["broker.id"] == "1" and broker["listeners"] == "PLAINTEXT://127.0.0.1:9093"
    assert broker["zookeeper.connect"] == spec.zookeeper_connect() and broker["log.dirs"] == str(tmp_path / "kafka-1")
    assert "process.roles" not in broker and "node.id" not in broker
    zk = node_properties(spec, spec.zookeeper_nodes()[0], tmp_path)
    assert zk["admin.enableServer"] == "false" and zk["clientPortAddress"] == "127.0.0.1" and zk["clientPort"] == "2181"
    assert zk["server.2"] == "127.0.0.1:2282:2382"
    single = node_properties(ClusterSpec.zookeeper_mode(), ClusterSpec.zookeeper_mode().zookeeper_nodes()[0], tmp_path)
    assert not any(k.startswith("server.") for k in single)  # standalone, as Kafka's config/zookeeper.properties


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [
        (ClusterSpec.zookeeper_mode(kafka_version="4.3.1"), "needs Kafka 3.9.x"),
        (ClusterSpec.zookeeper_mode(zookeepers=0), "--zookeepers 0"),
        (ClusterSpec(mode="zookeeper", zookeepers=1, controllers=1, kafka_version="3.9.2"), "KRaft options"),
        (ClusterSpec.zookeeper_mode(base_port=2181), "overlap"),
    ],
)
def test_invalid_zookeeper_specs(spec: ClusterSpec, fragment: str) -> None:
    with pytest.raises(UserError, match=fragment):
        spec.validate()


def test_the_migration_ends_with_the_same_brokers_and_one_controller_apart_from_their_ids(tmp_path: Path) -> None:
    spec = ClusterSpec.zookeeper_mode(zookeepers=1)
    kraft = target_spec(spec).validate()
    assert kraft.mode == KRAFT_MODE and kraft.zookeepers == 0
    assert [n.node_id for n in kraft.controller_nodes()] == [3000]
    assert kraft.brokers_nodes() == spec.brokers_nodes()

    class Stub:
        def __init__(self) -> None:
            self.spec, self.dir = spec, ClusterDir(tmp_path)

    migration = Migration(Stub())  # type: ignore[arg-type]
    ctl = migration._controller_props(migrating=True)
    assert ctl["zookeeper.metadata.migration.enable"] == "true" and ctl["zookeeper.connect"] == "127.0.0.1:2181"
    assert ctl["process.roles"] == "controller" and ctl["node.id"] == "3000"
    assert "zookeeper.connect" not in migration._controller_props(migrating=False)
    broker = migration._migrating_broker_props(spec.brokers_nodes()[0])
    assert broker["broker.id"] == "0" and broker["controller.quorum.voters"] == "3000@127.0.0.1:9192"
    assert (
        "CONTROLLER:PLAINTEXT" in broker["listener.security.protocol.map"]
        and broker["inter.broker.protocol.version"] == "3.9"
    )
    assert [s.name for s, _ in migration.steps()] == (
        ["provision"]
        + ["brokers-to-migration"] * 3
        + ["migration-done"]
        + ["brokers-to-kraft"] * 3
        + ["finalize", "retire-zookeeper"]
    )


# -- measurements ---------------------------------------------------------------------------------
OUTAGE = fault(1, start_ms=100, stop_ms=5000, nodes=[1], fault_name="quorum-loss", target="quorum")
KILL_IN_OUTAGE = fault(2, start_ms=1000, stop_ms=9000, nodes=[1])
LED_BY_1 = topology(900, [(0, 1, [1, 2, 3], [1, 2, 3]), (1, 2, [2, 3, 1], [2, 3, 1])])


def test_partitions_of_a_broker_killed_without_zookeeper_keep_their_dead_leader_until_it_returns() -> None:
    stale = topology(3000, [(0, 1, [1, 2, 3], [1, 2, 3]), (1, 2, [2, 3, 1], [2, 3, 1])])
    moved = topology(7000, [(0, 2, [1, 2, 3], [2, 3]), (1, 2, [2, 3, 1], [2, 3])])
    entry = measure(history(LED_BY_1, stale, moved, *OUTAGE, *KILL_IN_OUTAGE))["faults"][1]
    assert entry["led_partitions"] == 1
    assert entry["new_leader_during_quorum_loss"] == 0
    assert entry["new_leader_after_quorum_back"] == 1 and entry["max_new_leader_after_quorum_back_ms"] == pytest.approx(
        2000
    )


def test_a_new_leader_while_the_quorum_is_down_is_reported() -> None:
    moved_early = topology(3000, [(0, 3, [1, 2, 3], [2, 3]), (1, 2, [2, 3, 1], [2, 3])])
    entry = measure(history(LED_BY_1, moved_early, *OUTAGE, *KILL_IN_OUTAGE))["faults"][1]
    assert entry["new_leader_during_quorum_loss"] == 1
    assert entry["new_leader_during_quorum_loss_partitions"] == ["t-0"]
    assert entry["new_leader_after_quorum_back"] == 0


def test_time_to_a_new_controller_is_read_from_the_controller_samples() -> None:
    kill = fault(1, start_ms=1000, stop_ms=30000, nodes=[1])
    m = measure(history(controller(0, 1), controller(1200, None), controller(19500, 2), *kill))
    assert m["faults"][0]["controller_before"] == 1 and m["faults"][0]["new_controller"] == 2
    assert m["new_controller_ms"] == pytest.approx(18500)
    unmoved = measure(history(controller(0, 1), *kill))
    assert unmoved["faults"][0]["new_controller_ms"] is None and unmoved["new_controller_ms"] is None


def _step(fault_id: int, role: str, *, start_ms: float, stop_ms: float | None, fault_name: str = "roll") -> list[dict]:
    ops = fault(fault_id, start_ms=start_ms, stop_ms=stop_ms, nodes=[0], fault_name=fault_name)
    ops[0]["role"] = role
    return ops


def test_a_completed_migration_and_a_failed_one() -> None:
    done = measure(
        history(
            *_step(1, "provision: start", start_ms=0, stop_ms=1000, fault_name="migration"),
            *_step(2, "brokers-to-migration: roll 0", start_ms=1000, stop_ms=4000),
            *_step(3, "retire-zookeeper: stop ZooKeeper", start_ms=4000, stop_ms=4500, fault_name="migration"),
        )
    )
    assert done["migration"] == {
        "completed": True,
        "steps": 3,
        "broker_rolls": 1,
        "broker_rolls_without_acks": 1,
        "wall_ms": 4500.0,
        "failed_step": None,
        "failed_error": None,
    }
    failed = measure(
        history(
            *_step(1, "provision: start", start_ms=0, stop_ms=1000, fault_name="migration"),
            *_step(2, "brokers-to-migration: roll 0", start_ms=1000, stop_ms=None),
        )
    )
    assert failed["migration"]["completed"] is False
    assert failed["migration"]["failed_step"] == "brokers-to-migration: roll 0"
    assert "migration" not in measure(history(*fault(1, start_ms=0, stop_ms=10, nodes=[0])))


# -- scenarios ------------------------------------------------------------------------------------
def test_a_scenarios_zookeeper_table_applies_on_zookeeper_clusters_only() -> None:
    assert load_scenario("broker-failover").phases.chaos_s == 16
    assert load_scenario("broker-failover", mode="zookeeper").phases.chaos_s == 32
    assert load_scenario("broker-failover", ("phases.chaos_s=40",), mode="zookeeper").phases.chaos_s == 40


def test_a_malformed_zookeeper_table_is_a_scenario_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text('name = "bad"\n[zookeeper]\nset = "phases.chaos_s=3"\n')
    with pytest.raises(ScenarioError, match=r"\[zookeeper\] must hold set"):
        load_scenario(str(path))


def test_the_run_mode_comes_from_the_scenarios_or_the_option() -> None:
    zk, kraft, either = load_scenario("zookeeper-outage"), load_scenario("controller-failover"), load_scenario("pubsub")
    assert needs_of([zk, either]).mode == "zookeeper"
    assert needs_of([either], "zookeeper").mode == "zookeeper"
    assert needs_of([kraft]).controllers == 3
    with pytest.raises(UserError, match="different modes"):
        needs_of([zk, kraft])
    with pytest.raises(UserError, match="zookeeper mode only"):
        needs_of([zk], "kraft")
    assert misfit(ClusterSpec(), needs_of([zk]), [zk]) == "it runs in kraft mode and the run asks for zookeeper mode"
    assert misfit(ClusterSpec(), needs_of([kraft]), [kraft]) == "it has 1 controllers and the scenario needs 3"


def test_migrate_is_refused_in_a_kraft_scenario(tmp_path: Path) -> None:
    path = tmp_path / "m.toml"
    path.write_text('name = "m"\n[[actions]]\naction = "migrate"\nphase = "chaos"\n')
    with pytest.raises(ScenarioError, match="migrate needs a ZooKeeper-mode cluster"):
        load_scenario(str(path))


# -- Kafka's tools --------------------------------------------------------------------------------
def test_zookeeper_shell_is_pointed_at_the_clusters_ensemble() -> None:
    assert zookeeper_shell_args(["ls", "/brokers/ids"], "127.0.0.1:2181") == [
        "-server",
        "127.0.0.1:2181",
        "ls",
        "/brokers/ids",
    ]
    assert zookeeper_shell_args(["10.0.0.1:2181", "ls", "/"], "127.0.0.1:2181") == [
        "-server",
        "10.0.0.1:2181",
        "ls",
        "/",
    ]
    with pytest.raises(UserError, match="has none"):
        zookeeper_shell_args(["ls", "/"], None)


def test_server_scripts_point_at_failsafes_own_commands() -> None:
    with pytest.raises(UserError, match="failsafe zookeeper start ID"):
        main_class(KafkaDist("3.9.2", Path("/nowhere")), "zookeeper-server-start.sh")


# -- bad input on the command line ----------------------------------------------------------------
@pytest.fixture
def stopped_zookeeper_cluster(tmp_path: Path) -> Path:
    spec = ClusterSpec.zookeeper_mode(base_port=free_port_block(3), zookeeper_base_port=free_port_block(1))
    ClusterDir(tmp_path).save(ClusterState(spec, "AAAAAAAAAAAAAAAAAAAAAA", "now"))
    return tmp_path


def test_zookeeper_mode_with_kafka_4_is_one_line(tmp_path: Path) -> None:
    assert_one_line_error(
        run_cli("up", "--mode", "zookeeper", "--kafka-version", "4.3.1", "--dir", str(tmp_path / "c")),
        "needs Kafka 3.9.x",
    )
    assert not (tmp_path / "c").exists()


def test_mixing_the_modes_options_is_one_line(tmp_path: Path) -> None:
    assert_one_line_error(run_cli("up", "--zookeepers", "3", "--dir", str(tmp_path / "c")), "need --mode zookeeper")
    assert_one_line_error(
        run_cli("up", "--mode", "zookeeper", "--controllers", "3", "--dir", str(tmp_path / "c")), "KRaft options"
    )


def test_zookeeper_commands_on_a_kraft_cluster(tmp_path: Path) -> None:
    ClusterDir(tmp_path).save(ClusterState(ClusterSpec(base_port=free_port_block(3)), "AAAAAAAAAAAAAAAAAAAAAA", "now"))
    assert_one_line_error(
        run_cli("zookeeper", "kill", "1", "--dir", str(tmp_path)), "runs in KRaft mode", "no ZooKeeper"
    )
    assert_one_line_error(run_cli("migrate", "--dir", str(tmp_path)), "already runs in KRaft mode")


def test_controller_commands_on_a_zookeeper_cluster(stopped_zookeeper_cluster: Path) -> None:
    assert_one_line_error(
        run_cli("controller", "kill", "1000", "--dir", str(stopped_zookeeper_cluster)),
        "runs in ZooKeeper mode",
        "failsafe broker",
    )


def test_migrate_with_nodes_down_changes_nothing(stopped_zookeeper_cluster: Path) -> None:
    before = (stopped_zookeeper_cluster / "failsafe-state.json").read_text()
    assert_one_line_error(
        run_cli("migrate", "--dir", str(stopped_zookeeper_cluster)), "every node must be up", "broker 0 is down"
    )
    assert (stopped_zookeeper_cluster / "failsafe-state.json").read_text() == before
    assert not list(stopped_zookeeper_cluster.glob("server-3000*"))


def test_a_failed_provision_step_leaves_the_zookeeper_cluster_as_it_was(tmp_path: Path) -> None:
    from failsafe.cluster.modes.migration import MigrationFailed
    from failsafe.errors import ClusterStartError
    from failsafe.supervisor import UP

    spec = ClusterSpec.zookeeper_mode(
        base_port=free_port_block(3), controller_base_port=free_port_block(1), zookeeper_base_port=free_port_block(1)
    )

    class FormatFails:
        """A running ZooKeeper-mode cluster whose controller storage cannot be formatted."""

        java = dist = None

        def __init__(self) -> None:
            self.dir = ClusterDir(tmp_path)
            self.state = ClusterState(spec, "-starts-with-a-dash", "now")
            self.dir.save(self.state)
            self.stopped: list[int] = []

        @property
        def spec(self) -> ClusterSpec:
            return self.state.spec

        def node_state(self, node) -> str:
            return UP

        def format_storage(self, nodes, java, dist) -> None:
            raise ClusterStartError("kafka-storage format failed for server-3000: no")

        def stop_nodes(self, nodes, sig, timeout_s) -> None:
            self.stopped += [n.node_id for n in nodes]

    cluster = FormatFails()
    with pytest.raises(
        MigrationFailed, match="migration step provision .* failed: kafka-storage format failed.*nothing to do"
    ):
        Migration(cluster).run()  # type: ignore[arg-type]
    assert cluster.stopped == [3000]
    assert ClusterDir(tmp_path).load().spec == spec  # mode zookeeper again, no controller
