"""Process supervision on real (non-Kafka) processes: small, fast, and the same code paths."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

from failsafe.cluster.process import DOWN, PAUSED, UP, TrackedProcess, read_pidfile, start_process
from failsafe.waiting import wait_until

SLEEPER = [sys.executable, "-c", "import time; time.sleep(120)"]


def _start(tmp_path: Path) -> TrackedProcess:
    return start_process(SLEEPER, tmp_path / "p.log", tmp_path / "p.pid", cwd=tmp_path)


def test_pidfile_records_the_started_process(tmp_path: Path) -> None:
    tracked = _start(tmp_path)
    try:
        assert read_pidfile(tmp_path / "p.pid") == tracked
        assert tracked.state() == UP
    finally:
        tracked.stop(5, signal.SIGKILL)
    assert tracked.state() == DOWN


def test_pause_and_resume_are_observable(tmp_path: Path) -> None:
    tracked = _start(tmp_path)
    try:
        tracked.signal_group(signal.SIGSTOP)
        wait_until(lambda: tracked.state() == PAUSED, 5, "not paused")
        tracked.signal_group(signal.SIGCONT)
        wait_until(lambda: tracked.state() == UP, 5, "not resumed")
    finally:
        tracked.stop(5, signal.SIGKILL)


def test_sigterm_stops_a_paused_process(tmp_path: Path) -> None:
    tracked = _start(tmp_path)
    tracked.signal_group(signal.SIGSTOP)
    wait_until(lambda: tracked.state() == PAUSED, 5, "not paused")
    tracked.stop(5, signal.SIGTERM)
    assert not tracked.alive()


def test_a_recycled_pid_is_not_ours(tmp_path: Path) -> None:
    tracked = _start(tmp_path)
    try:
        impostor = TrackedProcess(tracked.pid, tracked.create_time - 1000)
        assert not impostor.alive()
        assert impostor.signal_group(signal.SIGKILL) is False
        assert tracked.alive()
    finally:
        tracked.stop(5, signal.SIGKILL)


def test_missing_or_garbled_pidfile_reads_as_none(tmp_path: Path) -> None:
    assert read_pidfile(tmp_path / "none.pid") is None
    (tmp_path / "bad.pid").write_text("garbage")
    assert read_pidfile(tmp_path / "bad.pid") is None
