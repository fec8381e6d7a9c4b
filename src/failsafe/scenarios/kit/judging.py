"""A kind whose runs are judged from their history: its judge, its terminal summary and its report (the lab, txn and
share kinds take these as they are)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console

from failsafe.scenarios.store.rundir import RunDir


def history_judge(checkers: tuple[str, ...]) -> Callable[[RunDir, Any], tuple[dict, Any]]:
    """The judge of a kind whose runs are its history judged by ``checkers``."""

    def judge(run_dir: RunDir, scenario: Any) -> tuple[dict, Any]:
        from failsafe.scenarios.store.check import judge_history_run

        return judge_history_run(run_dir, scenario, checkers)

    return judge


def show_summary(console: Console, run_dir: RunDir, results: dict, history: Any) -> None:
    from failsafe.reports.terminal import render_summary

    render_summary(console, results, history, run_dir=run_dir.path)


def write_history_report(run_dir: RunDir, results: dict, history: Any) -> Path:
    from failsafe.reports.html import write_report

    return write_report(run_dir.path, results, history, run_dir.scenario_data(), run_dir.manifest())
