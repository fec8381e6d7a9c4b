"""An app instance's restart policy (``restart`` in [[apps]]): an instance that exits by itself is started again as
the policy says, as a new process NAME-INDEX.N, never more than MAX_RESTARTS times. Small fakes stand for the run's
supervisor and context."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from failsafe.history.ops import Op
from failsafe.scenarios.base import ScenarioError
from failsafe.scenarios.kinds.app.workload import MAX_RESTARTS, AppWorkload
from failsafe.scenarios.registry import parse_scenario


class FakeChild:
    def __init__(self) -> None:
        self.code: int | None = None

    def exit_code(self) -> int | None:
        return self.code

    def tail(self) -> str:
        return "boom"


class FakeSupervisor:
    def __init__(self) -> None:
        self.spawned: list[tuple[str, FakeChild]] = []

    def spawn(self, command: list[str], name: str, log_path: Path, env: dict) -> FakeChild:
        child = FakeChild()
        self.spawned.append((name, child))
        return child


def _workload(tmp_path: Path, restart: str | None) -> tuple[AppWorkload, FakeSupervisor, list[dict], list[str]]:
    app = {"name": "svc", "command": ["{python}", "svc.py"], "input": ["in"], "output": ["out"], "group": "g"}
    scenario = parse_scenario(
        {
            "name": "restart-policy",
            "kind": "app",
            "topics": [{"name": t, "partitions": 1, "replication_factor": 1} for t in ("in", "out")],
            "producers": [{"name": "input", "topic": "in"}],
            "apps": [{**app, **({"restart": restart} if restart else {})}],
        }
    )
    ops: list[dict] = []
    events: list[str] = []
    supervisor = FakeSupervisor()
    ctx = SimpleNamespace(
        run_path=tmp_path,
        logs_dir=tmp_path,
        bootstrap_servers="127.0.0.1:9",
        supervisor=supervisor,
        recorder=SimpleNamespace(record=ops.append),
        event=events.append,
    )
    workload = AppWorkload(scenario)
    workload._ctx = ctx  # what setup() keeps
    workload._start(scenario.apps[0], 0, "svc-0")
    return workload, supervisor, ops, events


def _exit(supervisor: FakeSupervisor, code: int, workload: AppWorkload) -> None:
    supervisor.spawned[-1][1].code = code
    workload.tick()


def test_on_failure_starts_a_failed_instance_again_but_not_one_that_exited_cleanly(tmp_path: Path) -> None:
    workload, supervisor, ops, _ = _workload(tmp_path, "on-failure")
    _exit(supervisor, 1, workload)
    assert [name for name, _ in supervisor.spawned] == ["svc-0", "svc-0.1"]
    exits = [o for o in ops if o["f"] == Op.APP_EXIT]
    assert exits[0]["process"] == "svc-0" and exits[0]["ok"] is False and "boom" in exits[0]["error"]
    _exit(supervisor, 0, workload)
    assert [name for name, _ in supervisor.spawned] == ["svc-0", "svc-0.1"]


def test_never_is_the_default_and_always_restarts_a_clean_exit_too(tmp_path: Path) -> None:
    workload, supervisor, _, _ = _workload(tmp_path, None)
    _exit(supervisor, 1, workload)
    assert len(supervisor.spawned) == 1
    workload, supervisor, _, _ = _workload(tmp_path, "always")
    _exit(supervisor, 0, workload)
    assert [name for name, _ in supervisor.spawned] == ["svc-0", "svc-0.1"]


def test_an_instance_that_keeps_failing_is_started_again_at_most_max_restarts_times(tmp_path: Path) -> None:
    workload, supervisor, _, events = _workload(tmp_path, "always")
    for _ in range(MAX_RESTARTS + 3):
        _exit(supervisor, 2, workload)
    assert len(supervisor.spawned) == MAX_RESTARTS + 1
    assert events == [f"svc-0.{MAX_RESTARTS} exited {MAX_RESTARTS} times: not started again"]


def test_a_restart_policy_it_does_not_know_is_refused() -> None:
    app = {"name": "svc", "command": ["x"], "input": ["in"], "output": ["out"], "group": "g", "restart": "sometimes"}
    with pytest.raises(ScenarioError, match="restart"):
        parse_scenario(
            {
                "name": "restart-policy",
                "kind": "app",
                "topics": [{"name": t, "partitions": 1, "replication_factor": 1} for t in ("in", "out")],
                "producers": [{"name": "input", "topic": "in"}],
                "apps": [app],
            }
        )
