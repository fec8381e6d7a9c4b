"""The clocks of a cluster made with clock faults, without a cluster: offset files, the keeper loop with a fake stdin
and clock, and the keeper process (python -m failsafe.cluster.clocks) on tmp files: set, real, and every way it ends."""

from __future__ import annotations

import io
import itertools
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from failsafe.cluster import clocks
from failsafe.cluster.clocks import Keeper, Setting, keep, offsets, read_offset, reset_all, write_offset
from failsafe.errors import UserError
from failsafe.supervisor import read_pidfile


def _eventually(check: Callable[[], bool], timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, "not within the time allowed"
        time.sleep(0.02)


def _text(path: Path) -> str:
    return path.read_text()


# -- offset files ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("offset", "text"),
    [
        (0.0, "+0\n"),
        (-0.0, "+0\n"),
        (3600, "+3600.000\n"),
        (-1.5, "-1.500\n"),
        (0.0004, "+0.000\n"),
        (2.25, "+2.250\n"),
    ],
)
def test_an_offset_is_written_as_libfaketime_reads_it(tmp_path: Path, offset: float, text: str) -> None:
    path = tmp_path / "clocks" / "server-0"
    write_offset(path, offset)
    assert _text(path) == text
    assert read_offset(path) == float(text)


def test_an_offset_is_written_aside_and_renamed(tmp_path: Path) -> None:
    path = tmp_path / "server-0"
    write_offset(path, 1.0)
    inode = path.stat().st_ino
    write_offset(path, -1.0)
    assert path.stat().st_ino != inode, "a new file renamed over the old one, not the old one rewritten"
    assert [p.name for p in tmp_path.iterdir()] == ["server-0"], "nothing left aside"


def test_a_reader_never_sees_half_an_offset(tmp_path: Path) -> None:
    path = tmp_path / "server-0"
    write_offset(path, 1.0)
    seen: set[str] = set()
    done = threading.Event()

    def reader() -> None:
        while not done.is_set():
            seen.add(path.read_text())

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        for i in range(400):
            write_offset(path, 1.0 if i % 2 else -1.0)
    finally:
        done.set()
        thread.join()
    assert seen and seen <= {"+1.000\n", "-1.000\n"}


@pytest.mark.parametrize(("text", "offset"), [("+0\n", 0.0), ("-3600.000", -3600.0), ("+0.125\n", 0.125)])
def test_an_offset_is_read_back(tmp_path: Path, text: str, offset: float) -> None:
    path = tmp_path / "server-1"
    path.write_text(text)
    assert read_offset(path) == offset


def test_a_clock_without_an_offset_reads_none(tmp_path: Path) -> None:
    assert read_offset(tmp_path / "missing") is None
    (tmp_path / "garbled").write_text("@2024-01-01 00:00:00\n")
    assert read_offset(tmp_path / "garbled") is None
    (tmp_path / "empty").write_text("")
    assert read_offset(tmp_path / "empty") is None


def test_offsets_are_every_nodes_by_name(tmp_path: Path) -> None:
    assert offsets(tmp_path) == {}
    folder = clocks.clocks_dir(tmp_path)
    write_offset(folder / "server-1", -2.0)
    write_offset(folder / "server-0", 0.0)
    (folder / "server-2").write_text("nonsense")
    (folder / "keeper-x.pid").write_text("1 2.0\n")
    (folder / ".server-0.123").write_text("+9\n")
    assert offsets(tmp_path) == {"server-0": 0.0, "server-1": -2.0, "server-2": None}
    assert list(offsets(tmp_path)) == ["server-0", "server-1", "server-2"]


# -- settings ----------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "setting",
    [
        Setting(Path("/tmp/c/clocks/server-0"), 3600.0),
        Setting(Path("/tmp/c/clocks/server-1"), -0.1, 500.0),
        Setting(Path("/tmp/c/clocks/server-2"), 0.0, -50000.0),
        Setting(Path("/tmp/a=b:c/clocks/server-1000"), 1 / 3, 1e-7),
    ],
)
def test_a_setting_goes_to_the_keeper_and_back_whole(setting: Setting) -> None:
    assert Setting.parse(setting.arg()) == setting


