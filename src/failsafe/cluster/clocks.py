"""Each Kafka node's own clock, set apart from real time by a file (what clock faults act through).

A cluster made with ``--clock-faults`` starts every broker and controller with Debian's libfaketime preloaded
(``LD_PRELOAD``) and told to read its offset from DIR/clocks/server-N (``FAKETIME_TIMESTAMP_FILE``), cached for a
second (``FAKETIME_CACHE_DURATION=1``): a JVM saw a change 0.3 to 2.1 s after it was written. The file holds ``+0``
(real time) unless a clock fault is in force.

What the library does to a JVM on this machine (libfaketime 0.9.10, Java 17; benchmarks/clock_probe.py measures it
into docs/benchmarks/clock-probe.json): ``System.currentTimeMillis`` and ``Instant.now`` move by the offset;
``System.nanoTime`` and timed waits (``Thread.sleep``, a scheduled executor) stay real, as they do when NTP steps a
machine's clock: the library is told to leave the monotonic clock alone
(``FAKETIME_DONT_FAKE_MONOTONIC=1``) and not to apply its "monotonic fix" (``FAKETIME_FORCE_MONOTONIC_FIX=0``;
with it, 200 ms of timed waits took 297 ms at the median). Left to fake the monotonic clock too, the library moves
nanoTime with the offset and back (a run of retention-clock-jump so made ended with no broker registered and
unfenced).

A fault's offsets are written by a keeper process (``python -m failsafe.cluster.clocks FILE=OFFSET...``), which
steps them on for a drift and puts every clock back to real time when its stdin closes: when the fault ends, and
when the failsafe that started it dies (a SIGKILL mid-fault). Its pidfile is DIR/clocks/keeper-*.pid, so down and
clean stop a keeper left behind and reset every clock.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from failsafe.errors import UserError
from failsafe.supervisor import read_pidfile, spawn

LIBRARY_CANDIDATES = (
    "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1",
    "/usr/lib/aarch64-linux-gnu/faketime/libfaketimeMT.so.1",
    "/usr/lib/faketime/libfaketimeMT.so.1",
)
REAL_TIME = "+0"
CACHE_S = 1  # how long the library keeps an offset before it reads its file again
SEEN_WITHIN_S = 2.5  # how late a node may see a change of its file (measured: 0.3 to 2.1 s; clock-probe.json)
DRIFT_STEP_S = 0.5
KEEPER_START_TIMEOUT_S = 30.0
KEEPER_STOP_TIMEOUT_S = 10.0
_KEEPER_PREFIX = "keeper-"


class ClockFaultsUnavailable(UserError):
    """This machine cannot set a node's clock apart (libfaketime missing)."""


def library() -> Path:
    """The multi-threaded libfaketime preload library; one clear line when it is missing."""
    for candidate in LIBRARY_CANDIDATES:
        if Path(candidate).exists():
            return Path(candidate)
    raise ClockFaultsUnavailable(
        "--clock-faults: libfaketime is not installed (Debian: apt-get install libfaketime); looked for "
        + ", ".join(LIBRARY_CANDIDATES)
    )


def clocks_dir(root: Path) -> Path:
    return root / "clocks"


def clock_file(root: Path, node_name: str) -> Path:
    return clocks_dir(root) / node_name


def node_env(root: Path, node_name: str) -> dict[str, str]:
    """The environment a node starts with: this one, the library preloaded and pointed at its clock file (made at real
    time when missing; a clock a keeper left apart stays so until the keeper ends)."""
    path = clock_file(root.resolve(), node_name)
    if not path.exists():
        write_offset(path, 0.0)
    return {
        **os.environ,
        "LD_PRELOAD": str(library()),
        "FAKETIME_TIMESTAMP_FILE": str(path),
        "FAKETIME_CACHE_DURATION": str(CACHE_S),
        # The monotonic clock stays real (System.nanoTime, timed waits), as an NTP step leaves it; the library's
        # "monotonic fix" is off, or timed waits last half as long again (benchmarks/clock_probe.py).
        "FAKETIME_DONT_FAKE_MONOTONIC": "1",
        "FAKETIME_FORCE_MONOTONIC_FIX": "0",
    }


def offset_text(offset_s: float) -> str:
    """libfaketime's relative offset: ``+N`` / ``-N`` seconds (fractions allowed)."""
    return REAL_TIME if offset_s == 0 else f"{offset_s:+.3f}"


def write_offset(path: Path, offset_s: float) -> None:
    """Set a clock's offset whole: written aside and renamed, so the library never reads half a line."""
    path.parent.mkdir(parents=True, exist_ok=True)
    aside = path.with_name(f".{path.name}.{os.getpid()}")
    aside.write_text(offset_text(offset_s) + "\n")
    aside.replace(path)


