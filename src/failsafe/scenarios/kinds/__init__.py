"""Scenario kinds: for each, the workload plug-in the engine drives, and how its runs are checked and shown.

    lab       verifying clients (failsafe's or Kafka's verifiable ones); the checkers of failsafe.checkers
    dr        the lab's clients across a DR pair, MirrorMaker 2 between; checkers/dr.py
    pipeline  the sales simulator and the Spark pipeline; the sink against the ledger

A new kind (ZooKeeper nodes, network links, a second cluster) is one more entry here and a
workload module beside these, never another runner.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from rich.console import Console

from failsafe.scenarios.plugin import Workload
from failsafe.scenarios.rundir import RunDir


class RunKind(StrEnum):
    LAB = "lab"
    PIPELINE = "pipeline"
    DR = "dr"


@dataclass(frozen=True)
class ScenarioKind:
    name: str
    workload: Callable[[Any], Workload]
    check: Callable[[RunDir], tuple[dict, Any]]  # judge a stored run: results.json (written too), and the loaded history if any
    show: Callable[[Console, RunDir, dict, Any], None]  # the terminal summary, and report.html where the kind has one


def _lab_workload(scenario: Any) -> Workload:
    from failsafe.scenarios.kinds.lab import LabWorkload

    return LabWorkload(scenario)


def _pipeline_workload(scenario: Any) -> Workload:
    from failsafe.scenarios.kinds.pipeline import PipelineWorkload

    return PipelineWorkload(scenario)


def _dr_workload(scenario: Any) -> Workload:
    from failsafe.scenarios.kinds.dr import DrWorkload

    return DrWorkload(scenario)


def _dr_show(console: Console, run_dir: RunDir, results: dict, history: Any) -> None:
    from failsafe.reports.dr_report import render_dr_summary, write_dr_report

    write_dr_report(run_dir.path, results, history)
    render_dr_summary(console, results)
    console.print(f"report: {run_dir.report_path}")


def _lab_check(run_dir: RunDir) -> tuple[dict, Any]:
    from failsafe.scenarios.check import check_run

    return check_run(run_dir)


def _lab_show(console: Console, run_dir: RunDir, results: dict, history: Any) -> None:
    from failsafe.reports.html import write_report
    from failsafe.reports.terminal import render_summary

    write_report(run_dir.path, results, history, run_dir.scenario_data(), run_dir.manifest())
    render_summary(console, results, history)
    console.print(f"report: {run_dir.report_path}")


def _pipeline_check(run_dir: RunDir) -> tuple[dict, Any]:
    from failsafe.scenarios.pipeline_check import check_pipeline_run

    return check_pipeline_run(run_dir), None


def _pipeline_show(console: Console, run_dir: RunDir, results: dict, history: Any) -> None:
    from failsafe.scenarios.pipeline_check import render_pipeline_results, write_pipeline_report

    write_pipeline_report(run_dir, results)
    render_pipeline_results(console, results)
    console.print(f"report: {run_dir.report_path}")


KINDS: dict[str, ScenarioKind] = {
    RunKind.LAB: ScenarioKind(RunKind.LAB, _lab_workload, _lab_check, _lab_show),
    RunKind.PIPELINE: ScenarioKind(RunKind.PIPELINE, _pipeline_workload, _pipeline_check, _pipeline_show),
    RunKind.DR: ScenarioKind(RunKind.DR, _dr_workload, _lab_check, _dr_show),
}
