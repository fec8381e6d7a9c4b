"""Writing a history: one JSON object per line, appended in batches so recording does not slow the workload.

Two writers exist. :class:`Recorder` is the run's history file: many threads hand it ops (dicts) or
ready-made lines (from worker processes), and one background thread appends them in batches; it also
hands each batch to a LiveCopy (history/live_copy.py), which leaves the columnar copy next to the file
when the recorder closes, so the run's first check does not parse the JSON.
:class:`OpWriter` is what a worker process writes its own ops with, to a pipe the runner reads.
"""

from __future__ import annotations

import os
import threading
import time
from collections import deque
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

import orjson

# Worker processes write with OpWriter and never load polars: the copy's module comes in with the first Recorder.
if TYPE_CHECKING:
    from failsafe.history.live_copy import LiveCopy

DEFAULT_FLUSH_INTERVAL_S = 0.05


def encode_op(op: dict) -> bytes:
    return orjson.dumps(op) + b"\n"


class Recorder:
    """The run's history.jsonl, appended by a background thread.

    ``record`` and ``write_line`` only append to a deque (thread-safe, no lock), so a client thread
    never waits on the disk. ``columnar_copy``: make the columnar copy as the file is written (only of a
    file that starts empty: lines already in it were never handed to the copy).
    """

    def __init__(
        self,
        path: Path,
        flush_interval_s: float = DEFAULT_FLUSH_INTERVAL_S,
        columnar_copy: bool = True,
        copy_chunk_bytes: int | None = None,
    ) -> None:
        self.path = Path(path)
        self._pending: deque[bytes] = deque()
        self._file = open(self.path, "ab", buffering=1 << 20)  # noqa: SIM115 - closed in close()
        self._flush_interval_s = flush_interval_s
        self._closed = threading.Event()
        self._lines = 0
        self._bytes = 0
        empty = os.fstat(self._file.fileno()).st_size == 0
        self.copy: LiveCopy | None = None
        if columnar_copy and empty:
            from failsafe.history.live_copy import DEFAULT_CHUNK_BYTES, LiveCopy

            self.copy = LiveCopy(self.path, copy_chunk_bytes or DEFAULT_CHUNK_BYTES)
        self.copy_written = False
        self._thread = threading.Thread(target=self._run, name="history-recorder", daemon=True)
        self._thread.start()

    @property
    def lines_written(self) -> int:
        return self._lines

    def record(self, op: dict) -> None:
        if "time_ns" not in op:
            op = {"time_ns": time.time_ns(), **op}
        self._pending.append(encode_op(op))

    def write_line(self, line: bytes) -> None:
        """A line already encoded by a worker process (it carries its own time_ns)."""
        self._pending.append(line if line.endswith(b"\n") else line + b"\n")

    def _drain(self) -> None:
        batch = []
        pending = self._pending
        while pending:
            batch.append(pending.popleft())
        if batch:
            data = b"".join(batch)
            self._file.write(data)
            self._lines += len(batch)
            self._bytes += len(data)
            if self.copy is not None:
                self.copy.add(data)

    def _run(self) -> None:
        while not self._closed.wait(self._flush_interval_s):
            self._drain()
            self._file.flush()

    def close(self) -> None:
        if self._closed.is_set():
            return
        self._closed.set()
        self._thread.join()
        self._drain()
        self._file.close()
        if self.copy is not None:
            self.copy_written = self.copy.finish(self._bytes)

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class OpWriter:
    """A worker process's ops, written to a binary stream (its stdout, a pipe to the runner).

    Single-threaded: a worker calls it from its client loop. ``flush`` pushes what is buffered
    into the pipe, where it survives a SIGKILL of the worker.
    """

    def __init__(self, stream: BinaryIO, process: str, flush_interval_s: float = DEFAULT_FLUSH_INTERVAL_S) -> None:
        self._stream = stream
        self.process = process
        self._buffer: list[bytes] = []
        self._flush_interval_ns = int(flush_interval_s * 1e9)
        self._last_flush_ns = time.monotonic_ns()

    def op(self, type: str, f: str, **fields: object) -> None:
        """One op of this worker (``type`` an ops.OpType, ``f`` an ops.Op), written with the time it is written."""
        self._buffer.append(
            encode_op({"time_ns": time.time_ns(), "process": self.process, "type": str(type), "f": str(f), **fields})
        )
        now = time.monotonic_ns()
        if now - self._last_flush_ns >= self._flush_interval_ns:
            self.flush(now)

    def flush(self, now_ns: int | None = None) -> None:
        if self._buffer:
            self._stream.write(b"".join(self._buffer))
            self._buffer.clear()
        self._stream.flush()
        self._last_flush_ns = now_ns if now_ns is not None else time.monotonic_ns()
