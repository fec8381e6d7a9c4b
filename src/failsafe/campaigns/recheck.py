"""``failsafe check CAMPAIGN_DIR``: every run of a stored campaign judged again from its history.

The history is the contract and the checkers are pure, so a campaign run under an older failsafe
can be judged by today's checkers without running anything: each run's results.json is rewritten
(as ``failsafe check RUN_DIR`` does), its record is made again from the new results with the times
it was measured with, and campaign.json and index.html are rewritten. A run failsafe could not
carry out (ERROR) has nothing to judge and keeps its record.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from failsafe.campaigns.index import write_index
from failsafe.campaigns.record import run_record
from failsafe.campaigns.schedule import SCHEDULE_FILE, read_schedule
from failsafe.campaigns.stats import CAMPAIGN_FILE, ERROR, campaign_data, read_campaign, write_campaign
from failsafe.errors import UserError
from failsafe.scenarios.kinds import kind_of_run
from failsafe.scenarios.store.rundir import RunDir
from failsafe.scenarios.store.stored import stored_scenario


def is_campaign(directory: Path) -> bool:
    return (Path(directory) / CAMPAIGN_FILE).is_file()


def recheck_campaign(
    directory: Path, progress: Callable[[dict[str, Any], dict[str, Any]], None] = lambda _old, _new: None
) -> list[dict[str, Any]]:
    """Every run of the campaign at ``directory`` judged again; ``progress(old record, new record)`` after each."""
    directory = Path(directory)
    data = read_campaign(directory)
    records = []
    for old in data["runs"]:
        new = old if old["verdict"] == ERROR else _rejudged(directory, old)
        records.append(new)
        progress(old, new)
    settings = {**data["campaign"], "rechecked_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    write_campaign(directory / CAMPAIGN_FILE, settings, records)
    write_index(directory, campaign_data(settings, records))
    return records


def _rejudged(directory: Path, old: dict[str, Any]) -> dict[str, Any]:
    run_dir = _run_dir(directory, old)
    rd = RunDir.open(run_dir)
    results, history = kind_of_run(rd).judge(rd, stored_scenario(rd))
    _, schedule = read_schedule(run_dir / SCHEDULE_FILE)
    return run_record(
        old["run"],
        old["seed"],
        old["name"],
        schedule,
        run_dir=old["dir"],
        results=results,
        history=history,
        wall_s=old["wall_s"],
        phase_seconds=old["phase_seconds"],
    )


def _run_dir(directory: Path, record: dict[str, Any]) -> Path:
    """The run's directory as recorded, or under the campaign directory when the campaign was moved (NAME/TIME)."""
    recorded = Path(record["dir"])
    for candidate in (recorded, directory / Path(*recorded.parts[-2:])):
        if (candidate / SCHEDULE_FILE).is_file():
            return candidate
    raise UserError(
        f"run {record['run']} of {directory}: no run directory at {recorded} nor under the campaign directory"
    )
