"""A failsafe command run as a child process of a scenario: own session, pidfile, log, stopped by us.

The child leads its own process group, so a signal reaches everything it started (the Spark
driver's JVM runs in its group). It also dies with us (PR_SET_PDEATHSIG), so a crashed runner
leaves nothing behind.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil

from failsafe.cluster.process import TrackedProcess, pdeathsig_kill
from failsafe.waiting import wait_until

STOP_TIMEOUT_S = 60.0


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


class ChildCommand:
    """``python -m failsafe ARGS`` with its output in ``log_path``."""

    def __init__(self, name: str, args: list[str], log_path: Path) -> None:
        self.name = name
        self.args = args
        self.log_path = log_path
        self.popen: subprocess.Popen | None = None
        self.tracked: TrackedProcess | None = None

    def start(self) -> ChildCommand:
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        with open(self.log_path, "ab") as log:
            self.popen = subprocess.Popen([sys.executable, "-m", "failsafe", *self.args], stdin=subprocess.DEVNULL, stdout=log,
                                          stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=pdeathsig_kill, env=env)
        try:
            self.tracked = TrackedProcess(self.popen.pid, psutil.Process(self.popen.pid).create_time())
        except psutil.NoSuchProcess:
            self.tracked = TrackedProcess(self.popen.pid, 0.0)
        return self

    @property
    def pid(self) -> int:
        assert self.popen is not None
        return self.popen.pid

    def exit_code(self) -> int | None:
        return None if self.popen is None else self.popen.poll()

    def running(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def kill_group(self) -> None:
        """SIGKILL the child and everything in its group (the JVM too), and wait until all are gone."""
        if self.popen is None:
            return
        try:
            os.killpg(self.popen.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.popen.wait(timeout=STOP_TIMEOUT_S)
        wait_until(lambda: not _group_alive(self.pid), STOP_TIMEOUT_S, f"{self.name}: processes of group {self.pid} still running")

    def stop(self, timeout_s: float = STOP_TIMEOUT_S) -> int | None:
        """SIGTERM to the child alone (failsafe unwinds as on Ctrl-C and stops what it started, Spark's JVM
        included), then SIGKILL of the whole group if anything of it is still running after ``timeout_s``."""
        if self.popen is None:
            return None
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                pass
        code = self.popen.poll()
        if code is None or _group_alive(self.pid):
            self.kill_group()
        return self.popen.poll()

    def wait(self, timeout_s: float) -> int:
        assert self.popen is not None
        return self.popen.wait(timeout=timeout_s)

    def log_tail(self, lines: int = 3) -> str:
        try:
            text = self.log_path.read_text(errors="replace").strip().splitlines()
        except FileNotFoundError:
            return ""
        return " | ".join(line.strip() for line in text[-lines:])
