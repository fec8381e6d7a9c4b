"""The pipeline run checker on hand-written histories: the verdict comes from the ops, not from a side file."""

from __future__ import annotations

import pytest

from failsafe.checkers.pipeline import judgeable as pipeline_run
from failsafe.history.load import history_from_ops

S = 1_000_000_000


def op(t_s: float, process: str, f: str, **fields) -> dict:
    return {"time_ns": int(t_s * S), "process": process, "type": "info", "f": f, **fields}


def history(*extra: dict, simulator_exit: int | None = 0, drained: bool = True):
    ops = [
        op(0, "runner", "phase", phase="setup"),
        op(1, "pipeline", "pipeline-start", start=1),
        op(5, "runner", "phase", phase="chaos"),
        *extra,
        op(30, "runner", "phase", phase="drain"),
        op(40, "pipeline", "drained", ok=drained, drain_s=10.0, log_end={"0": 5}),
        op(41, "pipeline", "pipeline-stop", exit_code=0),
    ]
    if simulator_exit is not None:
        ops.append(op(29, "simulator", "simulator-exit", exit_code=simulator_exit))
    return history_from_ops(ops)


def test_a_run_whose_pipeline_never_stopped_by_itself_is_valid() -> None:
    r = pipeline_run.check(history())
    assert (
        r["valid"] is True
        and r["starts"] == 1
        and r["unexpected_exits"] == []
        and r["drained"]
        and r["drain_s"] == 10.0
    )
    assert r["simulator_exit"] == 0 and r["reasons"] == []


def test_a_pipeline_that_exited_by_itself_is_invalid_and_says_when_and_why() -> None:
    r = pipeline_run.check(
        history(op(12, "pipeline", "pipeline-exit", exit_code=1, error="Some data may have been lost"))
    )
    assert r["valid"] is False and r["counts"]["unexpected-exits"] == 1
    assert r["unexpected_exits"] == [{"exit_code": 1, "phase": "chaos", "log": "Some data may have been lost"}]


def test_a_killed_and_restarted_driver_is_planned_not_a_failure() -> None:
    kill = [
        op(
            10,
            "nemesis",
            "fault-start",
            fault_id=1,
            fault="kill-driver",
            target="pipeline",
            nodes=["pipeline"],
            role="spark driver",
        ),
        op(15, "pipeline", "pipeline-start", start=2),
        op(15, "nemesis", "fault-stop", fault_id=1, fault="kill-driver", ok=True, attempt=1),
    ]
    r = pipeline_run.check(history(*kill))
    assert r["valid"] is True and r["starts"] == 2 and r["planned_kills"] == 1


@pytest.mark.parametrize(
    ("kwargs", "reason"),
    [
        ({"simulator_exit": 1}, "the simulator exited with 1"),
        ({"simulator_exit": None}, "records no simulator exit"),
        ({"drained": False}, "did not read up to the log end"),
    ],
)
def test_a_run_that_cannot_be_judged_is_unknown_with_its_reason(kwargs: dict, reason: str) -> None:
    r = pipeline_run.check(history(**kwargs))
    assert r["valid"] == "unknown" and any(reason in why for why in r["reasons"])


def test_an_exit_outweighs_an_undecidable_run() -> None:
    r = pipeline_run.check(history(op(12, "pipeline", "pipeline-exit", exit_code=1, error=None), drained=False))
    assert r["valid"] is False
