"""The contract every scenario kind fulfils (``ScenarioKind``), and the registry the kinds' packages register with."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from pathlib import Path
from typing import Any

from rich.console import Console

from failsafe.checkers import with_always
from failsafe.registry import Registry
from failsafe.scenarios.base import Scenario, ScenarioError
from failsafe.scenarios.engine.actions import ActionType
from failsafe.scenarios.engine.plugin import Workload
from failsafe.scenarios.store.rundir import RunDir


class Placement(StrEnum):
    """Where a kind's scenarios run."""

    CLUSTER = "cluster"  # one cluster at --dir
    DR_PAIR = "dr-pair"  # a DR pair at --dir: DIR/primary and DIR/backup (failsafe up --dr)


def _recognises_nothing(path: Path) -> bool:
    return False


@dataclass(frozen=True)
class ScenarioKind:
    name: str
    summary: str
    parser: Callable[[dict, ScenarioKind], Scenario]  # the whole table, "kind" removed -> a validated scenario
    workload: Callable[[Any], Workload]
    judge: Callable[
        [RunDir, Any], tuple[dict, Any]
    ]  # a stored run and its scenario (None: not recorded) -> results (written), history
    show: Callable[[Console, RunDir, dict, Any], None]  # the terminal summary of judged results
    report: Callable[[RunDir, dict, Any], Path]  # report.html of judged results; returns its path
    offers: frozenset[
        str
    ]  # Need values (or a plug-in's own words) its faults may act on; a fault needing more is refused
    # The checkers its runs are judged by, after checkers.ALWAYS (added here); known anomalies and [checkers.X] may name
    # only these.
    checkers: tuple[str, ...]
    actions: Mapping[str, ActionType] = field(default_factory=dict)
    placement: Placement = Placement.CLUSTER
    # A run option and the scenario field it sets (failsafe run --master URL sets pipeline.master).
    run_options: Mapping[str, str] = field(default_factory=dict)
    # The kind of a scenario file that names none.
    default: bool = False
    # A stored run made before runs recorded their kind: is it one of this kind's?
    recognises: Callable[[Path], bool] = _recognises_nothing

    def __post_init__(self) -> None:
        # The checkers every run is judged by come first, whatever the kind lists: a kind adds checkers, never removes
        # these.
        object.__setattr__(self, "checkers", with_always(self.checkers))

    def parse(self, data: dict) -> Scenario:
        """The scenario from its table (``kind`` removed), validated; its raw data records the kind."""
        scenario = self.parser(data, self)
        _refuse_ambiguous_workers(scenario)
        return replace(scenario, kind=self.name, raw={**scenario.raw, "kind": self.name})


def _refuse_ambiguous_workers(scenario: Scenario) -> None:
    """A worker whose name another worker's restarts would take (``fast.1`` beside ``fast``, restarted as ``fast.1``):
    the history could not tell them apart, nor whom a may_lose belongs to."""
    clients = scenario.declared_clients()
    for client in clients:
        if not client["matches"]:
            continue
        pattern = re.compile(client["matches"])
        other = next(
            (c["process"] for c in clients if c["process"] != client["process"] and pattern.fullmatch(c["process"])),
            None,
        )
        if other is not None:
            raise ScenarioError(
                f"scenario {scenario.name}: worker {other!r} has the name a restart of {client['process']!r} "
                f"would take: rename it"
            )


KINDS: Registry[ScenarioKind] = Registry("scenario kind", ScenarioError, lambda k: k.summary)


def register(kind: ScenarioKind) -> ScenarioKind:
    if kind.default and any(k.default and k is not kind for k in KINDS.values()):
        raise ValueError(f"{kind.name}: a default kind is already registered")
    return KINDS.register(kind.name, kind)


unregister = KINDS.unregister
kind_named = KINDS.named


def default_kind() -> ScenarioKind:
    return next(k for k in KINDS.values() if k.default)


def kind_of(scenario: Scenario) -> ScenarioKind:
    return kind_named(scenario.kind)


def parse_table(data: object, origin: str) -> Scenario:
    """A scenario of any kind from its table: ``kind`` names the kind (absent: the default kind)."""
    if not isinstance(data, dict):
        raise ScenarioError(f"{origin}: a scenario is a table, not {type(data).__name__}")
    table = dict(data)
    name = table.pop("kind", None)
    if name is None:
        return default_kind().parse(table)
    if not isinstance(name, str) or name not in KINDS:
        raise ScenarioError(f"{origin}: kind {name!r} is not one of {', '.join(KINDS)}")
    return KINDS[name].parse(table)


def kind_of_run(run_dir: RunDir) -> ScenarioKind:
    """The kind a stored run was of: as its scenario.json records it, else the kind that recognises it, else the
    default."""
    data = run_dir.scenario_data() or {}
    if "kind" in data:
        name = str(data["kind"])
        if name not in KINDS:
            raise ScenarioError(
                f"{run_dir.path} is a run of kind {name!r}, which this failsafe does not know: check it with the "
                "failsafe that made it"
            )
        return KINDS[name]
    return next((k for k in KINDS.values() if k.recognises(run_dir.path)), default_kind())
