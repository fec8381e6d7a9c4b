"""The one process supervisor: every process failsafe starts goes through ``spawn`` (docs/cluster.md).

tracked.py   a process known by pid and creation time; pidfiles; its state (up, paused, down)
children.py  spawn, Child (stop, kill, tail), Supervisor (every child of a run, stopped in reverse),
             run_to_end (a short-lived command: Maven, java -version)
"""

from __future__ import annotations

from failsafe.supervisor.children import Child, ChildStartError, Finished, Supervisor, guarded, run_to_end, spawn
from failsafe.supervisor.tracked import DOWN, PAUSED, UP, ProcessState, TrackedProcess, read_pidfile, write_pidfile

__all__ = [
    "DOWN",
    "PAUSED",
    "UP",
    "Child",
    "ChildStartError",
    "Finished",
    "ProcessState",
    "run_to_end",
    "Supervisor",
    "TrackedProcess",
    "guarded",
    "read_pidfile",
    "spawn",
    "write_pidfile",
]
