"""A campaign run's fault schedule, and the scenario file that replays it.

A schedule is data: the chaos phase's length and the faults in it, each a fault type's name, its
start (seconds into chaos), its duration and its own fields as a scenario file writes them. It
becomes a normal lab scenario (the campaign's workload plus ``[[faults]]`` and ``phases.chaos_s``),
written as ``schedule.toml`` in the run's directory; ``failsafe run schedule.toml`` replays it and
``failsafe shrink`` reads it back.
"""

from __future__ import annotations

import json
import math
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from failsafe.errors import UserError

SCHEDULE_FILE = "schedule.toml"
# Written on every fault a campaign draws: one that cannot start at its time is recorded and the run goes on.
MAY_FAIL = "may_fail"


@dataclass(frozen=True)
class Planned:
    """One fault of a schedule."""

    fault: str
    at_s: float
    duration_s: float | None = None
    fields: dict[str, Any] = field(default_factory=dict)

    @property
    def end_s(self) -> float:
        return self.at_s + (self.duration_s or 0.0)

    def table(self) -> dict[str, Any]:
        """The ``[[faults]]`` table of this fault."""
        timing = {"at_s": self.at_s} | ({"duration_s": self.duration_s} if self.duration_s is not None else {})
        return {"fault": self.fault, **timing, **self.fields, MAY_FAIL: True}

    def describe(self) -> str:
        aim = ", ".join(f"{k} {v}" for k, v in self.fields.items())
        span = f"{self.at_s:g}-{self.end_s:g}s" if self.duration_s is not None else f"at {self.at_s:g}s"
        return f"{self.fault} ({aim}) {span}" if aim else f"{self.fault} {span}"


@dataclass(frozen=True)
class Schedule:
    """The faults of one run and how long its chaos phase lasts."""

    chaos_s: float
    faults: tuple[Planned, ...]

    @property
    def fault_seconds(self) -> float:
        """Seconds of faults in force, summed over the faults (a fault without a duration counts 0)."""
        return round(sum(f.duration_s or 0.0 for f in self.faults), 3)

    def size(self) -> dict[str, float]:
        """What shrinking makes smaller: how many faults, their seconds in force, the chaos phase."""
        return {"faults": len(self.faults), "fault_seconds": self.fault_seconds, "chaos_s": self.chaos_s}

    def without(self, index: int) -> Schedule:
        return replace(self, faults=self.faults[:index] + self.faults[index + 1 :])

    def with_fault(self, index: int, fault: Planned) -> Schedule:
        return replace(self, faults=self.faults[:index] + (fault,) + self.faults[index + 1 :])

    def fitted(self, margin_s: float) -> Schedule:
        """The chaos phase cut to ``margin_s`` after the last fault ends (never longer than it was)."""
        last = max((f.end_s for f in self.faults), default=0.0)
        return replace(self, chaos_s=min(self.chaos_s, round(math.ceil(last + margin_s), 3)))

    def as_json(self) -> dict[str, Any]:
        return {
            "chaos_s": self.chaos_s,
            "faults": [{"fault": f.fault, "at_s": f.at_s, "duration_s": f.duration_s, **f.fields} for f in self.faults],
        }


def scenario_data(base: dict[str, Any], schedule: Schedule, name: str, description: str) -> dict[str, Any]:
    """The lab scenario that runs ``base`` (a workload: topics, producers, consumers, phases, checkers) under
    ``schedule``."""
    phases = {**base.get("phases", {}), "chaos_s": schedule.chaos_s}
    body = {k: v for k, v in base.items() if k not in ("name", "description", "faults", "phases")}
    return {
        "name": name,
        "description": description,
        **body,
        "phases": phases,
        "faults": [f.table() for f in schedule.faults],
    }


def read_schedule(path: Path) -> tuple[dict[str, Any], Schedule]:
    """A schedule file's scenario data (its faults taken out) and its schedule; a UserError naming the file and what is
    wrong when it is not one (unreadable, not TOML, a fault without its name or a number for at_s)."""
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError) as e:
        raise UserError(f"{path} is not a schedule failsafe wrote: {e}") from e
    faults = data.get("faults", [])
    phases = data.get("phases", {})
    if not isinstance(faults, list) or not isinstance(phases, dict):
        raise UserError(f"{path}: expected [[faults]] tables and a [phases] table")
    for i, t in enumerate(faults):
        for name, kind in (("fault", str), ("at_s", int | float)):
            if not isinstance(t, dict) or not isinstance(t.get(name), kind) or isinstance(t.get(name), bool):
                raise UserError(f"{path}: faults[{i}] has no valid {name!r}: the schedule is damaged")
        if t.get("duration_s") is not None and (
            not isinstance(t["duration_s"], int | float) or isinstance(t["duration_s"], bool)
        ):
            raise UserError(f"{path}: faults[{i}].duration_s is not a number: the schedule is damaged")
    chaos_s = phases.get("chaos_s", 20.0)
    if not isinstance(chaos_s, int | float) or isinstance(chaos_s, bool):
        raise UserError(f"{path}: phases.chaos_s is not a number: the schedule is damaged")
    planned = tuple(
        Planned(
            t["fault"],
            float(t["at_s"]),
            None if t.get("duration_s") is None else float(t["duration_s"]),
            {k: v for k, v in t.items() if k not in ("fault", "at_s", "duration_s", MAY_FAIL)},
        )
        for t in faults
    )
    return {k: v for k, v in data.items() if k != "faults"}, Schedule(float(chaos_s), planned)


def write_schedule(path: Path, data: dict[str, Any], comment: str) -> Path:
    """``data`` as a TOML scenario file, headed by ``comment`` (how it was made and how to replay it)."""
    lines = [f"# {line}" if line else "#" for line in comment.splitlines()] + [""]
    tables = {k: v for k, v in data.items() if isinstance(v, dict)}
    arrays = {k: v for k, v in data.items() if isinstance(v, list) and v and all(isinstance(x, dict) for x in v)}
    lines += [f"{k} = {_value(v)}" for k, v in data.items() if k not in tables and k not in arrays]
    for name, table in tables.items():
        lines += ["", f"[{name}]", *(f"{_key(k)} = {_value(v)}" for k, v in table.items() if not isinstance(v, dict))]
        for sub, inner in ((k, v) for k, v in table.items() if isinstance(v, dict)):
            lines += ["", f"[{name}.{_key(sub)}]", *(f"{_key(k)} = {_value(v)}" for k, v in inner.items())]
    for name, items in arrays.items():
        for item in items:
            lines += ["", f"[[{name}]]", *(f"{_key(k)} = {_value(v)}" for k, v in item.items())]
    path.write_text("\n".join(lines) + "\n")
    tomllib.loads(path.read_text())  # what was written reads back, or this is a bug worth a traceback
    return path


def _key(key: str) -> str:
    return key if key.replace("_", "").replace("-", "").isalnum() else json.dumps(key)


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + " }"
    raise TypeError(f"cannot write {value!r} as TOML")
