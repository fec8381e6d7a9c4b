"""What a JVM sees of libfaketime on this machine: its wall clock, its monotonic clock and its timed waits, with each
way of loading the library failsafe considered (cluster/clocks.py says which it uses and why).

    .venv/bin/python benchmarks/clock_probe.py --out docs/benchmarks/clock-probe.json

For each setting, benchmarks/clock_probe/ClockProbe.java runs under the library reading a clock file, printing
System.currentTimeMillis and System.nanoTime after every 200 ms of timed waits (a Thread.sleep and a scheduled
executor's task); this script stamps each line with its own real clocks as it comes. The file holds +0, then +100
(a jump of 100 s forward) for JUMP_LINES lines, then +0 again. Recorded per setting: how far each JVM clock was from
real time during the jump and after it, how long after the file changed the JVM saw it, and how long the 200 ms of
timed waits really took.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.common import write_summary  # noqa: E402
from failsafe.cluster import clocks  # noqa: E402
from failsafe.jvm.java import find_java  # noqa: E402

PROBE = Path(__file__).resolve().parent / "clock_probe" / "ClockProbe.java"
JUMP_S = 100.0
BEFORE_LINES, JUMP_LINES, AFTER_LINES = 10, 15, 15
WAIT_MS = 200.0
SETTINGS = {
    # What failsafe uses: the wall clock apart, the monotonic clock real.
    "failsafe": {"FAKETIME_DONT_FAKE_MONOTONIC": "1", "FAKETIME_FORCE_MONOTONIC_FIX": "0"},
    # The library's default: the monotonic clock moved with the wall clock.
    "library-default": {},
    # The monotonic clock real, with the library's default "monotonic fix" on.
    "monotonic-real-with-fix": {"FAKETIME_DONT_FAKE_MONOTONIC": "1"},
}


def probe(java: str, setting: dict[str, str], folder: Path) -> dict:
    clock_file = folder / "clock"
    clocks.write_offset(clock_file, 0.0)
    env = {
        **os.environ,
        "LD_PRELOAD": str(clocks.library()),
        "FAKETIME_TIMESTAMP_FILE": str(clock_file),
        "FAKETIME_CACHE_DURATION": str(clocks.CACHE_S),
        **setting,
    }
    total = BEFORE_LINES + JUMP_LINES + AFTER_LINES
    proc = subprocess.Popen(
        [java, str(PROBE), str(total)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    rows, changes = [], {}
    for i in range(total):
        line = proc.stdout.readline()
        if not line:
            raise SystemExit(f"the probe ended after {i} lines: {proc.stderr.read() if proc.stderr else ''}")
        wall_ms, nano = (int(x) for x in line.split())
        rows.append((time.time_ns(), time.monotonic_ns(), wall_ms, nano))
        if i == BEFORE_LINES - 1:
            clocks.write_offset(clock_file, JUMP_S)
            changes["jump"] = (len(rows), time.monotonic_ns())
        if i == BEFORE_LINES + JUMP_LINES - 1:
            clocks.write_offset(clock_file, 0.0)
            changes["back"] = (len(rows), time.monotonic_ns())
    proc.wait(timeout=30)
    real0_ns, mono0_ns, _, nano0 = rows[0]

    def wall_off(r) -> float:
        return r[2] / 1e3 - r[0] / 1e9

    def nano_off(r) -> float:
        return (r[3] - nano0) / 1e9 - (r[1] - mono0_ns) / 1e9

    base = statistics.median(wall_off(r) for r in rows[:BEFORE_LINES])  # the JVM's millisecond against ours
    during = rows[BEFORE_LINES + JUMP_LINES - 5 : BEFORE_LINES + JUMP_LINES]
    after = rows[-5:]

    def seen_after_s(name: str, moved) -> float | None:
        start, at_ns = changes[name]
        first = next((r for r in rows[start:] if moved(r)), None)
        return None if first is None else round((first[1] - at_ns) / 1e9, 3)

    waits = [(b[1] - a[1]) / 1e6 for a, b in zip(rows, rows[1:], strict=False)]
    return {
        "env": setting,
        "wall_offset_during_jump_s": round(statistics.median(wall_off(r) - base for r in during), 3),
        "nano_offset_during_jump_s": round(statistics.median(nano_off(r) for r in during), 3),
        "wall_offset_after_s": round(statistics.median(wall_off(r) - base for r in after), 3),
        "nano_offset_after_s": round(statistics.median(nano_off(r) for r in after), 3),
        "jump_seen_after_s": seen_after_s("jump", lambda r: wall_off(r) - base > JUMP_S / 2),
        "back_seen_after_s": seen_after_s("back", lambda r: wall_off(r) - base < JUMP_S / 2),
        "timed_waits_ms": {"asked": WAIT_MS, "median": round(statistics.median(waits), 1), "max": round(max(waits), 1)},
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    java = str(find_java().executable)
    version = subprocess.run([java, "-version"], capture_output=True, text=True).stderr.splitlines()[0]
    with tempfile.TemporaryDirectory(prefix="clock-probe-") as folder:
        results = {name: probe(java, setting, Path(folder)) for name, setting in SETTINGS.items()}
    summary = {
        "what": "what a JVM sees of libfaketime: its clocks apart from real time during a jump of 100 s and after it, "
        "and the real length of 200 ms of timed waits, per way of loading the library",
        "command": ".venv/bin/python benchmarks/clock_probe.py --out docs/benchmarks/clock-probe.json",
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "java": version},
        "library": str(clocks.library()),
        "jump_s": JUMP_S,
        "settings": results,
    }
    write_summary(summary, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
