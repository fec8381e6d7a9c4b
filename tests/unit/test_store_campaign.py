"""benchmarks/store_campaign.py: parts of one campaign merge in run order; parts of different campaigns, or one run
twice, are refused."""

from __future__ import annotations

import pytest
from benchmarks.store_campaign import merge


def part(first: int, runs: int, seed: int = 2913, done: int | None = None) -> dict:
    campaign = {
        "seed": seed,
        "workload": "transactions",
        "faults": ["kill"],
        "envelope": "safe",
        "duration_s": 20.0,
        "runs": runs,
        "first_run": first,
        "stopped": "done",
        "started_at": "t",
        "finished_at": "t",
        "command": "failsafe campaign",
    }
    records = [
        {
            "run": i,
            "seed": seed,
            "name": f"r{i:03d}",
            "dir": f"/tmp/x/c/r{i:03d}/20261126T000000Z",
            "schedule": {"chaos_s": 20.0, "faults": []},
            "verdict": "VALID",
            "error": None,
            "anomalies": {},
            "violations": [],
            "known": [],
            "explanations": [],
            "lost_acknowledged": 0,
            "faults": [],
            "unavailability": {},
            "wall_s": 40.0,
            "chaos_s": 20.0,
            "overhead_s": 20.0,
            "phase_seconds": {},
        }
        for i in range(first, first + (runs if done is None else done))
    ]
    return {"campaign": campaign, "runs": records}


def test_two_parts_of_one_campaign_are_one_campaign_of_both_parts_runs() -> None:
    data = merge([part(2, 3), part(0, 2)])
    assert [r["run"] for r in data["runs"]] == [0, 1, 2, 3, 4] and data["campaign"]["runs"] == 5
    assert data["summary"]["runs_done"] == 5 and data["runs"][0]["dir"] == "r000/20261126T000000Z"
    again = merge([part(5, 1), data])  # a stored merge goes on with its parts
    assert [p["first_run"] for p in again["campaign"]["parts"]] == [0, 2, 5] and again["campaign"]["runs"] == 6


def test_parts_of_different_campaigns_or_a_run_twice_are_refused() -> None:
    with pytest.raises(SystemExit, match="seed"):
        merge([part(0, 2), part(2, 2, seed=1)])
    with pytest.raises(SystemExit, match="run 1"):
        merge([part(0, 2), part(1, 2)])
    with pytest.raises(SystemExit, match="no run 2"):
        merge([part(0, 2), part(3, 2)])
    with pytest.raises(SystemExit, match="no run 0"):  # the first part made none of its runs
        merge([part(0, 3, done=0), part(3, 2)])


def test_a_part_cut_short_by_max_time_goes_on_where_its_runs_stopped() -> None:
    data = merge([part(15, 35), part(0, 50, done=15)])
    assert (
        [r["run"] for r in data["runs"]] == list(range(50))
        and data["campaign"]["runs"] == 50
        and data["summary"]["runs_done"] == 50
    )
