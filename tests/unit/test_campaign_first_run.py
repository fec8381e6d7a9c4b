"""A campaign started with --first-run N runs N, N+1, ... of its seed: it goes on where an earlier one stopped."""

from __future__ import annotations

from pathlib import Path

import pytest

import failsafe.campaigns.runner as runner
from failsafe.campaigns.runner import Campaign


def test_the_runs_start_at_first_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[int] = []

    def run_one(self: Campaign, run: int, ready: object) -> dict:
        ran.append(run)
        return {
            "run": run,
            "seed": self.seed,
            "name": f"r{run}",
            "dir": str(tmp_path / f"r{run}"),
            "schedule": {"chaos_s": 1.0, "faults": []},
            "verdict": "VALID",
            "error": None,
            "anomalies": {},
            "violations": [],
            "known": [],
            "explanations": [],
            "lost_acknowledged": 0,
            "faults": [],
            "unavailability": {},
            "wall_s": 1.0,
            "chaos_s": 1.0,
            "overhead_s": 0.0,
            "phase_seconds": {},
        }

    monkeypatch.setattr(Campaign, "run_one", run_one)
    monkeypatch.setattr(runner, "require_whole", lambda cluster, after: None)
    campaign = Campaign(
        plan=None, directory=tmp_path, seed=7, runs=3, settings={"runs": 3, "first_run": 25}, first_run=25
    )  # type: ignore[arg-type]
    records = campaign.run_all(runner.Ready(None, {}, {}, lambda _: None, lambda _: None), lambda record, eta: None)
    assert ran == [25, 26, 27] and [r["run"] for r in records] == [25, 26, 27] and campaign.stopped == "done"
