"""The lab kind: verifying producers and consumers on one cluster, judged by the history's checkers."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console

from failsafe.faults import Need
from failsafe.scenarios.actions import COMMON_ACTIONS
from failsafe.scenarios.kinds.lab.schema import parse_lab
from failsafe.scenarios.kinds.registry import ScenarioKind, register
from failsafe.scenarios.rundir import RunDir

CHECKERS = ("delivery", "order", "semantics", "availability", "rebalance")


def _workload(scenario: Any) -> Any:
    from failsafe.scenarios.kinds.lab.workload import LabWorkload

    return LabWorkload(scenario)


def history_judge(checkers: tuple[str, ...]) -> Callable[[RunDir, Any], tuple[dict, Any]]:
    """The judge of a kind whose runs are its history judged by ``checkers`` (the lab and the kinds built on it)."""

    def judge(run_dir: RunDir, scenario: Any) -> tuple[dict, Any]:
        from failsafe.scenarios.check import judge_history_run

        return judge_history_run(run_dir, scenario, checkers)

    return judge


def show_summary(console: Console, run_dir: RunDir, results: dict, history: Any) -> None:
    from failsafe.reports.terminal import render_summary

    render_summary(console, results, history, run_dir=run_dir.path)


def write_lab_report(run_dir: RunDir, results: dict, history: Any) -> Path:
    from failsafe.reports.html import write_report

    return write_report(run_dir.path, results, history, run_dir.scenario_data(), run_dir.manifest())


KIND = register(ScenarioKind(
    name="lab",
    summary="verifying producers and consumers on one cluster, the seeds' experiments",
    parser=parse_lab, workload=_workload, judge=history_judge(CHECKERS), show=show_summary, report=write_lab_report,
    offers=frozenset({Need.NODES, Need.QUORUM, Need.REGION, Need.NETWORK, Need.CONSUMERS}),
    checkers=CHECKERS, actions=COMMON_ACTIONS, default=True,
))
