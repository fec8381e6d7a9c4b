"""Node actions done by hand (CLI, console) while a scenario runs are faults in its history, healed like scheduled
ones."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from failsafe.cluster.net import netfilter
from failsafe.cluster.nodes.control import LocalNodes
from failsafe.cluster.observe import journal
from failsafe.cluster.observe.journal import OperatorAction
from failsafe.history.load import load_history
from failsafe.scenarios.engine.core import Engine, RunSettings, run_scenario
from failsafe.scenarios.store.rundir import RunDir
from failsafe.supervisor import DOWN
from tests.unit.test_engine import FakeCluster, FakeSampler, FakeScenario, FakeWorkload, _ops

T = 1_700_000_000_000_000_000


def _engine(tmp_path: Path, cluster: FakeCluster, journal_path: Path) -> Engine:
    scenario = FakeScenario(())
    cluster.journal_path = journal_path
    return Engine(
        scenario,
        FakeWorkload(),
        RunDir.create(tmp_path / "runs", scenario),
        cluster,
        RunSettings("4.3.1", {}, lambda _: None, lambda _: None, sampler=FakeSampler()),
    )


def _act(path: Path, action: str, node: int | None, at_s: float, ok: bool = True, role: str = "broker", **kw) -> None:
    start_ns = T + round(at_s * 1e9)
    journal.append(path, OperatorAction(start_ns, start_ns + 100_000_000, action, role, node, "console", ok, **kw))


def test_a_kill_and_start_by_hand_are_one_fault_window_and_the_heal_leaves_the_node_alone(tmp_path: Path) -> None:
    path, cluster = tmp_path / journal.JOURNAL_FILE, FakeCluster()
    _act(path, "kill", 0, at_s=-5)  # before the run: not this run's business
    engine = _engine(tmp_path, cluster, path)
    _act(path, "kill", 1, at_s=1)
    _act(path, "start", 1, at_s=4)
    run_scenario(engine)
    (start,), (stop,) = _ops(engine, "fault-start"), _ops(engine, "fault-stop")
    assert (start["fault"], start["nodes"], start["role"], start["time_ns"]) == (
        "kill",
        [1],
        "operator (console)",
        T + 1_000_000_000,
    )
    assert stop["fault_id"] == start["fault_id"] and stop["ok"] and stop["time_ns"] == T + 4_100_000_000
    assert cluster.restarts == []
    (fault,) = load_history(engine.run_dir.history_path).faults.to_dicts()
    assert fault["role"] == "operator (console)" and fault["stop_ns"] == stop["time_ns"]


def test_a_node_killed_by_hand_and_left_down_is_started_by_the_heal(tmp_path: Path) -> None:
    path, cluster = tmp_path / journal.JOURNAL_FILE, FakeCluster()
    engine = _engine(tmp_path, cluster, path)
    cluster.states[2] = DOWN
    _act(path, "kill", 2, at_s=1)
    run_scenario(engine)
    assert cluster.restarts == [[2]] and cluster.not_whole() == []
    (stop,) = _ops(engine, "fault-stop")
    assert stop["ok"] and "by" not in stop


def test_a_refused_action_is_recorded_with_its_error_and_is_no_fault_to_heal(tmp_path: Path) -> None:
    path, cluster = tmp_path / journal.JOURNAL_FILE, FakeCluster()
    engine = _engine(tmp_path, cluster, path)
    _act(path, "kill", 1, at_s=1, ok=False, error="broker 1 is not running")
    run_scenario(engine)
    (start,) = _ops(engine, "fault-start")
    assert start["error"] == "broker 1 is not running" and _ops(engine, "fault-stop") == []
    assert cluster.restarts == []


def test_a_preferred_leader_election_by_hand_is_an_elect_leaders_op(tmp_path: Path) -> None:
    path = tmp_path / journal.JOURNAL_FILE
    engine = _engine(tmp_path, FakeCluster(), path)
    _act(path, journal.ELECT_LEADERS, None, at_s=2, role="cluster", detail={"elected": ["t-0"]})
    run_scenario(engine)
    (op,) = _ops(engine, "elect-leaders")
    assert op["process"] == "operator" and op["elected"] == ["t-0"]
    assert load_history(engine.run_dir.history_path).events.filter(process="operator").height == 1


def test_the_journal_keeps_a_half_written_line_for_the_next_read(tmp_path: Path) -> None:
    path = tmp_path / journal.JOURNAL_FILE
    _act(path, "pause", 0, at_s=0)
    with open(path, "ab") as fh:
        fh.write(b'{"start_ns": 1, "end_ns"')
    actions, offset = journal.read_from(path, 0)
    assert [a.action for a in actions] == ["pause"] and offset < path.stat().st_size
    with open(path, "ab") as fh:
        fh.write(b': 2, "action": "resume", "role": "broker", "node": 0, "source": "cli", "ok": true}\n')
    more, _ = journal.read_from(path, offset)
    assert [(a.action, a.source) for a in more] == [("resume", "cli")]
    assert [a.action for a in journal.last(path, 1)] == ["resume"]


def _net(path: Path, action: str, at_s: float, **detail) -> None:
    start_ns = T + round(at_s * 1e9)
    journal.append(
        path, OperatorAction(start_ns, start_ns + 100_000_000, action, "network", None, "cli", True, detail=detail)
    )


def _deleted_chains(monkeypatch: pytest.MonkeyPatch, cluster: FakeCluster, tmp_path: Path) -> list[str]:
    deleted: list[str] = []
    cluster.dir = SimpleNamespace(root=tmp_path)  # type: ignore[attr-defined]
    cluster.nodes = LocalNodes(cluster.dir)  # type: ignore[attr-defined]  (its rules: netfilter's, patched here)
    monkeypatch.setattr(netfilter, "delete_chain", lambda root, chain: deleted.append(chain) or True)
    return deleted


NET_FAULT = {
    "chain": "fault_1",
    "fault": "partition {0} | {1000,1,2}",
    "kind": "isolate",
    "nodes": [0],
    "sides": [["0"], ["1000", "1", "2"]],
    "one_way": False,
    "loss": None,
}


def test_a_network_fault_and_its_heal_by_hand_are_one_window_naming_the_sides(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, cluster = tmp_path / journal.JOURNAL_FILE, FakeCluster()
    deleted = _deleted_chains(monkeypatch, cluster, tmp_path)
    engine = _engine(tmp_path, cluster, path)
    _net(path, journal.NET_FAULT, 1, **NET_FAULT)
    _net(path, journal.NET_HEAL, 3, removed=["fault_1: partition {0} | {1000,1,2}"], chains=["fault_1"])
    run_scenario(engine)
    (start,), (stop,) = _ops(engine, "fault-start"), _ops(engine, "fault-stop")
    assert (start["fault"], start["target"], start["nodes"]) == ("isolate", "network", [0])
    assert start["role"] == "operator (cli): partition {0} | {1000,1,2}" and start["sides"] == [
        ["0"],
        ["1000", "1", "2"],
    ]
    assert (
        start["label"] == "{0} | {1000,1,2}"
        and start["family"] == "network"
        and start["details"] == {"chain": "fault_1"}
    )
    assert stop["fault_id"] == start["fault_id"] and stop["time_ns"] == T + 3_100_000_000
    assert deleted == [], "healed by hand: the run's heal has nothing to delete"


def test_a_network_fault_left_in_force_by_hand_is_deleted_by_the_heal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, cluster = tmp_path / journal.JOURNAL_FILE, FakeCluster()
    deleted = _deleted_chains(monkeypatch, cluster, tmp_path)
    engine = _engine(tmp_path, cluster, path)
    _net(path, journal.NET_FAULT, 1, **NET_FAULT)
    run_scenario(engine)
    assert deleted == ["fault_1"]
    (stop,) = _ops(engine, "fault-stop")
    assert stop["ok"] and "by" not in stop
