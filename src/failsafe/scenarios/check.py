"""Checking a run: load its history, run the checkers with the scenario's options, evaluate its expectations."""

from __future__ import annotations

import json
from pathlib import Path

from failsafe.checkers import DR_CHECKERS, LAB_CHECKERS, combine_validity, run_checkers
from failsafe.checkers.explain import explain
from failsafe.checkers.measurements import measure
from failsafe.errors import UserError
from failsafe.history.load import load_history
from failsafe.history.model import History, HistoryFormatError
from failsafe.scenarios.client_logs import cite_results
from failsafe.scenarios.dr_schema import DR_KIND, parse_dr_scenario
from failsafe.scenarios.expectations import evaluate_all
from failsafe.scenarios.known import classify
from failsafe.scenarios.rundir import RunDir
from failsafe.scenarios.schema import Scenario, ScenarioError, parse_scenario


def scenario_of(run_dir: RunDir) -> Scenario | None:
    data = run_dir.scenario_data()
    if data is None:
        return None
    try:
        return parse_dr_scenario(data) if data.get("kind") == DR_KIND else parse_scenario(data)
    except ScenarioError as e:
        raise UserError(f"{run_dir.path}/scenario.json: {e}") from e


def check_history(history: History, scenario: Scenario | None) -> dict:
    options = scenario.checkers if scenario is not None else {}
    # A DR run's history spans two clusters: only the dr checker reads it whole (docs/checkers.md).
    checkers = run_checkers(history, options, DR_CHECKERS if scenario is not None and scenario.kind == DR_KIND else LAB_CHECKERS)
    results: dict = {"format": 1, "scenario": scenario.name if scenario else None, "checkers": checkers}
    try:
        results["measurements"] = measure(history)
    except Exception as e:  # a measurement that crashes leaves the expectations on it unknown, never a crash
        results["measurements"] = {"error": f"{type(e).__name__}: {e}"}
    # Expectation paths may start at a checker's name ("delivery.counts.lost") or at "measurements".
    view = {**checkers, **results}
    results["expectations"] = evaluate_all(scenario.expect, view) if scenario else []
    results["valid"] = combine_validity([c.get("valid", "unknown") for c in checkers.values()] +
                                        [e["valid"] for e in results["expectations"]])
    try:
        results["explanations"] = explain(history, results)
    except Exception as e:  # noqa: BLE001 - explanations describe a verdict, they never decide or crash one
        results["explanations"] = [{"error": f"{type(e).__name__}: {e}", "sentence": f"the anomalies could not be explained: {type(e).__name__}: {e}"}]
    return classify(results, scenario)


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
    return results if isinstance(results, dict) and "valid" in results else None


def check_run(run_dir: RunDir) -> tuple[dict, History]:
    history = load_run_history(run_dir)
    results = cite_results(check_history(history, scenario_of(run_dir)), run_dir.path)
    run_dir.results_path.write_text(json.dumps(results, indent=2, default=str) + "\n")
    return results, history


def lab_run(run_dir: Path, covered: str) -> tuple[RunDir, dict, History]:
    """A stored lab run with its results (checked now when results.json is missing or unreadable) and history.

    ``covered`` says what only lab runs have, for the error a pipeline run gets (e.g. "HTML reports").
    """
    rd = RunDir.open(run_dir)
    if rd.kind != "lab":
        raise UserError(f"{run_dir} is a {rd.kind} scenario's run: 'failsafe check {run_dir}' shows its results ({covered} cover lab scenarios)")
    results = stored_results(rd)
    if results is None:
        results, history = check_run(rd)
    else:
        history = load_run_history(rd)
    return rd, results, history
