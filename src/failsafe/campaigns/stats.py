"""A campaign's runs summed up, and campaign.json: ``{"campaign": settings, "summary": summarise(...), "runs":
records}``.

Built from the runs' records alone (campaigns/record.py), so it is rebuilt after every run and
again from a stored campaign.json. The summary's keys:

    format                  1
    runs_asked, runs_done   what the campaign asked for, how many runs it has records of
    verdicts                VALID / KNOWN / INVALID / UNKNOWN / ERROR -> runs (every key, zeros too)
    verdict                 the campaign as one word: INVALID over ERROR over UNKNOWN over KNOWN over VALID (None
    without runs)
    runs_by_verdict         verdict -> run indices
    lost_acknowledged       acknowledged writes durable writers lost, summed; lost_acknowledged_runs: the runs that lost
    any
    combinations            fault combination -> judged runs under it (see below)
    anomalies               CHECKER.ANOMALY -> runs (that showed it), total (its count summed), run_indices,
                            decided_runs (runs where it decided the verdict), and combinations:
                            every combination -> {"runs": k, "of": n}: k of the n judged runs under it showed it
    unavailability          fault type -> started (faults of it that started), and the spread of the availability
                            checker's max_unavailable_ms and of its new_leader_ms per fault (None when none was
                            measured)
    not_started             fault type -> count (faults that could not start), of (faults of it the runs recorded),
                            run_indices, example (the first one's error)
    wall_s, overhead_s      spreads over the runs
    phase_seconds           phase -> spread of its seconds

A fault combination is the sorted set of fault types that actually started in a run, joined by "+"
("kill+pause"), or "none". Judged runs are those that are not ERROR: a run failsafe could not carry out
has no checkers' word, so it is counted neither for nor against an anomaly. A spread is
scenarios/store/repeat.py's: n, median, p95, min, max.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from failsafe.checkers.common import Verdict
from failsafe.errors import UserError
from failsafe.scenarios.store.repeat import spread

FORMAT = 1
CAMPAIGN_FILE = "campaign.json"
ERROR = "ERROR"
VERDICTS = (*(v.value for v in Verdict), ERROR)
# The order of runner.exit_code: the first one a campaign has is its verdict.
WORST_FIRST = (Verdict.INVALID.value, ERROR, Verdict.UNKNOWN.value, Verdict.KNOWN.value, Verdict.VALID.value)
NO_FAULT = "none"
UNAVAILABILITY_FIELDS = ("max_unavailable_ms", "new_leader_ms")


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _spread(values: Iterable[object]) -> dict[str, float | int] | None:
    return spread([n for n in map(_number, values) if n is not None])


def combination(record: dict[str, Any]) -> str:
    """The fault types that started in the run, sorted and joined by "+"; "none" when none did."""
    started = {str(f.get("fault")) for f in record.get("faults") or [] if isinstance(f, dict) and f.get("started")}
    return "+".join(sorted(started)) or NO_FAULT


def judged(record: dict[str, Any]) -> bool:
    """Whether the checkers judged the run (it was carried out, so its anomalies and their absence mean something)."""
    return record.get("verdict") != ERROR


def unavailability_values(records: Iterable[dict[str, Any]]) -> dict[str, dict[str, list[float]]]:
    """Fault type -> field (max_unavailable_ms, new_leader_ms) -> every measured value, in run order."""
    values: dict[str, dict[str, list[float]]] = {}
    for record in records:
        for entry in record.get("unavailability") or []:
            per_type = values.setdefault(str(entry.get("fault") or "unknown"), {f: [] for f in UNAVAILABILITY_FIELDS})
            for field in UNAVAILABILITY_FIELDS:
                value = _number(entry.get(field))
                if value is not None:
                    per_type[field].append(value)
    return dict(sorted(values.items()))


def _anomalies(
    records: list[dict[str, Any]], combos: dict[int, str], runs_under: dict[str, int]
) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for record in records:
        for name, count in (record.get("anomalies") or {}).items():
            entry = found.setdefault(
                name, {"runs": 0, "total": 0, "run_indices": [], "decided_runs": 0, "combinations": Counter()}
            )
            entry["runs"] += 1
            entry["total"] += int(count or 0)
            entry["run_indices"].append(record["run"])
            entry["decided_runs"] += name in (record.get("violations") or [])
            entry["combinations"][combos[record["run"]]] += 1
    for entry in found.values():
        entry["combinations"] = {c: {"runs": entry["combinations"][c], "of": n} for c, n in runs_under.items()}
    return dict(sorted(found.items()))


def _unavailability(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    started = Counter(str(f.get("fault")) for r in records for f in r.get("faults") or [] if f.get("started"))
    values = unavailability_values(records)
    return {
        fault: {
            "started": started[fault],
            **{f: spread((values.get(fault) or {}).get(f) or []) for f in UNAVAILABILITY_FIELDS},
        }
        for fault in sorted(set(started) | set(values))
    }


def _not_started(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    attempts: Counter[str] = Counter()
    failed: dict[str, dict[str, Any]] = {}
    for record in records:
        for fault in record.get("faults") or []:
            name = str(fault.get("fault"))
            attempts[name] += 1
            if fault.get("started"):
                continue
            entry = failed.setdefault(name, {"count": 0, "run_indices": [], "example": fault.get("error")})
            entry["count"] += 1
            if record["run"] not in entry["run_indices"]:
                entry["run_indices"].append(record["run"])
    return {name: {**entry, "of": attempts[name]} for name, entry in sorted(failed.items())}


def summarise(campaign: dict[str, Any], records: list[dict[str, Any]]) -> dict[str, Any]:
    """The statistics of a campaign's runs (the module docstring names every key)."""
    records = sorted(records, key=lambda r: r["run"])
    verdicts = Counter(str(r.get("verdict")) for r in records)
    seen = [v for v in WORST_FIRST if verdicts[v]]
    judged_runs = [r for r in records if judged(r)]
    combos = {r["run"]: combination(r) for r in records}
    runs_under = dict(sorted(Counter(combos[r["run"]] for r in judged_runs).items()))
    phases = sorted({p for r in records for p in r.get("phase_seconds") or {}})
    return {
        "format": FORMAT,
        "runs_asked": campaign.get("runs"),
        "runs_done": len(records),
        "verdicts": {v: verdicts[v] for v in VERDICTS} | {v: n for v, n in verdicts.items() if v not in VERDICTS},
        "verdict": seen[0] if seen else None,
        "runs_by_verdict": {v: [r["run"] for r in records if r.get("verdict") == v] for v in VERDICTS},
        "lost_acknowledged": sum(int(r.get("lost_acknowledged") or 0) for r in records),
        "lost_acknowledged_runs": [r["run"] for r in records if r.get("lost_acknowledged")],
        "combinations": runs_under,
        "anomalies": _anomalies(judged_runs, combos, runs_under),
        "unavailability": _unavailability(records),
        "not_started": _not_started(records),
        "wall_s": _spread(r.get("wall_s") for r in records),
        "overhead_s": _spread(r.get("overhead_s") for r in records),
        "phase_seconds": {p: _spread((r.get("phase_seconds") or {}).get(p) for r in records) for p in phases},
    }


