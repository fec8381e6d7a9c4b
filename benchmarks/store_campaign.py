"""A campaign's campaign.json as docs/ keeps it: statistics made again from its run records, run directories cut to
their names.

    .venv/bin/python benchmarks/store_campaign.py CAMPAIGN_DIR/campaign.json [MORE.json ...] \
        docs/benchmarks/campaign-LABEL.json

Several sources are parts of one campaign (the same seed, workload, faults, envelope and chaos length; a later
part started with --first-run where an earlier one stopped): their runs are merged in run order, and a run
index two parts both hold is refused. A stored file may be a source, so a campaign goes on part by part.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from failsafe.campaigns.stats import campaign_data, read_campaign

SAME = ("seed", "workload", "faults", "envelope", "duration_s")
PART = ("first_run", "runs", "started_at", "finished_at", "stopped", "command")


def merge(parts: list[dict]) -> dict:
    first = parts[0]["campaign"]
    runs: dict[int, dict] = {}
    for part in parts:
        differing = [k for k in SAME if part["campaign"].get(k) != first.get(k)]
        if differing:
            raise SystemExit(f"not parts of one campaign: {', '.join(differing)} differ")
        for r in part["runs"]:
            if r["run"] in runs:
                raise SystemExit(f"run {r['run']} is in two parts")
            runs[r["run"]] = {**r, "dir": "/".join(Path(r["dir"]).parts[-2:])}
    if len(parts) == 1:
        return campaign_data(first, list(runs.values()))
    # A stored file that was merged before brings its own parts; each part says where it began and how many runs it
    # asked for.
    pieces = sorted(
        (piece for p in parts for piece in p["campaign"].get("parts") or [{k: p["campaign"].get(k) for k in PART}]),
        key=lambda piece: piece.get("first_run") or 0,
    )
    indices = sorted(runs)
    missing = sorted(set(range(pieces[0].get("first_run") or 0, indices[-1] + 1)) - set(indices)) if indices else []
    if missing:
        raise SystemExit(
            f"the parts leave a gap: no run {missing[0]}"
            + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else "")
        )
    last = pieces[-1]
    campaign = {
        **first,
        "runs": (last.get("first_run") or 0) + last["runs"] - (pieces[0].get("first_run") or 0),
        "first_run": pieces[0].get("first_run") or 0,
        "started_at": pieces[0].get("started_at"),
        "stopped": last.get("stopped"),
        "finished_at": last.get("finished_at"),
        "parts": pieces,
    }
    return campaign_data(campaign, [runs[i] for i in indices])


def main(sources: list[str], target: str) -> None:
    data = merge([read_campaign(Path(source)) for source in sources])
    Path(target).write_text(json.dumps(data, indent=1, default=str) + "\n")
    print(target)


if __name__ == "__main__":
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    main(sys.argv[1:-1], sys.argv[-1])
