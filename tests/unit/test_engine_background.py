"""An action's work beside the schedule (ActionContext.background), on the engine with the fakes of test_engine.py: a
fault due while the work waits starts on time, the chaos phase ends only once the work has, and a run that closes
first tells the work to stop."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from failsafe.history.ops import PhaseName
from failsafe.scenarios.base import ActionSpec, Phases
from failsafe.scenarios.engine.actions import ActionContext, ActionType
from failsafe.scenarios.engine.core import Engine, RunSettings, run_scenario
from failsafe.scenarios.store.rundir import RunDir
from tests.unit.test_engine import FakeCluster, FakeSampler, FakeScenario, FakeWorkload, _kill, _ops

QUICK = Phases(warmup_s=0.01, chaos_s=0.05, recover_s=0.01)


def _engine(tmp_path: Path, work, phases: Phases = QUICK) -> tuple[Engine, FakeCluster]:  # noqa: ANN001
    def move(spec: ActionSpec, a: ActionContext) -> None:
        a.background.spawn("move", work)

    cluster = FakeCluster()
    # The move starts at once; the kill is due 0.02 s later, while the move's work still waits.
    scenario = FakeScenario((_kill(at_s=0.02, duration_s=0.01),), phases=phases, actions=(ActionSpec("move"),))
    engine = Engine(
        scenario,
        FakeWorkload(),
        RunDir.create(tmp_path, scenario),
        cluster,
        RunSettings(
            "4.3.1",
            {},
            lambda _: None,
            lambda _: None,
            actions={"move": ActionType("move", "", move)},
            sampler=FakeSampler(),
        ),
    )
    return engine, cluster


def test_a_fault_due_during_the_work_starts_and_the_chaos_phase_waits_for_the_work(tmp_path: Path) -> None:
    killed, finished = threading.Event(), threading.Event()
    seen: list[int] = []
    done_ns: list[int] = []

    def work(stopping: threading.Event) -> None:
        # Done only once the kill has come: it could not, if the work held the schedule's thread.
        assert killed.wait(10), "the kill due during the work never started"
        stopping.wait(0.3)  # the work outlasts the chaos phase's 0.05 s
        done_ns.append(time.time_ns())
        finished.set()

    engine, cluster = _engine(tmp_path, work)
    signal_node = cluster.signal_node

    def recording(node, action: str, timeout_s: float) -> None:  # noqa: ANN001
        seen.append(node.node_id)
        signal_node(node, action, timeout_s)
        killed.set()

    cluster.signal_node = recording  # type: ignore[method-assign]
    run_scenario(engine)
    assert finished.is_set() and seen == [0]
    chaos_end = next(p for p in _ops(engine, "phase-end") if p["phase"] == PhaseName.CHAOS)
    kill_start = _ops(engine, "fault-start")[0]
    assert kill_start["time_ns"] < done_ns[0] <= chaos_end["time_ns"]


def test_a_closing_run_tells_the_work_to_stop(tmp_path: Path) -> None:
    told = threading.Event()

    def work(stopping: threading.Event) -> None:
        told.set() if stopping.wait(10) else None

    engine, _ = _engine(tmp_path, work)
    engine.background.spawn("waiting", work)
    engine.close()
    assert told.is_set() and engine.background.running() == []
