"""The runs under the cluster directory (DIR/runs/<scenario>/<UTC time>/) and the live counts of one still running.

A run is *running* while it has no results.json and its history grew in the last RUNNING_IDLE_S seconds.
Its history is read incrementally (only the bytes added since the last read), counting sends by
outcome and following the phase and the faults. Only a page asking for one run's groups (RunHistories) loads a
whole history, the last one asked for kept while its file is unchanged.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from failsafe.history.columnar import read_frames
from failsafe.history.load import decode_chunk, history_from_kinds, load_history
from failsafe.history.model import History
from failsafe.history.ops import Op, OpType

HISTORY = "history.jsonl"
RESULTS = "results.json"
REPORT = "report.html"
SCENARIO = "scenario.json"
# A scenario writes its history at least every 0.2 s (the controller watch, the topology sampler).
RUNNING_IDLE_S = 10.0
# Byte tests pick the few lines worth parsing out of a history growing by thousands of sends a second.
_SEND = f'"f":"{Op.SEND}"'.encode()
_OTHERS = tuple(f'"f":"{f}"'.encode() for f in (Op.PHASE, Op.FAULT_START, Op.FAULT_STOP))
MAX_LISTED = 200


def list_runs(
    runs_root: Path, now_s: float | None = None, verdicts: dict[Path, tuple[float, str]] | None = None
) -> list[dict]:
    """Newest first: scenario, id (``scenario/stamp``), verdict (None until checked), running, report present.

    ``verdicts``: a cache (results.json path -> (mtime, verdict)) kept between calls, so a poll reads only new
    results."""
    now_s = time.time() if now_s is None else now_s
    verdicts = {} if verdicts is None else verdicts
    found = []
    if not runs_root.is_dir():
        return []
    for scenario_dir in runs_root.iterdir():
        if not scenario_dir.is_dir():
            continue
        for run in scenario_dir.iterdir():
            history = run / HISTORY
            if not history.is_file():
                continue
            found.append((run.name, scenario_dir.name, run))
    found.sort(reverse=True)
    out = []
    for stamp, scenario, run in found[:MAX_LISTED]:
        results = run / RESULTS
        verdict = _verdict(results, verdicts)
        try:
            idle_s = now_s - (run / HISTORY).stat().st_mtime
        except FileNotFoundError:
            continue
        out.append(
            {
                "id": f"{scenario}/{stamp}",
                "scenario": scenario,
                "stamp": stamp,
                "verdict": verdict,
                "running": verdict is None and idle_s < RUNNING_IDLE_S,
                "report": (run / REPORT).is_file(),
            }
        )
    return out


@dataclass
class LiveRun:
    """Counts of one run's history so far, read incrementally by ``update``."""

    path: Path
    offset: int = 0
    phase: str | None = None
    sends: dict[str, int] = field(default_factory=lambda: {"invoked": 0, "ok": 0, "fail": 0, "info": 0})
    faults: list[dict] = field(default_factory=list)
    new_faults: list[dict] = field(default_factory=list)

    def update(self) -> None:
        """Read what was appended since the last call; a half-written last line waits for the next."""
        try:
            with open(self.path / HISTORY, "rb") as fh:
                fh.seek(self.offset)
                data = fh.read()
        except FileNotFoundError:
            return
        end = data.rfind(b"\n") + 1
        self.offset += end
        for line in data[:end].splitlines():
            if _SEND in line:
                for outcome in OpType:
                    if f'"type":"{outcome}"'.encode() in line:
                        self.sends["invoked" if outcome == OpType.INVOKE else str(outcome)] += 1
                        break
            elif any(word in line for word in _OTHERS):
                self._other(line)

    def _other(self, line: bytes) -> None:
        try:
            op = orjson.loads(line)
        except orjson.JSONDecodeError:
            return
        if op.get("f") == Op.PHASE:
            self.phase = op.get("phase")
        elif op.get("f") == Op.FAULT_START:
            fault = {
                "fault_id": op.get("fault_id"),
                "fault": op.get("fault"),
                "target": op.get("target"),
                "nodes": op.get("nodes", []),
                "role": op.get("role"),
                "start_ms": op["time_ns"] // 1_000_000,
                "stop_ms": None,
                "error": op.get("error"),
            }
            self.faults.append(fault)
            self.new_faults.append(fault)
        elif op.get("f") == Op.FAULT_STOP and op.get("ok", True):
            for fault in self.faults:
                if fault["fault_id"] == op.get("fault_id") and fault["stop_ms"] is None:
                    fault["stop_ms"] = op["time_ns"] // 1_000_000

    def take_new_faults(self) -> list[dict]:
        new, self.new_faults = self.new_faults, []
        return new

    def to_json(self) -> dict:
        return {"phase": self.phase, "sends": dict(self.sends), "faults": [dict(f) for f in self.faults]}


def _verdict(results: Path, cache: dict[Path, tuple[float, str]]) -> str | None:
    try:
        mtime = results.stat().st_mtime
    except FileNotFoundError:
        return None
    known = cache.get(results)
    if known is not None and known[0] == mtime:
        return known[1]
    try:
        verdict = str(json.loads(results.read_text()).get("verdict"))
    except (OSError, ValueError):
        verdict = "unreadable"
    cache[results] = (mtime, verdict)
    return verdict


def run_dir(runs_root: Path, scenario: str, stamp: str) -> Path | None:
    """The run's directory, or None when ``scenario/stamp`` names no run under ``runs_root`` (or points outside it)."""
    path = (runs_root / scenario / stamp).resolve()
    if runs_root.resolve() not in path.parents or not (path / HISTORY).is_file():
        return None
    return path


def read_history(run: Path) -> History:
    """The run's history as written so far: its columnar copy when that matches the file, else the JSON up to its last
    whole line (a running scenario's last line may be half-written). Raises HistoryFormatError for a damaged one."""
    path = run / HISTORY
    copy = read_frames(path)
    if copy is not None:
        return copy
    data = path.read_bytes()
    kinds = decode_chunk(data[: data.rfind(b"\n") + 1])
    # The fast decode could not place some line: the loader's own reading names it.
    return load_history(path) if kinds is None else history_from_kinds(kinds)


class RunHistories:
    """The history of the last run a page asked about, read again only when its file changed (one at a time)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._key: tuple[Path, int, int] | None = None
        self._history: History | None = None

    def get(self, run: Path) -> History:
        with self._lock:
            st = (run / HISTORY).stat()
            key = (run, st.st_size, st.st_mtime_ns)
            if key != self._key or self._history is None:
                self._history, self._key = read_history(run), key
            return self._history


def stored_checker(run: Path, name: str) -> dict | None:
    """Checker ``name``'s result in the run's results.json; None when the run was not checked or that checker did not
    run."""
    found = _json_object(run / RESULTS).get("checkers")
    result = found.get(name) if isinstance(found, dict) else None
    return result if isinstance(result, dict) else None


def _json_object(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
