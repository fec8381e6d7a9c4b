"""Stored runs: the scenario a run ran, read as today's failsafe reads it, and a run with its judged results."""

from __future__ import annotations

import copy
from pathlib import Path

from failsafe.checkers.evidence import DURABLE_ACKS
from failsafe.history.model import History
from failsafe.scenarios.base import Scenario, ScenarioError
from failsafe.scenarios.kinds import kind_of_run, parse_table
from failsafe.scenarios.store.check import load_run_history, stored_results
from failsafe.scenarios.store.rundir import RunDir

# Before loss was allowed by writer, a scenario allowed it for a whole checker: [checkers.delivery] allow_loss = true.
_LEGACY_LOSS_CHECKERS = ("delivery", "semantics")
# Options checkers took before no option could excuse a violation (what they said is read from the history now, or is a
# [[known]] entry): a stored run's are dropped, which can only make its judgement stricter.
_RETIRED_OPTIONS = {
    "delivery": ("allow_duplicates",),
    "semantics": ("groups",),
    "order": ("idempotent_producers",),
    "transactions": ("allow",),
    "share": (
        "groups",
        "lossy_writers",
        "lock_duration_ms",
        "lock_slack_ms",
        "delivery_count_limit",
        "from_first_delivered",
    ),
    "dr": ("lossy_writers",),
}


def _retire(data: dict) -> dict:
    checkers = data.get("checkers")
    if not isinstance(checkers, dict) or not any(
        isinstance(checkers.get(c), dict) and set(checkers[c]) & set(names) for c, names in _RETIRED_OPTIONS.items()
    ):
        return data
    data = copy.deepcopy(data)
    for name, retired in _RETIRED_OPTIONS.items():
        options = data["checkers"].get(name)
        if isinstance(options, dict):
            for option in retired:
                options.pop(option, None)
            if not options:
                del data["checkers"][name]
    return data


def _upgrade(data: dict) -> dict:
    """A stored scenario as today's parser reads it: a checker-wide ``allow_loss`` becomes ``may_lose`` on the producers
    that promised no durability (acks 0 or 1), an acks=all producer's loss was never to be allowed, and is not; and the
    options checkers no longer take are dropped."""
    data = _retire(data)
    checkers = data.get("checkers")
    if not isinstance(checkers, dict) or not any(
        isinstance(checkers.get(c), dict) and "allow_loss" in checkers[c] for c in _LEGACY_LOSS_CHECKERS
    ):
        return data
    data = copy.deepcopy(data)
    allowed = False
    for name in _LEGACY_LOSS_CHECKERS:
        options = data["checkers"].get(name)
        if isinstance(options, dict) and "allow_loss" in options:
            allowed = bool(options.pop("allow_loss")) or allowed
            if not options:
                del data["checkers"][name]
    if allowed:
        for producer in data.get("producers") or []:
            if isinstance(producer, dict) and str(producer.get("acks", "all")) not in DURABLE_ACKS:
                producer["may_lose"] = True
    return data


def stored_scenario(run_dir: RunDir) -> Scenario | None:
    """The scenario a stored run ran (its scenario.json), parsed by its kind; None when the run has none. A run stored
    by an earlier failsafe is read as today's would write it (``_upgrade``)."""
    data = run_dir.scenario_data()
    if data is None:
        return None
    data = _upgrade(data)
    try:
        return parse_table(data, f"{run_dir.path}/scenario.json")
    except ScenarioError as e:
        raise ScenarioError(f"{run_dir.path}/scenario.json: {e}") from e


def checked_run(run_dir: Path) -> tuple[RunDir, dict, History, Scenario | None]:
    """A stored run with its results (judged now when results.json is missing or unreadable), history and scenario."""
    rd = RunDir.open(run_dir)
    results = stored_results(rd)
    if results is not None:
        # Judged already: the scenario is not needed to show or explain what was found.
        return rd, results, load_run_history(rd), None
    scenario = stored_scenario(rd)
    results, history = kind_of_run(rd).judge(rd, scenario)
    return rd, results, history, scenario
