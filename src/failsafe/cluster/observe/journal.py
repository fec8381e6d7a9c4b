"""The operator's journal: every node action and leader election done by hand, from the CLI or the console.

    DIR/operator-actions.jsonl   one JSON object per line, appended when the action has finished:
        {"start_ns", "end_ns", "action", "role", "node", "source", "ok", "error"?, "detail"?}

``failsafe status`` shows the last actions; a scenario running on the cluster reads the lines
written after it started and records them in its history as the operator's faults, so a kill
clicked in the console is a fault window in the run's report like any scheduled one.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

JOURNAL_FILE = "operator-actions.jsonl"
# Actions that take a node away (a fault starts) and those that bring one back (it ends).
TAKES_AWAY = ("kill", "stop", "pause")
BRINGS_BACK = ("start", "resume")
ELECT_LEADERS = "elect-leaders"
# A network fault made by hand (failsafe net ...; detail: chain, fault, kind, nodes, sides) and its heal (detail:
# chains).
NET_FAULT = "net-fault"
NET_HEAL = "net-heal"


@dataclass(frozen=True)
class OperatorAction:
    start_ns: int
    end_ns: int
    action: str
    role: str
    node: int | None
    source: str
    ok: bool
    error: str | None = None
    detail: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        data = asdict(self)
        return {k: v for k, v in data.items() if v is not None and v != {}}

    @classmethod
    def from_json(cls, data: dict) -> OperatorAction:
        return cls(
            int(data["start_ns"]),
            int(data["end_ns"]),
            str(data["action"]),
            str(data["role"]),
            None if data.get("node") is None else int(data["node"]),
            str(data.get("source", "cli")),
            bool(data.get("ok", True)),
            data.get("error"),
            dict(data.get("detail") or {}),
        )


def append(path: Path, action: OperatorAction) -> None:
    """One line with one write(2) on an O_APPEND descriptor: concurrent writers never interleave."""
    line = (json.dumps(action.to_json(), separators=(",", ":")) + "\n").encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def read_from(path: Path, offset: int) -> tuple[list[OperatorAction], int]:
    """The whole lines after byte ``offset`` and the offset after the last of them (a half-written line waits)."""
    try:
        with open(path, "rb") as fh:
            fh.seek(offset)
            data = fh.read()
    except FileNotFoundError:
        return [], offset
    end = data.rfind(b"\n") + 1
    actions = []
    for raw in data[:end].splitlines():
        try:
            actions.append(OperatorAction.from_json(json.loads(raw)))
        except (ValueError, KeyError, TypeError):
            continue  # a line some other tool wrote: not ours to interpret
    return actions, offset + end


def size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def last(path: Path, count: int) -> list[OperatorAction]:
    actions, _ = read_from(path, max(0, size(path) - 256 * count))
    return actions[-count:]
