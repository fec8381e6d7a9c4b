"""failsafe shrink's bad input: one line, exit 2, before any cluster is touched; the anomaly it keeps."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from failsafe.campaigns.reproduce import Failed
from failsafe.campaigns.schedule import Planned, Schedule, scenario_data, write_schedule
from failsafe.cli.main import main
from failsafe.errors import UserError
from tests.unit.test_campaign_schedule import BASE

SCHEDULE = Schedule(10.0, (Planned("kill", 1.0, 3.0, {"role": "leader", "partition": "t-0"}),))


def stored(tmp_path: Path, results: dict | None) -> Path:
    write_schedule(tmp_path / "schedule.toml", scenario_data(BASE, SCHEDULE, "camp-s1-r000", "a run"), "a run")
    if results is not None:
        (tmp_path / "results.json").write_text(json.dumps(results))
    return tmp_path


INVALID = {
    "verdict": "INVALID",
    "checkers": {
        "delivery": {"violations": ["duplicate-acknowledged", "lost"]},
        "order": {"violations": ["poll-skip"]},
    },
}


def test_a_loss_is_the_anomaly_kept_when_the_run_had_one(tmp_path: Path) -> None:
    failed = Failed.open(stored(tmp_path, INVALID), None)
    assert failed.anomaly == "delivery.lost" and failed.schedule == SCHEDULE and failed.verdict == "INVALID"
    assert Failed.open(tmp_path, "order.poll-skip").anomaly == "order.poll-skip"


# A VALID run whose acks=1 writer lost writes it was allowed to: no violation, but the loss can be named and shrunk.
ALLOWED_LOSS = {
    "verdict": "VALID",
    "checkers": {
        "delivery": {
            "valid": True,
            "violations": [],
            "counts": {"lost-write": 12},
            "examples": {"lost-write": [{"id": 1}]},
        }
    },
}


def test_an_anomaly_the_scenario_allows_can_be_named(tmp_path: Path) -> None:
    failed = Failed.open(stored(tmp_path, ALLOWED_LOSS), "delivery.lost-write")
    assert failed.anomaly == "delivery.lost-write" and failed.verdict == "VALID"
    with pytest.raises(UserError, match="name one it showed with --anomaly: delivery.lost-write"):
        Failed.open(tmp_path, None)


@pytest.mark.parametrize(
    ("results", "args", "message"),
    [
        (None, [], "has no results.json"),
        ({"verdict": "VALID", "checkers": {"delivery": {"violations": []}}}, [], "nothing to shrink"),
        (
            INVALID,
            ["--anomaly", "delivery.inconsistent-offsets"],
            "the run did not show it; it showed delivery.duplicate-acknowledged, delivery.lost, order.poll-skip",
        ),
        (INVALID, ["--tries", "0"], "--tries"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], results: dict | None, args: list[str], message: str
) -> None:
    assert main(["shrink", str(stored(tmp_path, results)), *args, "--dir", str(tmp_path / "no-cluster")]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "no-cluster").exists()


def test_a_directory_that_is_no_campaign_run_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="has no schedule.toml"):
        Failed.open(tmp_path, None)