def test_a_setting_without_a_drift_parses() -> None:
    assert Setting.parse("/c/clocks/server-0=-60") == Setting(Path("/c/clocks/server-0"), -60.0, 0.0)


def test_a_setting_drifts_from_its_offset() -> None:
    assert Setting(Path("x"), 5.0).at(1000.0) == 5.0
    assert Setting(Path("x"), 1.0, 500.0).at(2000.0) == pytest.approx(2.0)
    assert Setting(Path("x"), 0.0, -50000.0).at(10.0) == pytest.approx(-0.5)
    assert Setting(Path("x"), 2.0, 1e6).at(0.0) == 2.0


# -- the keeper loop ---------------------------------------------------------------------------------------------------
@pytest.fixture
def pipe() -> Iterator[tuple[io.BufferedReader, int]]:
    """A fake stdin: its reading end, and the writing end's fd (closed: the keeper's parent gone)."""
    r, w = os.pipe()
    stdin = os.fdopen(r, "rb")
    yield stdin, w
    stdin.close()
    try:
        os.close(w)
    except OSError:
        pass


def _clock(start: float, then: float) -> Callable[[], float]:
    """A clock at ``start`` on its first reading and at ``then`` on every later one."""
    readings = itertools.chain([start], itertools.repeat(then))
    return lambda: next(readings)


