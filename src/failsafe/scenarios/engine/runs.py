"""One run of a parsed scenario on a ready cluster, judged and reported: what 'failsafe run' and campaigns share."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from failsafe.checkers.common import Verdict
from failsafe.cluster.site import RunSite
from failsafe.scenarios.base import Scenario
from failsafe.scenarios.engine.core import Engine, RunSettings, run_scenario
from failsafe.scenarios.kinds import kind_of
from failsafe.scenarios.store.rundir import RunDir


@dataclass(frozen=True)
class Outcome:
    """One finished run: where it is, what it found, how long each phase took (and checking and the report)."""

    name: str
    run_dir: RunDir
    results: dict
    wall_s: float
    phase_seconds: dict[str, float]
    history: Any = None

    @property
    def verdict(self) -> Verdict:
        return Verdict.of_run(self.results)


def run_and_judge(
    scenario: Scenario,
    cluster: RunSite,
    run_dir: RunDir,
    *,
    kafka_version: str,
    facts: Mapping[str, Any],
    clusters: Mapping[str, str],
    status: Callable[[str], None],
    event: Callable[[str], None],
) -> Outcome:
    """Run ``scenario`` into ``run_dir``, then check it and write its report; timings.json has every phase's seconds."""
    kind = kind_of(scenario)
    started = time.monotonic()
    engine = Engine(
        scenario,
        kind.workload(scenario),
        run_dir,
        cluster,
        RunSettings(kafka_version, facts, status, event, clusters=clusters, actions=kind.actions),
    )
    seconds = engine.phase_seconds
    try:
        run_scenario(engine)
    finally:
        write_timings(run_dir, seconds)
    status(f"{scenario.name} · checking")
    mark = time.monotonic()
    results, history = kind.judge(run_dir, scenario)
    seconds["check"] = time.monotonic() - mark
    mark = time.monotonic()
    kind.report(run_dir, results, history)
    seconds["report"] = time.monotonic() - mark
    write_timings(run_dir, seconds)
    return Outcome(scenario.name, run_dir, results, time.monotonic() - started, dict(seconds), history)


def write_timings(run_dir: RunDir, phase_seconds: dict[str, float]) -> None:
    """timings.json: wall seconds per phase of the engine (``close``, ``check``, ``report``), for "where the time
    goes"."""
    (Path(run_dir.path) / "timings.json").write_text(
        json.dumps({k: round(v, 3) for k, v in phase_seconds.items()}, indent=2) + "\n"
    )
