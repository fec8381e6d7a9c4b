"""A campaign's runs, one after another on one cluster: draw, write, run, judge, record, sum up.

Every run gets a fresh topic (the lab's setup deletes and creates the workload's topics), its
schedule as ``schedule.toml`` in its run directory (``failsafe run`` replays it), and is judged by
the lab's checkers. Between runs the cluster must be whole (``require_whole``): a node a heal could
not bring back stops the campaign with that node named. campaign.json and index.html are rewritten
after every run, so an interrupted campaign keeps everything it did.
"""

from __future__ import annotations

import json
import statistics
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from failsafe.campaigns.index import write_index
from failsafe.campaigns.plan import Plan
from failsafe.campaigns.record import run_record
from failsafe.campaigns.schedule import SCHEDULE_FILE, Schedule, scenario_data, write_schedule
from failsafe.campaigns.stats import CAMPAIGN_FILE, ERROR, campaign_data, write_campaign
from failsafe.cluster.site import RunSite
from failsafe.errors import FailsafeError
from failsafe.scenarios.engine.core import require_whole
from failsafe.scenarios.engine.runs import run_and_judge
from failsafe.scenarios.registry import parse_scenario
from failsafe.scenarios.store.rundir import RunDir
from failsafe.waiting import WaitTimeout

# What a run may fail with and the campaign go on (the run is recorded as ERROR): anything else stops it.
RUN_ERRORS = (FailsafeError, WaitTimeout)


@dataclass
class Ready:
    """The cluster a campaign runs on, as 'failsafe run' places it."""

    cluster: RunSite
    facts: dict[str, Any]
    clusters: dict[str, str]
    status: Callable[[str], None]
    event: Callable[[str], None]


@dataclass
class Campaign:
    plan: Plan
    directory: Path
    seed: int
    runs: int
    settings: dict[str, Any]
    stop_on_invalid: bool = False
    max_time_s: float | None = None
    first_run: int = (
        0  # the index of the first run: a campaign cut short goes on with the same seed from where it stopped
    )
    records: list[dict[str, Any]] = field(default_factory=list)
    stopped: str = ""

    def schedule(self, run: int) -> Schedule:
        return self.plan.nemesis.schedule(self.seed, run)

    def run_all(self, ready: Ready, progress: Callable[[dict[str, Any], str], None]) -> list[dict[str, Any]]:
        started = time.monotonic()
        # What campaign.json says while runs go on; how the campaign ended once it has.
        self.stopped = "running"
        try:
            for run in range(self.first_run, self.first_run + self.runs):
                walls = [r["wall_s"] for r in self.records]
                if (
                    self.max_time_s is not None
                    and walls
                    and time.monotonic() - started + statistics.median(walls) > self.max_time_s
                ):
                    self.stopped = f"max-time: {self.max_time_s:g}s would be exceeded by another run"
                    break
                record = self.run_one(run, ready)
                self.records.append(record)
                self.write()
                progress(record, self.eta(time.monotonic() - started))
                require_whole(ready.cluster, after=record["name"])
                if self.stop_on_invalid and record["verdict"] == "INVALID":
                    self.stopped = f"stop-on-invalid: run {run} was INVALID"
                    break
            else:
                self.stopped = "done"
        except BaseException as e:
            self.stopped = "interrupted" if isinstance(e, KeyboardInterrupt) else f"{type(e).__name__}: {e}"
            self.write()
            raise
        self.write()
        return self.records

    def run_one(self, run: int, ready: Ready) -> dict[str, Any]:
        name = self.plan.run_name(self.seed, run)
        schedule = self.schedule(run)
        description = (
            f"Run {run} of a campaign (seed {self.seed}, envelope {self.plan.envelope}) on the "
            f"{self.plan.workload} workload: " + "; ".join(f.describe() for f in schedule.faults)
        )
        data = scenario_data(self.plan.base, schedule, name, description)
        scenario = parse_scenario(data, name)
        run_dir = RunDir.create(self.directory, scenario)
        write_schedule(run_dir.path / SCHEDULE_FILE, data, self.replay_comment(run))
        ready.event(
            f"[bold]{name}[/]: {len(schedule.faults)} faults: " + "; ".join(f.describe() for f in schedule.faults)
        )
        begun = time.monotonic()
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
            ready.event(f"{name} could not be carried out: {e}")
            return run_record(
                run,
                self.seed,
                name,
                schedule,
                run_dir=str(run_dir.path),
                results=None,
                history=None,
                wall_s=time.monotonic() - begun,
                phase_seconds=_timings(run_dir),
                error=f"{type(e).__name__}: {e}",
            )
        return run_record(
            run,
            self.seed,
            name,
            schedule,
            run_dir=str(run_dir.path),
            results=outcome.results,
            history=outcome.history,
            wall_s=outcome.wall_s,
            phase_seconds=outcome.phase_seconds,
        )

    def replay_comment(self, run: int) -> str:
        return (
            f"Run {run} of a failsafe campaign: {self.settings.get('command', '')}\nThe same schedule again: "
            f"failsafe campaign ... --seed {self.seed} (run {run}); this file alone: failsafe run THIS_FILE.\nEach "
            "fault has may_fail = true: one that cannot start at its time (no leader, no in-sync follower) is "
            "recorded and skipped."
        )

    def eta(self, elapsed_s: float) -> str:
        done = len(self.records)
        counts = Counter(r["verdict"] for r in self.records)
        left = (self.runs - done) * (elapsed_s / done) if done else 0.0
        if self.max_time_s is not None:
            left = min(left, max(0.0, self.max_time_s - elapsed_s))
        verdicts = " ".join(f"{v} {counts[v]}" for v in ("VALID", "KNOWN", "INVALID", "UNKNOWN", ERROR) if counts[v])
        return f"{done}/{self.runs} runs · {verdicts} · ETA {_duration(left)}"

    def write(self) -> Path:
        settings = {
            **self.settings,
            "stopped": self.stopped,
            "finished_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        path = write_campaign(self.directory / CAMPAIGN_FILE, settings, self.records)
        write_index(self.directory, campaign_data(settings, self.records))
        return path


def _timings(run_dir: RunDir) -> dict[str, float]:
    path = Path(run_dir.path) / "timings.json"
    return json.loads(path.read_text()) if path.is_file() else {}


def _duration(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s"


def exit_code(records: list[dict[str, Any]]) -> int:
    """INVALID (1) over a run not carried out (5) over UNKNOWN (3) over KNOWN (4) over VALID (0)."""
    verdicts = {r["verdict"] for r in records}
    for verdict, code in (("INVALID", 1), (ERROR, 5), ("UNKNOWN", 3), ("KNOWN", 4)):
        if verdict in verdicts:
            return code
    return 0