def test_the_keeper_sets_the_clocks_steps_a_drift_and_puts_them_back_when_stdin_closes(
    tmp_path: Path, pipe: tuple[io.BufferedReader, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(clocks, "DRIFT_STEP_S", 0.01)
    stdin, w = pipe
    folder = tmp_path / "clocks"
    jump, drift, both = (
        Setting(folder / "server-0", 60.0),
        Setting(folder / "server-1", 0.0, 20000.0),
        Setting(folder / "server-2", -2.5, -20000.0),
    )
    out = io.StringIO()
    failed: list[BaseException] = []

    def run() -> None:
        try:
            keep([jump, drift, both], stdin=stdin, out=out, clock=_clock(1000.0, 1050.0))
        except BaseException as e:  # noqa: BLE001 - reported by the test
            failed.append(e)

    thread = threading.Thread(target=run)
    thread.start()
    try:
        _eventually(lambda: out.getvalue() == "set\n")
        assert read_offset(jump.path) == 60.0
        # 50 s of the fake clock at 20000 ppm: one second ahead; and one more second behind.
        _eventually(lambda: read_offset(drift.path) == 1.0)
        assert read_offset(both.path) == -3.5 and read_offset(jump.path) == 60.0
        os.write(w, b"a line is no end\n")
        time.sleep(0.1)
        assert thread.is_alive() and read_offset(drift.path) == 1.0
    finally:
        os.close(w)
        thread.join(10)
    assert not thread.is_alive() and not failed
    assert out.getvalue() == "set\nreal\n"
    assert [_text(s.path) for s in (jump, drift, both)] == ["+0\n"] * 3


def test_the_keeper_writes_the_offsets_in_order(
    tmp_path: Path, pipe: tuple[io.BufferedReader, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A line on stdin wakes the loop (a drift step), its end ends it: set, one step, real."""
    written: list[tuple[str, float]] = []
    real_write = clocks.write_offset

    def recording(path: Path, offset_s: float) -> None:
        written.append((path.name, offset_s))
        real_write(path, offset_s)

    monkeypatch.setattr(clocks, "write_offset", recording)
    monkeypatch.setattr(clocks, "DRIFT_STEP_S", 5.0)  # only stdin wakes it
    stdin, w = pipe
    os.write(w, b"x\n")
    os.close(w)
    out = io.StringIO()
    settings = [Setting(tmp_path / "server-0", 10.0), Setting(tmp_path / "server-1", 0.0, 20000.0)]
    keep(settings, stdin=stdin, out=out, clock=_clock(0.0, 100.0))
    assert written == [("server-0", 10.0), ("server-1", 0.0), ("server-1", 2.0), ("server-0", 0.0), ("server-1", 0.0)]
    assert out.getvalue() == "set\nreal\n"


def test_the_keeper_puts_every_clock_back_when_its_loop_raises(
    tmp_path: Path, pipe: tuple[io.BufferedReader, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(clocks, "DRIFT_STEP_S", 0.01)
    stdin, _ = pipe
    readings = iter([0.0])

    def broken_clock() -> float:
        try:
            return next(readings)
        except StopIteration:
            raise RuntimeError("the clock broke") from None

    settings = [Setting(tmp_path / "server-0", 3600.0), Setting(tmp_path / "server-1", 5.0, 100.0)]
    out = io.StringIO()
    with pytest.raises(RuntimeError, match="the clock broke"):
        keep(settings, stdin=stdin, out=out, clock=broken_clock)
    assert out.getvalue() == "set\nreal\n"
    assert offsets(tmp_path.parent) == {} and [_text(s.path) for s in settings] == ["+0\n", "+0\n"]


def test_the_keeper_puts_every_clock_back_when_stdin_fails(tmp_path: Path) -> None:
    class Failing(io.RawIOBase):
        def fileno(self) -> int:
            raise OSError("no descriptor")

    settings = [Setting(tmp_path / "server-0", -60.0)]
    out = io.StringIO()
    with pytest.raises(OSError, match="no descriptor"):
        keep(settings, stdin=Failing(), out=out)
    assert out.getvalue() == "set\nreal\n" and _text(settings[0].path) == "+0\n"


# -- the keeper process ------------------------------------------------------------------------------------------------
@pytest.fixture
def keepers() -> Iterator[list[Keeper]]:
    """The keepers a test starts: any still running at its end is killed (by its own pid)."""
    started: list[Keeper] = []
    yield started
    for keeper in started:
        if keeper._proc.poll() is None:
            keeper._proc.kill()
            keeper._proc.wait(10)
        for stream in (keeper._proc.stdin, keeper._proc.stdout):
            if stream is not None and not stream.closed:
                stream.close()


def _start(keepers: list[Keeper], settings: list[Setting], name: str, tmp_path: Path) -> Keeper:
    keeper = Keeper(settings, name, tmp_path / "logs" / "clock-keeper.log")
    keepers.append(keeper)
    return keeper


def _settings(tmp_path: Path) -> list[Setting]:
    """Two clocks at real time, as the nodes of a cluster with clock faults made them (node_env), to be set apart."""
    folder = clocks.clocks_dir(tmp_path)
    settings = [Setting(folder / "server-0", 3600.0), Setting(folder / "server-1", -1.5, 1e6)]
    for s in settings:
        write_offset(s.path, 0.0)
    return settings


def test_a_keeper_sets_the_clocks_and_its_end_puts_them_back(tmp_path: Path, keepers: list[Keeper]) -> None:
    settings = _settings(tmp_path)
    keeper = _start(keepers, settings, "clock-jump-0-5", tmp_path)
    assert keeper.pidfile == tmp_path / "clocks" / "keeper-clock-jump-0-5.pid"
    tracked = read_pidfile(keeper.pidfile)
    assert tracked is not None and tracked.pid == keeper._proc.pid and tracked.alive()
    assert read_offset(settings[0].path) == 3600.0
    # Twice as fast as real time: ahead of where it started within a few of the keeper's steps.
    _eventually(lambda: (read_offset(settings[1].path) or -1.5) > -0.5)
    keeper.end()
    assert keeper._proc.returncode == 0
    assert offsets(tmp_path) == {"server-0": 0.0, "server-1": 0.0}
    assert not keeper.pidfile.exists() and not tracked.alive()
    assert (tmp_path / "logs" / "clock-keeper.log").exists()


def test_down_stops_a_keeper_left_behind_and_puts_every_clock_back(tmp_path: Path, keepers: list[Keeper]) -> None:
    settings = _settings(tmp_path)
    keeper = _start(keepers, settings, "left", tmp_path)
    write_offset(tmp_path / "clocks" / "server-2", 7.0)  # a clock no keeper holds now
    reset_all(tmp_path)
    assert keeper._proc.wait(10) == 0, "stopped by SIGTERM, through its own finally"
    assert keeper._proc.stdout is not None and keeper._proc.stdout.read().decode() == "real\n"
    assert not keeper.pidfile.exists()
    assert offsets(tmp_path) == {"server-0": 0.0, "server-1": 0.0, "server-2": 0.0}
    time.sleep(3 * clocks.DRIFT_STEP_S)
    assert offsets(tmp_path) == {"server-0": 0.0, "server-1": 0.0, "server-2": 0.0}, "no keeper drifts them on"


def test_down_clears_the_pidfile_of_a_keeper_gone_already(tmp_path: Path, keepers: list[Keeper]) -> None:
    keeper = _start(keepers, _settings(tmp_path), "gone", tmp_path)
    keeper._proc.kill()
    keeper._proc.wait(10)
    assert keeper.pidfile.exists() and offsets(tmp_path)["server-0"] == 3600.0  # SIGKILL: no finally
    reset_all(tmp_path)
    assert not keeper.pidfile.exists() and offsets(tmp_path) == {"server-0": 0.0, "server-1": 0.0}


def test_down_of_a_cluster_without_clocks_does_nothing(tmp_path: Path) -> None:
    reset_all(tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_a_keeper_whose_parent_is_gone_puts_the_clocks_back(tmp_path: Path, keepers: list[Keeper]) -> None:
    settings = _settings(tmp_path)
    keeper = _start(keepers, settings, "orphan", tmp_path)
    assert keeper._proc.stdin is not None
    keeper._proc.stdin.close()  # what the kernel does to the pipe when failsafe dies
    assert keeper._proc.wait(10) == 0
    assert offsets(tmp_path) == {"server-0": 0.0, "server-1": 0.0}


def test_a_keeper_no_one_reads_still_puts_the_clocks_back(tmp_path: Path, keepers: list[Keeper]) -> None:
    """A SIGKILL of failsafe closes both ends of the keeper's pipes: it cannot say "real", and still puts them back."""
    settings = _settings(tmp_path)
    keeper = _start(keepers, settings, "unread", tmp_path)
    assert keeper._proc.stdin is not None and keeper._proc.stdout is not None
    keeper._proc.stdout.close()
    keeper._proc.stdin.close()
    keeper._proc.wait(10)
    assert offsets(tmp_path) == {"server-0": 0.0, "server-1": 0.0}


def test_a_keeper_that_cannot_set_the_clocks_is_a_clear_error(tmp_path: Path, keepers: list[Keeper]) -> None:
    folder = clocks.clocks_dir(tmp_path)
    (folder / "server-0").mkdir(parents=True)  # no file can be renamed over it
    with pytest.raises(UserError, match="did not set the clocks"):
        Keeper([Setting(folder / "server-0", 60.0)], "broken", tmp_path / "logs" / "clock-keeper.log")
    assert "Traceback" in (tmp_path / "logs" / "clock-keeper.log").read_text()


# -- a node's environment ----------------------------------------------------------------------------------------------
def test_a_machine_without_libfaketime_is_told_so(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(clocks, "LIBRARY_CANDIDATES", (str(tmp_path / "libfaketimeMT.so.1"),))
    with pytest.raises(clocks.ClockFaultsUnavailable, match="apt-get install libfaketime"):
        clocks.library()


def test_a_node_starts_with_the_library_reading_its_own_clock(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    lib = tmp_path / "libfaketimeMT.so.1"
    lib.write_bytes(b"")
    monkeypatch.setattr(clocks, "LIBRARY_CANDIDATES", ("/nonexistent/libfaketimeMT.so.1", str(lib)))
    monkeypatch.chdir(tmp_path)
    env = clocks.node_env(Path("cluster"), "server-0")
    path = tmp_path / "cluster" / "clocks" / "server-0"
    assert env["LD_PRELOAD"] == str(lib) and env["FAKETIME_TIMESTAMP_FILE"] == str(path)
    assert (env["FAKETIME_CACHE_DURATION"], env["FAKETIME_DONT_FAKE_MONOTONIC"]) == ("1", "1")
    assert env["FAKETIME_FORCE_MONOTONIC_FIX"] == "0" and env["PATH"] == os.environ["PATH"]
    assert _text(path) == "+0\n"
    write_offset(path, 30.0)  # a keeper holds it apart: a node started now starts there
    clocks.node_env(Path("cluster"), "server-0")
    assert read_offset(path) == 30.0
