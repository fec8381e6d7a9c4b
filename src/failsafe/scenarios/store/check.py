"""Judging a stored run whose verdict comes from its history: load it, run its kind's checkers with the scenario's
options, evaluate the expectations, explain the anomalies, classify known ones; write results.json."""

from __future__ import annotations

import json
from collections.abc import Sequence

from failsafe.checkers import combine_validity, run_checkers
from failsafe.checkers.common import UNKNOWN
from failsafe.checkers.explain.sentences import explain
from failsafe.checkers.measure.faults import measure
from failsafe.errors import UserError
from failsafe.history.load import load_history
from failsafe.history.model import History, HistoryFormatError
from failsafe.scenarios.base import Scenario
from failsafe.scenarios.expectations import evaluate_all
from failsafe.scenarios.known import classify
from failsafe.scenarios.observers.client_logs import cite_results
from failsafe.scenarios.store.rundir import RunDir


def check_history(history: History, scenario: Scenario | None, checkers: Sequence[str]) -> dict:
    """The results of ``history`` judged by the checkers every run gets (checkers.ALWAYS) and ``checkers``, with the
    scenario's options, expectations and known anomalies; a run that did not finish is UNKNOWN (``incomplete``)."""
    options = scenario.checker_options() if scenario is not None else {}
    results: dict = {
        "format": 1,
        "scenario": scenario.name if scenario else None,
        "checkers": run_checkers(history, options, checkers),
    }
    try:
        results["measurements"] = measure(history)
    except Exception as e:  # noqa: BLE001 - a measurement that crashes leaves the expectations on it unknown, never a crash
        results["measurements"] = {"error": f"{type(e).__name__}: {e}"}
    # Expectation paths may start at a checker's name ("delivery.counts.lost") or at "measurements".
    view = {**results["checkers"], **results}
    results["expectations"] = evaluate_all(scenario.expect, view) if scenario else []
    results["valid"] = combine_validity(
        [c.get("valid", "unknown") for c in results["checkers"].values()]
        + [e["valid"] for e in results["expectations"]]
    )
    hold_incomplete(results)
    try:
        results["explanations"] = explain(history, results)
    except Exception as e:  # noqa: BLE001 - explanations describe a verdict, they never decide or crash one
        results["explanations"] = [
            {
                "error": f"{type(e).__name__}: {e}",
                "sentence": f"the anomalies could not be explained: {type(e).__name__}: {e}",
            }
        ]
    return classify(results, scenario, history)


def hold_incomplete(results: dict) -> None:
    """A run that did not finish (checkers/completeness.py) is UNKNOWN, whatever its checkers found: ``incomplete`` says
    why."""
    completeness = results["checkers"].get("completeness") or {}
    if completeness.get("valid") is not True:
        results["incomplete"] = (
            completeness.get("reason") or completeness.get("error") or "the run's completeness is unknown"
        )
        results["valid"] = UNKNOWN


def load_run_history(run_dir: RunDir) -> History:
    try:
        return load_history(run_dir.history_path, columnar_copy=True)
    except HistoryFormatError as e:
        raise UserError(f"{run_dir.history_path}: {e}: the history is damaged; re-run the scenario") from e


def stored_results(run_dir: RunDir) -> dict | None:
    """results.json as the last check wrote it, or None when it is missing or unreadable."""
    try:
        results = json.loads(run_dir.results_path.read_text())
    except (OSError, ValueError):
        return None
    # Anything else than what a check writes (a results.json edited or cut short) is judged again from the history.
    shaped = (
        isinstance(results, dict)
        and "valid" in results
        and isinstance(results.get("checkers", {}), dict)
        and isinstance(results.get("explanations", []), list)
        and isinstance(results.get("expectations", []), list)
    )
    return results if shaped else None


def write_results(run_dir: RunDir, results: dict) -> None:
    try:
        run_dir.results_path.write_text(json.dumps(results, indent=2, default=str) + "\n")
    except OSError as e:
        raise UserError(f"cannot write {run_dir.results_path}: {e.strerror or e}") from e


def judge_history_run(run_dir: RunDir, scenario: Scenario | None, checkers: Sequence[str]) -> tuple[dict, History]:
    """A stored run judged from its history by ``checkers``; results.json written."""
    history = load_run_history(run_dir)
    results = cite_results(check_history(history, scenario, checkers), run_dir.path)
    write_results(run_dir, results)
    return results, history