def read_offset(path: Path) -> float | None:
    """The offset a clock file holds now, in seconds; None when it has none."""
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    try:
        return float(text)
    except ValueError:
        return None


def offsets(root: Path) -> dict[str, float | None]:
    """Every node's clock offset now, by node name."""
    folder = clocks_dir(root)
    if not folder.is_dir():
        return {}
    return {p.name: read_offset(p) for p in sorted(folder.iterdir()) if p.name.startswith("server-")}


def reset_all(root: Path) -> None:
    """Every clock of the cluster back to real time, after stopping any keeper left behind (down, clean)."""
    folder = clocks_dir(root)
    if not folder.is_dir():
        return
    for pidfile in folder.glob(f"{_KEEPER_PREFIX}*.pid"):
        keeper = read_pidfile(pidfile)
        if keeper is not None:
            keeper.stop(KEEPER_STOP_TIMEOUT_S)
        pidfile.unlink(missing_ok=True)
    for path in offsets(root):
        write_offset(folder / path, 0.0)


@dataclass(frozen=True)
class Setting:
    """One clock a keeper holds: its file, its offset when the fault starts, and how fast that offset grows."""

    path: Path
    offset_s: float
    drift_ppm: float = 0.0

    def at(self, elapsed_s: float) -> float:
        return self.offset_s + self.drift_ppm * 1e-6 * elapsed_s

    def arg(self) -> str:
        return f"{self.path}={self.offset_s!r}:{self.drift_ppm!r}"

    @classmethod
    def parse(cls, arg: str) -> Setting:
        path, _, numbers = arg.rpartition("=")
        offset, _, drift = numbers.partition(":")
        return cls(Path(path), float(offset), float(drift or 0.0))


class Keeper:
    """A running keeper of some clocks (the process ``python -m failsafe.cluster.clocks``): started when a fault starts,
    ended (every clock back to real time) by ``end`` or by this process's death."""

    def __init__(self, settings: list[Setting], name: str, log_file: Path) -> None:
        folder = settings[0].path.parent  # DIR/clocks, where down and clean look for keepers
        folder.mkdir(parents=True, exist_ok=True)
        self.pidfile = folder / f"{_KEEPER_PREFIX}{name}.pid"
        self._proc = spawn(
            [sys.executable, "-m", "failsafe.cluster.clocks", *(s.arg() for s in settings)],
            name=f"clock-keeper {name}",
            log_path=log_file,
            pidfile=self.pidfile,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            cwd=folder,
            dies_with_parent=False,
        ).popen
        self._expect("set", KEEPER_START_TIMEOUT_S)

    def _expect(self, word: str, timeout_s: float) -> None:
        assert self._proc.stdout is not None
        ready, _, _ = select.select([self._proc.stdout], [], [], timeout_s)
        line = self._proc.stdout.readline().decode().strip() if ready else ""
        if line != word:
            self._proc.kill()
            self._proc.wait()
            for stream in (self._proc.stdin, self._proc.stdout):
                if stream is not None and not stream.closed:
                    with contextlib.suppress(BrokenPipeError):
                        stream.close()
            raise UserError(f"the clock keeper did not {word} the clocks within {timeout_s:g}s (it said {line!r})")

    def end(self) -> None:
        """Every clock it holds back to real time, and the keeper gone."""
        assert self._proc.stdin is not None
        if not self._proc.stdin.closed:
            try:
                self._proc.stdin.close()
            except BrokenPipeError:
                pass
        try:
            self._expect("real", KEEPER_STOP_TIMEOUT_S)
            self._proc.wait(timeout=KEEPER_STOP_TIMEOUT_S)
        finally:
            if self._proc.stdout is not None:
                self._proc.stdout.close()
        self.pidfile.unlink(missing_ok=True)


def keep(settings: list[Setting], stdin=None, out=None, clock=time.monotonic) -> None:
    """Hold ``settings`` until stdin closes (a drift stepped every DRIFT_STEP_S), then put every clock back."""
    stdin = stdin if stdin is not None else sys.stdin.buffer
    out = out if out is not None else sys.stdout
    start = clock()
    try:
        for s in settings:
            write_offset(s.path, s.at(0.0))
        print("set", file=out, flush=True)
        while True:
            ready, _, _ = select.select([stdin], [], [], DRIFT_STEP_S)
            if ready and not stdin.readline():
                break
            for s in settings:
                if s.drift_ppm:
                    write_offset(s.path, s.at(clock() - start))
    finally:
        for s in settings:
            write_offset(s.path, 0.0)
        print("real", file=out, flush=True)


def main(argv: list[str]) -> int:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # down/clean: the finally block puts the clocks back
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C of failsafe ends the keeper through its stdin
    keep([Setting.parse(a) for a in argv])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
