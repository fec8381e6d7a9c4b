"""The process supervisor on real (non-Kafka) processes: small, fast, and the same code paths as for JVMs."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from failsafe.supervisor import DOWN, PAUSED, UP, Supervisor, TrackedProcess, read_pidfile, spawn
from failsafe.waiting import wait_until

SLEEPER = [sys.executable, "-c", "import time; time.sleep(120)"]
# A child that starts a grandchild in its group, as the pipeline's driver starts Spark's JVM.
WITH_GRANDCHILD = [
    sys.executable,
    "-c",
    "import subprocess, sys, time; p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)']); "
    "print(p.pid, flush=True); time.sleep(120)",
]
DEAF = [
    sys.executable,
    "-c",
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('up', flush=True); time.sleep(120)",
]


def _start(tmp_path: Path) -> TrackedProcess:
    return spawn(
        SLEEPER,
        name="sleeper",
        log_path=tmp_path / "p.log",
        pidfile=tmp_path / "p.pid",
        cwd=tmp_path,
        dies_with_parent=False,
    ).tracked


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


def test_every_child_leads_its_own_process_group(tmp_path: Path) -> None:
    child = spawn(SLEEPER, name="sleeper")
    try:
        assert os.getpgid(child.pid) == child.pid != os.getpgid(0)
    finally:
        child.kill()


def test_kill_takes_the_grandchildren_too(tmp_path: Path) -> None:
    child = spawn(WITH_GRANDCHILD, name="driver", log_path=tmp_path / "driver.log")
    wait_until(lambda: (tmp_path / "driver.log").read_text().strip(), 30, "the child did not start its grandchild")
    grandchild = int((tmp_path / "driver.log").read_text().split()[0])
    assert psutil.pid_exists(grandchild) and child.group_alive()
    assert child.kill() == -signal.SIGKILL
    assert not child.group_alive()
    wait_until(
        lambda: not psutil.pid_exists(grandchild) or psutil.Process(grandchild).status() == psutil.STATUS_ZOMBIE,
        10,
        "the grandchild outlived the kill of its group",
    )


def test_stop_kills_the_group_of_a_child_deaf_to_sigterm(tmp_path: Path) -> None:
    child = spawn(DEAF, name="deaf", stdout=subprocess.PIPE)
    assert child.popen.stdout.readline() == b"up\n"
    assert child.stop(timeout_s=0.5) == -signal.SIGKILL
    assert not child.running() and not child.group_alive()
    child.popen.stdout.close()


def test_a_piped_stderr_is_kept_as_a_tail(tmp_path: Path) -> None:
    child = spawn(
        [sys.executable, "-c", "import sys; [print(f'line {i}', file=sys.stderr) for i in range(30)]; sys.exit(3)"],
        name="talker",
        stderr=subprocess.PIPE,
    )
    assert child.wait(30) == 3
    assert child.tail(2) == "line 28 | line 29"


def test_stop_of_a_finished_child_reports_its_exit(tmp_path: Path) -> None:
    child = spawn([sys.executable, "-m", "failsafe", "--version"], name="version", log_path=tmp_path / "log")
    assert child.wait(60) == 0
    assert child.stop() == 0
    assert "failsafe" in (tmp_path / "log").read_text()
    assert child.tail(1).startswith("failsafe")


def test_a_child_dies_with_the_process_that_started_it(tmp_path: Path) -> None:
    """The parent-death guard: SIGKILL the parent (no chance to clean up), its guarded child gets SIGKILL too."""
    script = (
        "import sys, time\nfrom failsafe.supervisor import spawn\n"
        f"c = spawn({SLEEPER!r}, name='orphan')\nprint(c.pid, flush=True)\ntime.sleep(120)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, start_new_session=True)
    try:
        orphan = int(parent.stdout.readline())
        # setpriv sets the guard, then execs the command: once the command runs, the guard is set.
        # An empty command line: the process is between its fork and its exec (seen under load).
        wait_until(
            lambda: bool(cmd := psutil.Process(orphan).cmdline()) and "setpriv" not in cmd[0],
            10,
            "setpriv did not exec the command",
        )
        parent.kill()
        parent.wait(10)
        wait_until(
            lambda: not psutil.pid_exists(orphan) or psutil.Process(orphan).status() == psutil.STATUS_ZOMBIE,
            10,
            "the child outlived its parent",
        )
    finally:
        if parent.poll() is None:
            parent.kill()
        parent.wait(10)
        parent.stdout.close()


def test_a_command_that_cannot_start_is_one_clear_error(tmp_path: Path) -> None:
    from failsafe.supervisor import ChildStartError

    with pytest.raises(ChildStartError, match="cannot start missing"):
        spawn([str(tmp_path / "no-such-program")], name="missing", dies_with_parent=False)


def test_the_supervisor_stops_every_child_it_started_in_reverse_order(tmp_path: Path) -> None:
    order = tmp_path / "order"
    script = (
        "import signal, sys, time\ndef bye(*_):\n    open(sys.argv[1], 'a').write(sys.argv[2] + '\\n'); "
        "sys.exit(0)\nsignal.signal(signal.SIGTERM, bye)\nprint('up', flush=True)\ntime.sleep(120)\n"
    )
    supervisor = Supervisor()
    children = [
        supervisor.spawn([sys.executable, "-c", script, str(order), name], name=name, stdout=subprocess.PIPE)
        for name in ("first", "second", "third")
    ]
    for child in children:
        assert child.popen.stdout.readline() == b"up\n"
    assert supervisor.stop_all(timeout_s=10) == []
    assert order.read_text().split() == ["third", "second", "first"]
    assert supervisor.running() == []
    for child in children:
        child.popen.stdout.close()


# A child whose leader thread exits first while another thread runs on until RELEASE exists, as a JVM's launcher thread
# can exit before the JVM's shutdown is over: /proc then says zombie for a process that is still running.
LEADER_EXITS_FIRST = [
    sys.executable,
    "-c",
    "import ctypes, os, sys, threading, time; release = sys.argv[1]; "
    "threading.Thread(target=lambda: [time.sleep(0.01) for _ in iter(lambda: os.path.exists(release), True)]).start(); "
    "print('up', flush=True); ctypes.CDLL(None).pthread_exit(None)",
]


def test_a_process_whose_leader_thread_exited_is_running_until_its_last_thread_ends(tmp_path: Path) -> None:
    release = tmp_path / "release"
    child = spawn([*LEADER_EXITS_FIRST, str(release)], name="leader-exits", log_path=tmp_path / "l.log", cwd=tmp_path)
    try:
        wait_until(
            lambda: psutil.Process(child.pid).status() == psutil.STATUS_ZOMBIE, 5, "the leader thread did not exit"
        )
        assert psutil.Process(child.pid).num_threads() > 1
        assert child.tracked.alive() and child.tracked.state() == UP, (
            "a zombie leader with a live thread is still running"
        )
        release.touch()
        wait_until(lambda: not child.tracked.alive(), 5, "not gone once its last thread ended")
        assert not psutil.pid_exists(child.pid), "gone, and reaped: no zombie left"
    finally:
        release.touch()
        child.kill()


def test_a_child_killed_behind_the_supervisors_back_is_reaped_at_the_next_start(tmp_path: Path) -> None:
    first = spawn(SLEEPER, name="first", log_path=tmp_path / "a.log", cwd=tmp_path)
    os.killpg(first.pid, signal.SIGKILL)
    wait_until(lambda: psutil.Process(first.pid).status() == psutil.STATUS_ZOMBIE, 5, "not dead")
    second = spawn(SLEEPER, name="second", log_path=tmp_path / "b.log", cwd=tmp_path)
    try:
        assert not psutil.pid_exists(first.pid), "the killed child stayed a zombie"
    finally:
        second.kill()
