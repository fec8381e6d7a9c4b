"""Partition reassignment and a broker added, without processes: the plan, the tool's JSON and --verify's verdicts,
the scenarios' needs and what is refused, the measurement of the steps, and an action's work beside the schedule."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest

from failsafe.checkers.measure.faults import measure
from failsafe.cluster.spec import ClusterSpec
from failsafe.cluster.state import ClusterDir, ClusterState
from failsafe.cluster.topology.reassign import plan_json, plan_move, verified
from failsafe.errors import UserError
from failsafe.history.ops import Family
from failsafe.scenarios.base import ScenarioError
from failsafe.scenarios.engine.actions import Background
from failsafe.scenarios.engine.placement import misfit, needs_of, spec_for
from failsafe.scenarios.registry import load_scenario
from tests.helpers import assert_one_line_error, run_cli
from tests.unit.test_checker_builders import fault, history

ASSIGNMENT = {("t", 0): [0, 1, 2], ("t", 1): [1, 2, 0], ("t", 2): [1, 2, 3], ("t", 3): [0, 3, 1]}


def test_each_replica_on_the_source_goes_to_the_destination_in_its_place() -> None:
    plan = plan_move(ASSIGNMENT, source=0, destination=3)
    # t-2 has no replica on 0; t-3 already has one on 3 (a second would be a duplicate replica): both stay.
    assert plan == {("t", 0): [3, 1, 2], ("t", 1): [1, 2, 3]}
    assert plan_move(ASSIGNMENT, source=5, destination=3) == {}
    assert json.loads(plan_json(plan)) == {
        "version": 1,
        "partitions": [
            {"topic": "t", "partition": 0, "replicas": [3, 1, 2]},
            {"topic": "t", "partition": 1, "replicas": [1, 2, 3]},
        ],
    }


def test_a_topic_the_cluster_has_not_is_a_usage_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import failsafe.cluster.topology.reassign as reassign

    partition = SimpleNamespace(replicas=[0, 1, 2], isrs=[0, 1])
    metadata = SimpleNamespace(topics={"t": SimpleNamespace(error=None, partitions={0: partition})})
    monkeypatch.setattr(reassign, "new_admin", lambda bootstrap: None)
    monkeypatch.setattr(reassign, "fetch_metadata", lambda admin, bootstrap, timeout_s: metadata)
    assert reassign.assignment("b:9092", ["t"]) == ({("t", 0): [0, 1, 2]}, {("t", 0): [0, 1]})
    with pytest.raises(UserError, match="no topic gone at b:9092"):
        reassign.assignment("b:9092", ["t", "gone"])


def test_verify_says_which_moves_completed() -> None:
    out = (
        "Status of partition reassignment:\n"
        "Reassignment of partition my-topic-0 is completed.\n"
        "Reassignment of partition my-topic-11 is still in progress.\n"
        "Clearing broker-level throttles on brokers 0,1,2,3\n"
    )
    assert verified(out) == {("my-topic", 0): True, ("my-topic", 11): False}
    assert verified("nothing here") == {}


def test_the_reassignment_scenarios_need_a_cluster_of_exactly_their_brokers() -> None:
    scenario = load_scenario("reassign-destination-killed")
    needs = needs_of([scenario])
    assert (needs.brokers, needs.adds_brokers) == (3, 1)
    assert spec_for(needs, None, None, None).brokers == 3
    assert misfit(ClusterSpec(brokers=3), needs, [scenario]) is None
    assert "adds 1 to exactly 3" in (misfit(ClusterSpec(brokers=4), needs, [scenario]) or "")
    # The kill names the broker the run adds.
    assert scenario.faults[0].params.node == 3


@pytest.mark.parametrize(
    ("sets", "fragment"),
    [
        (("cluster.adds_brokers=0",), "set cluster.adds_brokers = 1"),
        (("actions[1].source=7",), "needs source = the broker whose replicas move"),
        (("actions[1].node=9",), "moves to node = a broker"),
        (("actions[1].throttle=0",), "bytes per second"),
        (("faults[0].node=4",), "is not a broker of the scenario's cluster"),
    ],
)
def test_a_reassignment_without_what_it_needs_is_refused(sets: tuple[str, ...], fragment: str) -> None:
    with pytest.raises(ScenarioError, match=fragment):
        load_scenario("reassign-source-killed", sets)


def test_broker_add_refuses_what_it_cannot_grow_in_one_line(tmp_path: Path) -> None:
    ClusterDir(tmp_path / "z").save(ClusterState(ClusterSpec.zookeeper_mode(brokers=3), "id", "now"))
    assert_one_line_error(run_cli("broker", "add", "--dir", str(tmp_path / "z")), "only KRaft clusters grow")
    ClusterDir(tmp_path / "r").save(ClusterState(ClusterSpec(brokers=3, racks=3), "id", "now"))
    assert_one_line_error(run_cli("broker", "add", "--dir", str(tmp_path / "r")), "racks")


def test_reassign_refuses_a_broker_the_cluster_has_not_in_one_line(tmp_path: Path) -> None:
    ClusterDir(tmp_path).save(ClusterState(ClusterSpec(brokers=3), "id", "now"))
    result = run_cli("reassign", "--dir", str(tmp_path), "--from", "7", "--topic", "t")
    assert_one_line_error(result, "--from 7", "the cluster's brokers are 0, 1, 2")


def _step(fault_id: int, kind: str, start_ms: float, stop_ms: float | None, nodes: list[int]) -> list[dict]:
    ops = fault(fault_id, start_ms=start_ms, stop_ms=stop_ms, nodes=nodes, fault_name=kind)
    ops[0]["family"] = Family.REASSIGNMENT
    ops[0]["role"] = kind
    return ops


def test_the_move_is_measured_with_the_faults_started_during_it() -> None:
    m = measure(
        history(
            *_step(1, "add-broker", 0, 3000, [3]),
            *_step(2, "reassign-partitions", 4000, 20000, [0, 3]),
            *fault(3, start_ms=6000, stop_ms=14000, nodes=[3]),
            *fault(4, start_ms=25000, stop_ms=26000, nodes=[1]),
        )
    )["reassignment"]
    assert (m["completed"], m["brokers_added"], m["moves"], m["moves_completed"]) == (True, 1, 1, 1)
    assert (m["move_ms"], m["faults_during_moves"]) == (16000.0, 1)
    assert m["by_step"][1]["faults_during"] == ["kill of 3"]


def test_a_move_that_never_completed_is_measured_as_such() -> None:
    m = measure(history(*_step(1, "reassign-partitions", 0, None, [0, 3])))["reassignment"]
    assert (m["completed"], m["moves_completed"], m["move_ms"]) == (False, 0, None)
    assert "reassignment" not in measure(history(*fault(1, start_ms=0, stop_ms=10, nodes=[0])))


def test_work_beside_the_schedule_is_told_to_stop_and_its_error_is_said() -> None:
    said: list[str] = []
    background = Background(said.append)
    started = threading.Event()

    def waits(stopping: threading.Event) -> None:
        started.set()
        if not stopping.wait(30):
            raise AssertionError("never told to stop")

    def fails(stopping: threading.Event) -> None:
        raise RuntimeError("the move did not complete")

    background.spawn("reassignment 2", waits)
    background.spawn("reassignment 3", fails)
    assert started.wait(5)
    assert background.running() == ["failsafe-reassignment 2"]
    assert background.stop(5) == []
    assert said == ["reassignment 3 failed: RuntimeError: the move did not complete"]
