"""Starting and stopping the processes failsafe owns: one way for every JVM, worker, Spark driver and tool.

Every child starts in a session of its own (so a signal to its group reaches whatever it starts,
and the terminal's Ctrl-C reaches only us), is known by pid and creation time, writes to a log
file or a pipe, and is stopped by SIGTERM, then SIGKILL of its whole group.

A child that must not outlive us is started through util-linux's ``setpriv --pdeathsig KILL``:
the kernel sends it SIGKILL when the thread that started it dies, however it dies. ``setpriv``
sets that and execs the command, so nothing runs in the forked child before exec (Python's
``preexec_fn``, the alternative, is unsafe while other threads run). Start such children from
a thread that lives as long as they should, in practice the main thread. (The guard is set a few
microseconds after the start, when setpriv runs: a parent killed within that moment leaves the child.)
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import psutil

from failsafe.supervisor.tracked import TrackedProcess, keep_for_reaping, write_pidfile
from failsafe.waiting import WaitTimeout, wait_until

DEFAULT_STOP_TIMEOUT_S = 45.0
KILL_TIMEOUT_S = 15.0
TAIL_LINES = 20

_SETPRIV = shutil.which("setpriv")


def guarded(cmd: Sequence[str]) -> list[str]:
    """``cmd`` run so that it gets SIGKILL when its parent dies (unchanged where setpriv is missing)."""
    return [_SETPRIV, "--pdeathsig", "KILL", "--", *cmd] if _SETPRIV else list(cmd)


class Child:
    """One process failsafe started: its Popen, pid and creation time, log, and the last lines of its stderr."""

    def __init__(self, name: str, popen: subprocess.Popen, tracked: TrackedProcess, log_path: Path | None) -> None:
        self.name = name
        self.popen = popen
        self.tracked = tracked
        self.log_path = log_path
        self._tail: deque[str] = deque(maxlen=TAIL_LINES)
        self._tail_reader: threading.Thread | None = None
        if popen.stderr is not None:
            self._tail_reader = threading.Thread(
                target=self._keep_tail, args=(popen.stderr,), name=f"stderr-{name}", daemon=True
            )
            self._tail_reader.start()

    # -- looking --------------------------------------------------------------------------------
    @property
    def pid(self) -> int:
        return self.popen.pid

    def running(self) -> bool:
        return self.popen.poll() is None

    def exit_code(self) -> int | None:
        return self.popen.poll()

    def group_alive(self) -> bool:
        """Whether anything of the child's process group (the child or what it started) still runs."""
        try:
            os.killpg(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True

    def tail(self, lines: int = 3) -> str:
        """The last lines it wrote to stderr (or to its log), joined with ' | ': what an error message quotes."""
        if self._tail_reader is not None:
            self._tail_reader.join(0.5 if not self.running() else 0)
            text = list(self._tail)
        elif self.log_path is not None:
            try:
                text = self.log_path.read_text(errors="replace").strip().splitlines()
            except FileNotFoundError:
                text = []
        else:
            text = []
        return " | ".join(line.strip() for line in text[-lines:] if line.strip())

    def _keep_tail(self, stream: IO[bytes]) -> None:
        with stream:
            for raw in stream:
                self._tail.append(raw.decode(errors="replace").rstrip())

    # -- stopping -------------------------------------------------------------------------------
    def signal(self, sig: signal.Signals) -> None:
        if self.running():
            try:
                self.popen.send_signal(sig)
            except ProcessLookupError:
                pass  # it exited between the check and the signal

    def kill(self, timeout_s: float = KILL_TIMEOUT_S) -> int | None:
        """SIGKILL to the whole group (a crash, not a close); returns once nothing of the group is left."""
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        code = self.popen.wait(timeout=timeout_s)
        wait_until(
            lambda: not self.group_alive(),
            timeout_s,
            f"{self.name}: processes of group {self.pid} still running after SIGKILL",
        )
        return code

    def stop(self, timeout_s: float = DEFAULT_STOP_TIMEOUT_S) -> int | None:
        """SIGTERM to the child (it stops what it started, as on Ctrl-C), then SIGKILL of its group if anything
        of it still runs after ``timeout_s``. Returns the child's exit code."""
        if self.running():
            self.signal(signal.SIGTERM)
            try:
                self.popen.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                pass
        if self.running() or self.group_alive():
            self.kill()
        return self.popen.poll()

    def wait(self, timeout_s: float) -> int:
        return self.popen.wait(timeout=timeout_s)


def spawn(
    cmd: Sequence[str],
    *,
    name: str,
    log_path: Path | None = None,
    stdin: Any = subprocess.DEVNULL,
    stdout: Any = None,
    stderr: Any = None,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    pidfile: Path | None = None,
    dies_with_parent: bool = True,
) -> Child:
    """Start ``cmd``. Output goes to ``log_path`` when given (stdout and stderr unless they are set), else
    where ``stdout``/``stderr`` say (``subprocess.PIPE``: read by the caller; a piped stderr's tail is kept).

    ``pidfile`` records pid and creation time at once, for processes other commands act on (cluster
    nodes). Those outlive this command: ``dies_with_parent=False``.
    """
    log = None
    if log_path is not None:
        log_path.parent.mkdir(parents=True, exist_ok=True)
        log = open(log_path, "ab")  # noqa: SIM115 - the child holds its own copy; ours is closed below
        stdout = log if stdout is None else stdout
        stderr = (subprocess.STDOUT if stdout is log else log) if stderr is None else stderr
    try:
        popen = subprocess.Popen(
            guarded(cmd) if dies_with_parent else list(cmd),
            cwd=cwd,
            env=dict(env) if env is not None else None,
            stdin=stdin,
            stdout=stdout,
            stderr=stderr,
            start_new_session=True,
        )
    except OSError as e:
        raise ChildStartError(f"cannot start {name} ({cmd[0]}): {e.strerror or e}") from e
    finally:
        if log is not None:
            log.close()
    try:
        tracked = TrackedProcess(popen.pid, psutil.Process(popen.pid).create_time())
    except psutil.NoSuchProcess:
        tracked = TrackedProcess(popen.pid, 0.0)  # exited already: seen as down
    if pidfile is not None:
        pidfile.parent.mkdir(parents=True, exist_ok=True)
        write_pidfile(pidfile, tracked)
    # While this command runs its Popen is kept, so TrackedProcess can reap it; once we exit, init does.
    keep_for_reaping(popen)
    return Child(name, popen, tracked, log_path)


class ChildStartError(OSError):
    """The command could not be executed at all (no such file, not executable)."""


class Supervisor:
    """Every child one run started, stopped in reverse order of start (ducktape's service registry)."""

    def __init__(self) -> None:
        self.children: list[Child] = []

    def spawn(self, cmd: Sequence[str], **kwargs: Any) -> Child:
        child = spawn(cmd, **kwargs)
        self.children.append(child)
        return child

    def running(self) -> list[Child]:
        return [c for c in self.children if c.running() or c.group_alive()]

    def stop_all(self, timeout_s: float = DEFAULT_STOP_TIMEOUT_S) -> list[str]:
        """Stop every child still running; returns what could not be stopped (empty when all are gone)."""
        problems = []
        for child in reversed(self.children):
            try:
                if child.running() or child.group_alive():
                    child.stop(timeout_s)
            except (WaitTimeout, subprocess.TimeoutExpired) as e:
                problems.append(f"{child.name} (pid {child.pid}): {e}")
        return problems


@dataclass(frozen=True)
class Finished:
    returncode: int
    output: str  # stdout and stderr interleaved; empty when not captured


def run_to_end(
    cmd: Sequence[str],
    *,
    name: str,
    timeout_s: float | None = None,
    capture: bool = True,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> Finished:
    """Run a short-lived command (Maven, ``java -version``, a storage format) to completion.

    On a timeout (``subprocess.TimeoutExpired``) or Ctrl-C its whole group is killed before the error propagates.
    """
    pipe = subprocess.PIPE if capture else None
    child = spawn(cmd, name=name, stdout=pipe, stderr=subprocess.STDOUT if capture else None, cwd=cwd, env=env)
    try:
        out, _ = child.popen.communicate(timeout=timeout_s)
    except BaseException:
        child.kill()
        raise
    return Finished(child.popen.returncode, (out or b"").decode(errors="replace"))
