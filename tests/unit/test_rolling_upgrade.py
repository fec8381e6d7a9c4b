"""Rolling upgrades without processes: the nodes' releases in the state file, the order of the rolls, what is refused,
the steps of an upgrade and of a rollback, its measurement, and the scenarios that run it."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from failsafe.checkers.measure.faults import measure
from failsafe.cluster.nodes.control import LocalNodes
from failsafe.cluster.spec import ClusterSpec
from failsafe.cluster.state import ClusterDir, ClusterState
from failsafe.cluster.topology import upgrade as upgrade_module
from failsafe.cluster.topology.upgrade import Upgrade, release_of, roll_order
from failsafe.errors import UserError
from failsafe.history.ops import Family
from failsafe.jvm.mirror import mirror_version
from failsafe.scenarios.base import ScenarioError
from failsafe.scenarios.engine.placement import misfit, needs_of, spec_for
from failsafe.scenarios.registry import load_scenario
from failsafe.supervisor import DOWN, UP
from tests.unit.test_checker_builders import fault, history

SPEC = ClusterSpec(brokers=3, controllers=3, kafka_version="4.3.1")


class Stub:
    """What an upgrade asks of a cluster, without processes."""

    def __init__(self, tmp_path: Path, state: ClusterState, active: int = 1001, down: tuple[int, ...] = ()) -> None:
        self.state = state
        self.dir = ClusterDir(tmp_path)
        self.nodes = LocalNodes.__new__(LocalNodes)
        self._active = active
        self._down = down

    @property
    def spec(self) -> ClusterSpec:
        return self.state.spec

    def active_controller(self) -> int | None:
        return self._active

    def node_state(self, node) -> str:
        return DOWN if node.node_id in self._down else UP


@pytest.fixture(autouse=True)
def resolved(monkeypatch: pytest.MonkeyPatch) -> None:
    # An upgrade first asks that the release be resolved: here every release is.
    monkeypatch.setattr(upgrade_module, "kafka_dist", lambda version: version)


def _state(**fields) -> ClusterState:
    return ClusterState(spec=dataclasses.replace(SPEC, **fields), cluster_id="id", created_at="now")


def test_the_nodes_releases_survive_the_state_file(tmp_path: Path) -> None:
    state = dataclasses.replace(_state(), node_versions={"server-1000": "4.4.0"})
    ClusterDir(tmp_path).save(state)
    loaded = ClusterDir(tmp_path).load()
    assert loaded.node_versions == {"server-1000": "4.4.0"}
    controller, broker = SPEC.controller_nodes()[0], SPEC.brokers_nodes()[0]
    assert loaded.version_of(controller) == "4.4.0" and loaded.version_of(broker) == "4.3.1"
    assert "node_versions" not in _state().to_json()  # a cluster on one release writes the file as before
    with pytest.raises(ValueError, match="node_versions"):
        ClusterState.from_json({**state.to_json(), "node_versions": ["4.4.0"]})


def test_controllers_roll_first_the_active_one_last_then_brokers(tmp_path: Path) -> None:
    order = roll_order(Stub(tmp_path, _state(), active=1001))  # type: ignore[arg-type]
    assert [(n.role, n.node_id) for n in order] == [
        ("controller", 1000),
        ("controller", 1002),
        ("controller", 1001),
        ("broker", 0),
        ("broker", 1),
        ("broker", 2),
    ]


def test_an_upgrade_rolls_the_nodes_not_on_the_release_then_finalizes(tmp_path: Path) -> None:
    half = dataclasses.replace(_state(), node_versions={"server-1000": "4.4.0", "server-1002": "4.4.0"})
    steps = [s for s, _ in Upgrade(Stub(tmp_path, half), "4.4.0").steps()]  # type: ignore[arg-type]
    assert [s.description for s in steps] == [
        "roll controller 1001 from Kafka 4.3.1 to 4.4.0",
        "roll broker 0 from Kafka 4.3.1 to 4.4.0",
        "roll broker 1 from Kafka 4.3.1 to 4.4.0",
        "roll broker 2 from Kafka 4.3.1 to 4.4.0",
        "finalize the features at release 4.4",
    ]
    assert [s.kind for s in steps][-1] == "finalize"
    assert [s for s, _ in Upgrade(Stub(tmp_path, half), "4.4.0", finalize=False).steps()][-1].kind == "roll"


def test_a_rollback_before_finalizing_rolls_back_and_finalizes_nothing(tmp_path: Path) -> None:
    rolled = dataclasses.replace(_state(), node_versions={n.name: "4.4.0" for n in SPEC.nodes()})
    steps = [s for s, _ in Upgrade(Stub(tmp_path, rolled), "4.3.1").steps()]  # type: ignore[arg-type]
    assert len(steps) == 6 and all(s.kind == "roll" and s.description.endswith("to 4.3.1") for s in steps)


@pytest.mark.parametrize(
    ("state", "to", "down", "fragment"),
    [
        (_state(kafka_version="4.4.0"), "4.3.1", (), "cannot roll back to 4.3.1"),
        (_state(), "4.3.1", (), "nothing to do"),
        (_state(), "4.4.0", (1,), "broker 1 is down"),
        (_state(), "3.9.2", (), "3.x release"),
        (
            ClusterState(ClusterSpec.zookeeper_mode(brokers=3), "id", "now"),
            "4.4.0",
            (),
            "needs a KRaft cluster",
        ),
    ],
)
def test_what_an_upgrade_refuses_before_any_node_stops(
    tmp_path: Path, state: ClusterState, to: str, down: tuple[int, ...], fragment: str
) -> None:
    with pytest.raises(UserError, match=fragment):
        Upgrade(Stub(tmp_path, state, down=down), to)  # type: ignore[arg-type]


def test_release_version_and_the_mirror_maker_of_a_release_maven_central_lacks() -> None:
    assert release_of("4.4.0") == "4.4" and release_of("3.9.2") == "3.9"
    assert mirror_version("4.4.0") == "4.3.1" and mirror_version("4.3.1") == "4.3.1"


def _step(fault_id: int, kind: str, description: str, start_ms: float, stop_ms: float | None, nodes: list) -> list:
    ops = fault(fault_id, start_ms=start_ms, stop_ms=stop_ms, nodes=nodes, fault_name=kind)
    ops[0]["role"] = description
    ops[0]["family"] = Family.UPGRADE
    ops[0]["target"] = "broker" if nodes else "quorum"
    return ops


def test_an_upgrade_is_measured_step_by_step_and_a_failed_one_says_where() -> None:
    done = measure(
        history(
            *_step(1, "roll", "roll broker 0 from Kafka 4.3.1 to 4.4.0", 0, 9000, [0]),
            *_step(2, "finalize", "finalize the features at release 4.4", 9000, 11000, []),
        )
    )["upgrade"]
    assert {k: done[k] for k in ("completed", "steps", "rolls", "finalized", "wall_ms", "failed_step")} == {
        "completed": True,
        "steps": 2,
        "rolls": 1,
        "finalized": True,
        "wall_ms": 11000.0,
        "failed_step": None,
    }
    assert [s["wall_ms"] for s in done["by_step"]] == [9000.0, 2000.0]
    failed = measure(history(*_step(1, "roll", "roll broker 0 from Kafka 4.3.1 to 4.4.0", 0, None, [0])))["upgrade"]
    assert failed["completed"] is False and failed["finalized"] is False
    assert failed["failed_step"] == "roll broker 0 from Kafka 4.3.1 to 4.4.0"
    # Its windows on the quorum are not a quorum loss.
    assert "upgrade" not in measure(history(*fault(1, start_ms=0, stop_ms=10, nodes=[0])))


def test_the_upgrade_scenarios_start_on_their_release_and_a_cluster_on_another_does_not_fit() -> None:
    scenario = load_scenario("rolling-upgrade")
    needs = needs_of([scenario])
    assert needs.kafka_version == "4.3.1" and needs.delete_after
    assert spec_for(needs, None, None, None).kafka_version == "4.3.1"
    assert misfit(ClusterSpec(controllers=3, kafka_version="4.4.0"), needs, [scenario]) == (
        "it runs Kafka 4.4.0 and the scenario starts from 4.3.1 (failsafe up --kafka-version 4.3.1)"
    )
    assert misfit(ClusterSpec(controllers=3, kafka_version="4.3.1"), needs, [scenario]) is None
    rollback = load_scenario("rolling-upgrade-rollback")
    assert not needs_of([rollback]).delete_after
    assert [(a.to, a.finalize) for a in rollback.actions] == [("4.4.0", False), ("4.3.1", True)]
    with pytest.raises(UserError, match="different Kafka releases"):
        needs_of([scenario, load_scenario("rolling-upgrade", ("cluster.kafka_version='4.4.0'",))])


@pytest.mark.parametrize(
    ("sets", "fragment"),
    [
        (("actions[0].to='four'",), "needs to = the Kafka release"),
        (("cluster.kafka_version=''",), "needs cluster.kafka_version"),
        (("cluster.kafka_version='4.3'",), "is not a Kafka release"),
    ],
)
def test_a_rolling_upgrade_scenario_without_what_it_needs_is_refused(sets: tuple[str, ...], fragment: str) -> None:
    with pytest.raises(ScenarioError, match=fragment):
        load_scenario("rolling-upgrade", sets)


def test_each_run_of_a_scenario_that_changes_its_cluster_for_good_gets_a_fresh_one(tmp_path: Path) -> None:
    from failsafe.cli.lab import _sittings

    upgrade, other = load_scenario("rolling-upgrade"), load_scenario("broker-failover")
    assert _sittings([other], 3, tmp_path, None) == [(3, 1)]  # one cluster for every run
    assert _sittings([upgrade], 3, tmp_path, None) == [(1, 1), (1, 2), (1, 3)]
    with pytest.raises(UserError, match="run it on its own"):
        _sittings([upgrade, other], 1, tmp_path, None)
    with pytest.raises(UserError, match="each of its --repeat runs starts a cluster of its own"):
        _sittings([upgrade], 2, tmp_path, "127.0.0.1:9092")
    assert _sittings([upgrade], 1, tmp_path, "127.0.0.1:9092") == [(1, 1)]


def test_a_changed_cluster_is_deleted_after_its_run_and_its_runs_kept(tmp_path: Path) -> None:
    from failsafe.cluster.topology import lifecycle

    root = tmp_path / "c"
    ClusterDir(root).save(_state())
    (root / "runs" / "rolling-upgrade").mkdir(parents=True)
    (root / "runs" / "rolling-upgrade" / "results.json").write_text("{}")
    (root / "kafka-0").mkdir()
    (root / "server-0.properties").write_text("")
    lifecycle.clean(root, keep=("runs",))
    assert sorted(p.relative_to(root).as_posix() for p in root.rglob("*")) == [
        "runs",
        "runs/rolling-upgrade",
        "runs/rolling-upgrade/results.json",
    ]


def test_a_feature_flip_given_the_levels_it_read_asks_kafka_features_once_less(monkeypatch: pytest.MonkeyPatch) -> None:
    from failsafe.tools import kafka_tools

    calls: list[list[str]] = []
    levels = {"transaction.version": "2"}

    def features(dist, bootstrap, args):
        calls.append(args)
        if args[0] == "downgrade":
            levels["transaction.version"] = args[-1].split("=")[1]
        return "".join(
            f"Feature: {f}\tSupportedMinVersion: 0\tSupportedMaxVersion: 2\tFinalizedVersionLevel: {v}\tEpoch: 1\n"
            for f, v in levels.items()
        )

    monkeypatch.setattr(kafka_tools, "_features", features)
    known = kafka_tools.finalized_features(None, "b")  # type: ignore[arg-type]
    assert kafka_tools.set_feature_level(None, "b", "transaction.version", 1, known) == 1  # type: ignore[arg-type]
    assert [c[0] for c in calls] == ["describe", "downgrade", "describe"]
    with pytest.raises(UserError, match="outside what this cluster supports"):
        kafka_tools.set_feature_level(None, "b", "transaction.version", 3)  # type: ignore[arg-type]
