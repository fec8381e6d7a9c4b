"""The columnar copy of a history (history/columnar.py), made while the recorder writes history.jsonl.

Parsing the JSON of a long run is most of its first check (docs/benchmarks.md), so the recorder hands every batch it
appends to a :class:`LiveCopy` too. A thread of its own decodes the batches in chunks of ``chunk_bytes`` with the
loader's own decode (load.decode_chunk: the same code, so the same History), and keeps each chunk's ops zstd-compressed
in memory (a few MB per million ops) rather than decoded (about 100 MB per million). When the recorder closes the file,
``finish`` decodes the last chunk, builds the History and writes the copy, validated like any other by the file's size
and mtime: the run's check and every ``failsafe check`` after it read the copy instead of the JSON.

Whenever the copy could differ from what the JSON gives, none is written and the check parses the JSON as before: a
line the fast decode cannot place (malformed, odd), a file that held lines before the recorder opened it or that
another writer appended to, a decoder that falls too far behind.
"""

from __future__ import annotations

import io
import queue
import threading
from pathlib import Path

import polars as pl

from failsafe.history.columnar import source_of, write_frames
from failsafe.history.load import KIND_SCHEMAS, decode_chunk, history_from_kinds

# Big chunks decode cheaper per op (10 million ops: 31 CPU s in 32 MiB chunks, 42 in 1 MiB chunks); the last, partial
# one is decoded when the run closes, in about 0.3 s.
DEFAULT_CHUNK_BYTES = 32 << 20
# Bytes waiting for the decoder: more than this and the machine is too busy for a copy (the check parses the JSON),
# rather than holding ever more of the history in memory.
MAX_BACKLOG_BYTES = 256 << 20


class LiveCopy:
    """Decodes what the recorder appends; ``add`` from the recorder's thread, ``finish`` once the file is closed."""

    def __init__(self, history_path: Path, chunk_bytes: int = DEFAULT_CHUNK_BYTES) -> None:
        self.path = Path(history_path)
        self._chunk_bytes = chunk_bytes
        self._pending: list[bytes] = []
        self._pending_bytes = 0
        self._chunks: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        self._queued_bytes = 0
        self._decoded_bytes = 0
        # kind -> one IPC stream (zstd) per decoded chunk, in file order.
        self._decoded: dict[str, list[bytes]] = {kind: [] for kind in KIND_SCHEMAS}
        self._failed = threading.Event()
        self._decoder_done = False
        self.chunks_decoded = 0
        self._thread = threading.Thread(target=self._decode_all, name="history-columnar", daemon=True)
        self._thread.start()

    @property
    def failed(self) -> bool:
        return self._failed.is_set()

    def add(self, data: bytes) -> None:
        """Whole lines, exactly as appended to the file."""
        if self._failed.is_set():
            return
        self._pending.append(data)
        self._pending_bytes += len(data)
        if self._pending_bytes >= self._chunk_bytes:
            self._queue_pending()

    def _queue_pending(self) -> None:
        if self._queued_bytes - self._decoded_bytes > MAX_BACKLOG_BYTES or not self._thread.is_alive():
            self._give_up()
        else:
            self._chunks.put(b"".join(self._pending))
            self._queued_bytes += self._pending_bytes
        self._pending.clear()
        self._pending_bytes = 0

    def _give_up(self) -> None:
        """No copy: free what was decoded (either thread may call this; add and finish look at the flag)."""
        self._failed.set()
        self._decoded = {kind: [] for kind in KIND_SCHEMAS}

    def _decode_all(self) -> None:
        while (chunk := self._chunks.get()) is not None:
            if not self._failed.is_set():
                self._decode(chunk)
            self.chunks_decoded += 1
            self._decoded_bytes += len(chunk)
        self._decoder_done = True

    def _decode(self, chunk: bytes) -> None:
        kinds = decode_chunk(chunk)
        if kinds is None:
            self._give_up()
            return
        try:
            for kind, frame in kinds.items():
                if frame.height:
                    buffer = io.BytesIO()
                    frame.write_ipc(buffer, compression="zstd")
                    self._decoded[kind].append(buffer.getvalue())
        except pl.exceptions.PolarsError:
            self._give_up()

    def finish(self, written_bytes: int) -> bool:
        """Decode what is left and write the copy of the closed file, which must hold exactly the ``written_bytes`` the
        recorder appended. True when the copy was written."""
        if self._pending and not self._failed.is_set():
            self._queue_pending()
        self._chunks.put(None)
        self._thread.join()
        try:
            # A decoder that died (a defect) leaves _decoder_done false: no copy rather than a partial one.
            if self._failed.is_set() or not self._decoder_done:
                return False
            source = source_of(self.path)
            if source["size"] != written_bytes:
                return False
            kinds = {
                kind: pl.concat([pl.read_ipc(io.BytesIO(blob)) for blob in blobs])
                if blobs
                else pl.DataFrame(schema=KIND_SCHEMAS[kind])
                for kind, blobs in self._decoded.items()
            }
            return write_frames(self.path, history_from_kinds(kinds), source)
        except (OSError, pl.exceptions.PolarsError):
            return False
        finally:
            self._decoded = {kind: [] for kind in KIND_SCHEMAS}
