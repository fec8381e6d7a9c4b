"""Where a worker that does not stop is stuck: its Python stacks, dumped by faulthandler on a signal, read back.

A Python worker registers ``faulthandler`` for STACKS_SIGNAL (worker.py); the pool sends it before it kills a worker
that did not stop on SIGTERM, and records the main thread's innermost frames with the crash. faulthandler writes from
its C signal handler, so a thread blocked in a client library's C call is dumped too. A worker that became a JVM
(the Java transactional driver) is never sent it: HotSpot uses SIGUSR2 itself.
"""

from __future__ import annotations

import re
import signal

from failsafe.workloads.txn.specs import KAFKA_JAVA, CtpSpec, TxnProducerSpec

STACKS_SIGNAL = signal.SIGUSR2
_THREAD = re.compile(r"^(?:Current thread|Thread) 0x[0-9a-f]+ \(most recent call first\):$")
_FRAME = re.compile(r'^\s+File "(?P<file>[^"]+)", line (?P<line>\d+) in (?P<func>\S+)$')
FRAMES = 3
# The outermost frame of the main thread: runpy's for `python -m` (how the pool starts workers), else the script's.
_OUTERMOST = ("_run_module_as_main", "<module>")
_FATAL = "Fatal Python error:"


def runs_python(spec: object) -> bool:
    """The worker stays a Python process: every worker but the transactional ones on Kafka's Java client (exec'd
    JVMs)."""
    return not (isinstance(spec, TxnProducerSpec | CtpSpec) and spec.driver == KAFKA_JAVA)


def stuck_at(dump: str, frames: int = FRAMES) -> str | None:
    """The main thread's innermost ``frames`` frames in a faulthandler dump (file:line function, innermost first),
    or None when the dump holds no complete main thread (the one whose outermost frame is runpy's or a script's)."""
    threads: list[list[tuple[str, str, str]]] = []
    for line in dump.splitlines():
        if _THREAD.match(line):
            threads.append([])
        elif (m := _FRAME.match(line)) and threads:
            threads[-1].append((m["file"].rsplit("/", 1)[-1], m["line"], m["func"]))
    main = next((t for t in threads if t and t[-1][2] in _OUTERMOST), None)
    if not main:
        return None
    return " < ".join(f"{file}:{line} {func}" for file, line, func in main[:frames])


def crash_reason(log: str, lines: int = 3) -> str | None:
    """What a worker's log says of a crash faulthandler caught ("Fatal Python error: Segmentation fault"): the lines
    the worker wrote before it, that line, and where the main thread was; None when the log shows no such crash."""
    at = log.find(_FATAL)
    if at < 0:
        return None
    before = [line.strip() for line in log[:at].splitlines() if line.strip()][-lines:]
    fatal = log[at:].splitlines()[0].strip()
    where = stuck_at(log[at:], frames=1)
    return " | ".join([*before, fatal + (f", main thread in {where}" if where else "")])
