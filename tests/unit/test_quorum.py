"""A dynamic controller quorum without processes: its spec, properties and format arguments, retired slots, what is
refused, its scenarios and the measurement of its changes."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from failsafe.checkers.measure.faults import measure
from failsafe.cluster.nodes.control import format_args, initial_controllers
from failsafe.cluster.properties import kraft_properties
from failsafe.cluster.spec import ClusterSpec
from failsafe.cluster.topology.quorum import next_controller_id
from failsafe.errors import UserError
from failsafe.history.ops import Family
from failsafe.scenarios.base import ScenarioError
from failsafe.scenarios.engine.placement import misfit, needs_of, spec_for
from failsafe.scenarios.registry import load_scenario
from tests.helpers import assert_one_line_error, run_cli
from tests.unit.test_checker_builders import at, fault, history

DYNAMIC = ClusterSpec(brokers=3, controllers=3, dynamic_quorum=True)


def test_a_dynamic_quorum_is_found_through_bootstrap_servers_and_formatted_with_its_first_voters() -> None:
    controller, broker = DYNAMIC.controller_nodes()[0], DYNAMIC.brokers_nodes()[0]
    props = kraft_properties(DYNAMIC, broker, Path("/c"))
    assert "controller.quorum.voters" not in props
    assert props["controller.quorum.bootstrap.servers"] == "127.0.0.100:9192,127.0.0.101:9193,127.0.0.102:9194"
    assert "controller.quorum.voters" in kraft_properties(ClusterSpec(controllers=3), broker, Path("/c"))
    first = initial_controllers(DYNAMIC, DYNAMIC.nodes())
    assert first is not None and [v.split("@")[0] for v in first.split(",")] == ["1000", "1001", "1002"]
    assert len({v.rsplit(":", 1)[1] for v in first.split(",")}) == 3  # a directory id each
    assert f"--initial-controllers={first}" in format_args("id", "c.properties", DYNAMIC, first)
    # A controller joining a running quorum, and any node of a static one.
    assert initial_controllers(DYNAMIC, [controller]) is None
    assert "--no-initial-controllers" in format_args("id", "c.properties", DYNAMIC, None)
    assert not any("initial-controllers" in a for a in format_args("id", "c.properties", ClusterSpec(), None))


def test_a_retired_controller_is_no_node_and_its_slot_is_the_next_added() -> None:
    assert next_controller_id(DYNAMIC) == 1003
    shrunk = dataclasses.replace(DYNAMIC, retired_controllers=(1001,))
    assert [n.node_id for n in shrunk.controller_nodes()] == [1000, 1002]
    assert next_controller_id(shrunk) == 1001
    assert shrunk.quorum_bootstrap_servers() == "127.0.0.100:9192,127.0.0.102:9194"
    assert ClusterSpec.from_json(shrunk.to_json()) == shrunk


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [
        (ClusterSpec(brokers=3, controllers=3, combined=True, dynamic_quorum=True), "not --combined"),
        (ClusterSpec.zookeeper_mode(brokers=3, dynamic_quorum=True), "KRaft's"),
    ],
)
def test_what_a_dynamic_quorum_refuses(spec: ClusterSpec, fragment: str) -> None:
    with pytest.raises(UserError, match=fragment):
        spec.validate()


def test_up_refuses_a_dynamic_quorum_in_zookeeper_mode_in_one_line(tmp_path: Path) -> None:
    result = run_cli("up", "--dir", str(tmp_path / "c"), "--mode", "zookeeper", "--dynamic-quorum")
    assert_one_line_error(result, "--dynamic-quorum", "KRaft")
    assert not (tmp_path / "c" / "failsafe-state.json").exists()


def test_a_static_quorum_refuses_membership_changes_in_one_line(tmp_path: Path) -> None:
    from failsafe.cluster.state import ClusterDir, ClusterState

    ClusterDir(tmp_path).save(ClusterState(ClusterSpec(controllers=3), "id", "now"))
    assert_one_line_error(run_cli("controller", "add", "--dir", str(tmp_path)), "static controller quorum")
    assert_one_line_error(run_cli("controller", "remove", "1000", "--dir", str(tmp_path)), "static controller quorum")


@pytest.mark.parametrize(
    ("sets", "fragment"),
    [
        (("actions[0].feature='colour.version'",), "set-feature needs feature = one of"),
        (("actions[0].level=-1",), "must not be negative"),
    ],
)
def test_a_feature_flip_without_what_it_needs_is_refused(sets: tuple[str, ...], fragment: str) -> None:
    with pytest.raises(ScenarioError, match=fragment):
        load_scenario("txn-version-flip", sets)


def test_the_quorum_scenarios_need_a_dynamic_quorum() -> None:
    scenario = load_scenario("quorum-remove-active-controller")
    needs = needs_of([scenario])
    assert needs.dynamic_quorum and spec_for(needs, None, None, None).dynamic_quorum
    assert misfit(ClusterSpec(controllers=3), needs, [scenario]) == (
        "its controller quorum is static and the scenario changes its voters (failsafe up --dynamic-quorum)"
    )
    assert misfit(DYNAMIC, needs, [scenario]) is None
    with pytest.raises(ScenarioError, match="set cluster.dynamic_quorum = true"):
        load_scenario("quorum-add-remove-controller", ("cluster.dynamic_quorum=false",))


def _change(fault_id: int, kind: str, start_ms: float, stop_ms: float | None, node: int) -> list[dict]:
    ops = fault(fault_id, start_ms=start_ms, stop_ms=stop_ms, nodes=[node], fault_name=kind, target="controller")
    ops[0]["family"] = Family.QUORUM_CHANGE
    ops[0]["role"] = f"{kind} {node}"
    return ops


def _create(op_id: int, ms: float, outcome: str) -> list[dict]:
    base = {"process": "admin", "f": "create-topic", "id": op_id, "topic": f"t{op_id}"}
    return [{**base, "time_ns": at(ms), "type": "invoke"}, {**base, "time_ns": at(ms + 5), "type": outcome}]


def test_each_change_is_measured_with_the_metadata_written_after_it() -> None:
    m = measure(
        history(
            *_change(1, "add-controller", 0, 4000, 1003),
            *_create(1, 4100, "ok"),
            *_change(2, "remove-controller", 5000, None, 1003),
            *_create(2, 9000, "fail"),
        )
    )["quorum_changes"]
    assert (m["completed"], m["changes"], m["topics_created_after"]) == (False, 2, 1)
    first, second = m["by_change"]
    assert (first["wall_ms"], first["topic_created_after"]) == (4000.0, "ok")
    assert (second["completed"], second["wall_ms"], second["topic_created_after"]) == (False, None, None)
    assert "quorum_changes" not in measure(history(*fault(1, start_ms=0, stop_ms=10, nodes=[0])))
