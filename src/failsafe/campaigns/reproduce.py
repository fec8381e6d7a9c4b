"""``failsafe shrink``'s side of the cluster: a stored campaign run, its anomaly, and runs of smaller schedules.

The oracle of the shrinking search (shrink.py) is one real run: the run's workload (its schedule
file less its faults) under a candidate schedule, on the same cluster, judged by the same checkers;
it reproduces when the anomaly kind is among the violations that decided its verdict, or among the
anomalies it showed (one its scenario allows, named with ``--anomaly``: a loss of an acks=1 writer). Every
attempt is a run directory under RUN_DIR/shrink/, and the smallest schedule so far is written as
RUN_DIR/shrink/shrunk.toml after every accepted step, so an interrupted search keeps it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from failsafe.campaigns.record import run_record, violations
from failsafe.campaigns.runner import RUN_ERRORS, Ready
from failsafe.campaigns.schedule import SCHEDULE_FILE, Schedule, read_schedule, scenario_data, write_schedule
from failsafe.campaigns.shrink import ShrinkResult, Step, size_text
from failsafe.checkers import LOSS_VIOLATIONS
from failsafe.errors import UserError
from failsafe.scenarios.base import Scenario
from failsafe.scenarios.engine.core import require_whole
from failsafe.scenarios.engine.runs import run_and_judge
from failsafe.scenarios.registry import parse_scenario
from failsafe.scenarios.store.repeat import anomalies
from failsafe.scenarios.store.rundir import RunDir

SHRINK_DIR = "shrink"
SHRUNK_FILE = "shrunk.toml"
SHRINK_RESULT = "shrink.json"


@dataclass
class Failed:
    """A stored run to shrink: its workload, its schedule, the anomaly kind to keep."""

    run_dir: Path
    base: dict[str, Any]
    schedule: Schedule
    anomaly: str
    verdict: str = "INVALID"
    attempts: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def open(cls, run_dir: Path, anomaly: str | None) -> Failed:
        schedule_path = run_dir / SCHEDULE_FILE
        results_path = run_dir / "results.json"
        if not schedule_path.is_file():
            raise UserError(
                f"{run_dir} has no {SCHEDULE_FILE}: shrink takes a run directory of 'failsafe campaign' "
                f"(CAMPAIGN/NAME/TIME)"
            )
        if not results_path.is_file():
            raise UserError(f"{run_dir} has no results.json: check it first ('failsafe check {run_dir}')")
        try:
            results = json.loads(results_path.read_text())
        except (OSError, UnicodeDecodeError, ValueError) as e:
            raise UserError(
                f"{results_path} is not a results.json failsafe wrote ({e}): check the run again ('failsafe "
                f"check {run_dir}')"
            ) from e
        if not isinstance(results, dict) or not isinstance(results.get("checkers", {}), dict):
            raise UserError(
                f"{results_path} is not a results.json failsafe wrote (not an object of checkers): check the run again "
                f"('failsafe check {run_dir}')"
            )
        found = violations(results)
        # Any anomaly the run showed may be named: one its scenario allows (a loss of an acks=1 writer) decides no
        # verdict.
        shown = sorted(set(found) | set(anomalies(results)))
        if anomaly is not None and anomaly not in shown:
            raise UserError(f"--anomaly {anomaly}: the run did not show it; it showed {', '.join(shown) or 'none'}")
        if anomaly is None and not found:
            raise UserError(
                f"{run_dir} showed no anomaly that decided its verdict"
                + (
                    f"; name one it showed with --anomaly: {', '.join(shown)}"
                    if shown
                    else ": there is nothing to shrink"
                )
            )
        # A loss first: it is what a campaign is for.
        chosen = anomaly or next((a for a in found if a in LOSS_VIOLATIONS), found[0])
        base, schedule = read_schedule(schedule_path)
        return cls(run_dir, base, schedule, chosen, str(results.get("verdict") or "INVALID"))

    @property
    def name(self) -> str:
        return str(self.base.get("name", self.run_dir.parent.name))

    @property
    def directory(self) -> Path:
        return self.run_dir / SHRINK_DIR

    def scenario(self, schedule: Schedule, attempt: int) -> tuple[dict[str, Any], Scenario]:
        name = f"{self.name}-shrink-{attempt:03d}"
        data = scenario_data(
            self.base,
            schedule,
            name,
            f"Attempt {attempt} at shrinking {self.name} ({self.anomaly}): "
            + "; ".join(f.describe() for f in schedule.faults),
        )
        return data, parse_scenario(data, name)

    def attempt(self, ready: Ready) -> Any:
        """The oracle: one run of a candidate on the cluster; True when it showed the anomaly."""

        def run(schedule: Schedule) -> bool:
            number = len(self.attempts) + 1
            data, scenario = self.scenario(schedule, number)
            run_dir = RunDir.create(self.directory, scenario)
            write_schedule(run_dir.path / SCHEDULE_FILE, data, f"Attempt {number} at shrinking {self.run_dir}")
            try:
                outcome = run_and_judge(
                    scenario,
                    ready.cluster,
                    run_dir,
                    kafka_version=ready.cluster.spec.kafka_version,
                    facts=ready.facts,
                    clusters=ready.clusters,
                    status=ready.status,
                    event=ready.event,
                )
            except RUN_ERRORS as e:
                ready.event(f"attempt {number} could not be carried out (counted as not reproduced): {e}")
                self.attempts.append(
                    {
                        "attempt": number,
                        "dir": str(run_dir.path),
                        "size": schedule.size(),
                        "error": str(e),
                        "reproduced": False,
                    }
                )
                return False
            record = run_record(
                number,
                0,
                scenario.name,
                schedule,
                run_dir=str(run_dir.path),
                results=outcome.results,
                history=outcome.history,
                wall_s=outcome.wall_s,
                phase_seconds=outcome.phase_seconds,
            )
            hit = self.anomaly in record["violations"] or self.anomaly in record["anomalies"]
            self.attempts.append(
                {
                    "attempt": number,
                    "dir": str(run_dir.path),
                    "size": schedule.size(),
                    "verdict": record["verdict"],
                    "violations": record["violations"],
                    "reproduced": hit,
                    "wall_s": record["wall_s"],
                }
            )
            require_whole(ready.cluster, after=scenario.name)
            return hit

        return run

    def keep(self, step: Step) -> Path:
        """The smallest schedule so far, as a scenario file 'failsafe run' replays."""
        return self.write_shrunk(step.schedule, f"after {step.move} {step.detail}")

    def write_shrunk(self, schedule: Schedule, how: str) -> Path:
        data = scenario_data(
            self.base,
            schedule,
            f"{self.name}-shrunk",
            f"{self.name} shrunk ({self.anomaly}): {size_text(schedule)}; "
            + "; ".join(f.describe() for f in schedule.faults),
        )
        self.directory.mkdir(parents=True, exist_ok=True)
        return write_schedule(
            self.directory / SHRUNK_FILE,
            data,
            f"failsafe shrink {self.run_dir} ({self.anomaly}), {how}.\nReplay: failsafe run THIS_FILE",
        )

    def write_result(self, result: ShrinkResult) -> Path:
        self.write_shrunk(
            result.smallest, f"reproduced {result.confirm_reproduced} of {result.confirm_runs} confirmation runs"
        )
        out = {
            "run": str(self.run_dir),
            "anomaly": self.anomaly,
            **result.as_json(),
            "summary": result.summary(),
            "attempts": self.attempts,
        }
        path = self.directory / SHRINK_RESULT
        path.write_text(json.dumps(out, indent=2) + "\n")
        return path
