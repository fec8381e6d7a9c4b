"""The DR kind: the lab's clients on a DR pair, MirrorMaker 2 between, moved by the failover and failback actions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console

from failsafe.faults import Need
from failsafe.scenarios.base import ActionSpec
from failsafe.scenarios.engine.actions import COMMON_ACTIONS, ActionContext, ActionType
from failsafe.scenarios.kinds.dr.schema import parse_dr
from failsafe.scenarios.kinds.registry import Placement, ScenarioKind, register
from failsafe.scenarios.store.rundir import RunDir

# A DR run's history spans two clusters: only the dr checker reads it whole (docs/checkers.md).
CHECKERS = ("dr",)


def _workload(scenario: Any) -> Any:
    from failsafe.scenarios.kinds.dr.workload import DrWorkload

    return DrWorkload(scenario)


def _judge(run_dir: RunDir, scenario: Any) -> tuple[dict, Any]:
    from failsafe.scenarios.store.check import judge_history_run

    return judge_history_run(run_dir, scenario, CHECKERS)


def _show(console: Console, run_dir: RunDir, results: dict, history: Any) -> None:
    from failsafe.reports.dr_report import render_dr_summary

    render_dr_summary(console, results)


def _report(run_dir: RunDir, results: dict, history: Any) -> Path:
    from failsafe.reports.dr_report import write_dr_report

    return write_dr_report(run_dir.path, results, history)


def _move(direction: str) -> ActionType:
    def run(spec: ActionSpec, a: ActionContext) -> None:
        a.workload.move(direction, a.run)

    what = "to the backup, the primary being lost" if direction == "failover" else "back to the primary, planned"
    return ActionType(direction, f"the clients move {what}", run)


KIND = register(
    ScenarioKind(
        name="dr",
        summary="the lab's clients on a DR pair (failsafe up --dr), MirrorMaker 2 between; RPO and RTO",
        parser=parse_dr,
        workload=_workload,
        judge=_judge,
        show=_show,
        report=_report,
        # Not CONSUMERS: the DR workload moves its consumers between the clusters itself; a fault does not kill them.
        offers=frozenset({Need.NODES, Need.QUORUM, Need.REGION, Need.NETWORK}),
        checkers=CHECKERS,
        actions={**COMMON_ACTIONS, "failover": _move("failover"), "failback": _move("failback")},
        placement=Placement.DR_PAIR,
    )
)
