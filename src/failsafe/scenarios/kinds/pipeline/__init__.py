"""The pipeline kind: the sales simulator and the Spark pipeline, judged by the run's history and the sink against the
ledger."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console

from failsafe.faults import Need
from failsafe.scenarios.kinds.pipeline.schema import parse_pipeline
from failsafe.scenarios.kinds.registry import ScenarioKind, register
from failsafe.scenarios.store.rundir import RunDir

# Runs made before the kind was recorded in scenario.json wrote this file.
_LEGACY_RESULTS = "pipeline-results.json"


def _workload(scenario: Any) -> Any:
    from failsafe.scenarios.kinds.pipeline.workload import PipelineWorkload

    return PipelineWorkload(scenario)


def _judge(run_dir: RunDir, scenario: Any) -> tuple[dict, Any]:
    from failsafe.scenarios.kinds.pipeline.check import check_pipeline_run

    return check_pipeline_run(run_dir, scenario)


def _show(console: Console, run_dir: RunDir, results: dict, history: Any) -> None:
    from failsafe.scenarios.kinds.pipeline.check import render_pipeline_results

    render_pipeline_results(console, results)


def _report(run_dir: RunDir, results: dict, history: Any) -> Path:
    from failsafe.scenarios.kinds.pipeline.check import write_pipeline_report

    return write_pipeline_report(run_dir, results, history)


def _recognises(path: Path) -> bool:
    return (path / _LEGACY_RESULTS).is_file()


KIND = register(
    ScenarioKind(
        name="pipeline",
        summary="the sales simulator and the Spark pipeline, exactly-once while brokers and Spark die",
        parser=parse_pipeline,
        workload=_workload,
        judge=_judge,
        show=_show,
        report=_report,
        offers=frozenset({Need.NODES, Need.QUORUM, Need.NETWORK, Need.SPARK_DRIVER, Need.SPARK_WORKERS}),
        checkers=("pipeline", "sales", "enriched", "published"),
        run_options={"master": "pipeline.master"},
        recognises=_recognises,
    )
)
