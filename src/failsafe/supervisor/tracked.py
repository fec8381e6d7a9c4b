"""A process known by pid and creation time: its state, its process group, its pidfile.

A pidfile holds ``pid create_time``; the creation time guards against a recycled pid, so
failsafe only ever signals the process it started. Processes are never looked up by name.
"""

from __future__ import annotations

import os
import signal
import subprocess
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

import psutil

from failsafe.waiting import WaitTimeout, wait_until


class ProcessState(StrEnum):
    """What /proc says of a tracked process (a str, so JSON and older comparisons keep working)."""

    UP = "up"
    PAUSED = "paused"
    DOWN = "down"


UP, PAUSED, DOWN = ProcessState.UP, ProcessState.PAUSED, ProcessState.DOWN

# psutil reports create_time rounded from clock ticks; allow for that.
_CREATE_TIME_TOLERANCE_S = 0.05


@dataclass(frozen=True)
class TrackedProcess:
    pid: int
    create_time: float

    def process(self) -> psutil.Process | None:
        """The live process, or None if it exited, was reaped, or the pid now names another."""
        try:
            proc = psutil.Process(self.pid)
            if abs(proc.create_time() - self.create_time) > _CREATE_TIME_TOLERANCE_S:
                return None
            if proc.status() == psutil.STATUS_ZOMBIE:
                # A process's leader thread may exit before its other threads (a JVM shutting down does): /proc then
                # says zombie while the rest still runs and cannot be reaped yet. It is gone when one thread is left.
                if proc.num_threads() > 1:
                    return proc
                _reap(self.pid)
                return None
            return proc
        except (psutil.NoSuchProcess, psutil.ZombieProcess):
            return None

    def state(self) -> ProcessState:
        proc = self.process()
        if proc is None:
            return DOWN
        try:
            status = proc.status()
        except psutil.NoSuchProcess:
            return DOWN
        if status in (psutil.STATUS_STOPPED, psutil.STATUS_TRACING_STOP):
            return PAUSED
        return UP

    def alive(self) -> bool:
        return self.process() is not None

    def signal_group(self, sig: signal.Signals) -> bool:
        """Signal the process group this process leads. False if it is already gone."""
        if self.process() is None:
            return False
        try:
            os.killpg(self.pid, sig)
        except ProcessLookupError:
            return False
        return True

    def wait_gone(self, timeout_s: float) -> None:
        wait_until(lambda: not self.alive(), timeout_s, f"process {self.pid} still running after {timeout_s:g}s")

    def begin_stop(self, sig: signal.Signals) -> None:
        """Send ``sig`` to the group; a paused process is continued so it can act on SIGTERM."""
        if sig != signal.SIGKILL and self.state() == PAUSED:
            self.signal_group(signal.SIGCONT)
        self.signal_group(sig)

    def finish_stop(self, timeout_s: float) -> None:
        """Wait for the process to exit; SIGKILL its group if it has not after ``timeout_s``."""
        try:
            self.wait_gone(timeout_s)
        except WaitTimeout:
            self.signal_group(signal.SIGKILL)
            self.wait_gone(timeout_s)

    def stop(self, timeout_s: float, sig: signal.Signals = signal.SIGTERM) -> None:
        self.begin_stop(sig)
        self.finish_stop(timeout_s)


# Children this command started, kept so that a zombie among them can be reaped (see spawn).
_children: dict[int, subprocess.Popen] = {}


def _reap(pid: int) -> None:
    """Collect the exit status of our own child so it does not stay a zombie."""
    popen = _children.get(pid)
    if popen is not None and popen.poll() is not None:
        del _children[pid]


def keep_for_reaping(popen: subprocess.Popen) -> None:
    """Keep ``popen`` until it is reaped, and reap every kept child that exited: a node a fault killed and nobody asks
    about again (it was started anew under another pid) must not stay a zombie for the rest of a long campaign."""
    for pid, child in list(_children.items()):
        if child.poll() is not None:
            del _children[pid]
    _children[popen.pid] = popen


def write_pidfile(pidfile: Path, tracked: TrackedProcess) -> None:
    tmp = pidfile.with_suffix(".tmp")
    tmp.write_text(f"{tracked.pid} {tracked.create_time!r}\n")
    tmp.replace(pidfile)


def read_pidfile(pidfile: Path) -> TrackedProcess | None:
    try:
        pid_text, time_text = pidfile.read_text().split()
        return TrackedProcess(int(pid_text), float(time_text))
    except (FileNotFoundError, ValueError):
        return None