def campaign_data(campaign: dict[str, Any], records: list[dict[str, Any]]) -> dict[str, Any]:
    """What campaign.json holds."""
    return {"campaign": campaign, "summary": summarise(campaign, records), "runs": records}


def write_campaign(path: Path, campaign: dict[str, Any], records: list[dict[str, Any]]) -> Path:
    """campaign.json at ``path``, replaced whole (a temporary file beside it, then a rename), so a reader never sees
    half of it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(campaign_data(campaign, records), indent=2, default=str) + "\n"
    # Beside the target (a rename within one directory is atomic); named by pid, as one process writes a campaign.
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with temporary.open("w") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return path


# What every run record of a campaign.json holds, and of what type, for a campaign to be read again (check, recheck).
_RECORD_FIELDS = {
    "run": int,
    "seed": int,
    "name": str,
    "dir": str,
    "verdict": str,
    "wall_s": (int, float),
    "phase_seconds": dict,
}


def read_campaign(path: Path) -> dict[str, Any]:
    """A campaign.json (or the directory holding one) as written by write_campaign; a UserError naming the file and what
    is wrong when it is not one (unreadable, not JSON, not an object, a run record without its fields)."""
    path = Path(path)
    file = path / CAMPAIGN_FILE if path.is_dir() else path
    try:
        data = json.loads(file.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise UserError(f"{file} is not a campaign.json failsafe wrote: {e}") from e
    if (
        not isinstance(data, dict)
        or not isinstance(data.get("campaign"), dict)
        or not isinstance(data.get("runs"), list)
    ):
        raise UserError(
            f"{file} is not a campaign.json failsafe wrote: expected an object with 'campaign' and a list of 'runs'"
        )
    for i, record in enumerate(data["runs"]):
        bad = [
            name
            for name, kind in _RECORD_FIELDS.items()
            if not isinstance(record, dict)
            or not isinstance(record.get(name), kind)
            or isinstance(record.get(name), bool)
        ]
        if bad:
            raise UserError(
                f"{file}: runs[{i}] has no valid {bad[0]!r}: the file is damaged; a campaign's runs are in its "
                f"directory"
            )
    return data
