"""What a power cut takes from file contents: every write since the file's last fsync.

Writes go straight to the backing file, so reads see them (read-your-writes) and appends, Kafka's
common case, cost no memory. Before a write or a truncation changes bytes that were durable, those
bytes are saved once; a sync forgets them. Losing the unsynced data truncates the file back to its
durable size and puts the saved bytes back. The undo is kept per inode, with a descriptor of our
own, so it applies whatever the file is called by then (renamed, or unlinked but still open).
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass, field


@dataclass
class _FileUndo:
    fd: int  # our own read-write descriptor of the inode, open while anything of it is unsynced
    durable_size: int
    path: str  # what the file was called when its first unsynced change came (for reports)
    saved: list[tuple[int, bytes]] = field(default_factory=list)  # durable bytes later overwritten; disjoint ranges
    covered: list[tuple[int, int]] = field(default_factory=list)  # the [start, end) ranges in ``saved``, merged, sorted
    last_write: tuple[int, int] | None = (
        None  # (offset, length) of the newest write, None when a truncation came after it
    )
    unsynced_bytes: int = 0


def _gaps(covered: list[tuple[int, int]], start: int, end: int) -> list[tuple[int, int]]:
    """The parts of [start, end) that ``covered`` does not hold."""
    gaps, pos = [], start
    for a, b in covered:
        if b <= pos:
            continue
        if a >= end:
            break
        if a > pos:
            gaps.append((pos, a))
        pos = max(pos, b)
    if pos < end:
        gaps.append((pos, end))
    return gaps


def _merge(covered: list[tuple[int, int]], new: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for a, b in sorted(covered + new):
        if merged and a <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], b))
        else:
            merged.append((a, b))
    return merged


def _pread_all(fd: int, length: int, offset: int) -> bytes:
    chunks, done = [], 0
    while done < length:
        chunk = os.pread(fd, length - done, offset + done)
        if not chunk:
            break
        chunks.append(chunk)
        done += len(chunk)
    return b"".join(chunks)


def _pwrite_all(fd: int, data: bytes, offset: int) -> None:
    view = memoryview(data)
    while view:
        n = os.pwrite(fd, view, offset)
        view, offset = view[n:], offset + n


@dataclass(frozen=True)
class TornWrite:
    path: str
    offset: int
    length: int
    kept: int  # how many leading bytes of the write survived


class DataJournal:
    """The unsynced changes of every file, keyed by inode number. Not thread-safe: the caller holds one lock."""

    def __init__(self) -> None:
        self._files: dict[int, _FileUndo] = {}

    def _undo(self, fd: int, ino: int, path: str) -> _FileUndo:
        undo = self._files.get(ino)
        if undo is None:
            # Nothing of this inode is pending, so all of it is durable as it stands.
            undo = _FileUndo(fd=os.dup(fd), durable_size=os.fstat(fd).st_size, path=path)
            self._files[ino] = undo
        return undo

    def _save(self, undo: _FileUndo, start: int, end: int) -> None:
        end = min(end, undo.durable_size)
        if start >= end:
            return
        gaps = _gaps(undo.covered, start, end)
        for a, b in gaps:
            undo.saved.append((a, _pread_all(undo.fd, b - a, a)))
        undo.covered = _merge(undo.covered, gaps)

    def write(self, fd: int, ino: int, data: bytes, offset: int, path: str = "") -> int:
        """Write ``data`` at ``offset`` through ``fd`` (open read-write), keeping what it overwrites of the durable
        file."""
        undo = self._undo(fd, ino, path)
        self._save(undo, offset, offset + len(data))
        n = os.pwrite(fd, data, offset)
        undo.last_write = (offset, n)
        undo.unsynced_bytes += n
        return n

    def truncate(self, fd: int, ino: int, length: int, path: str = "") -> None:
        undo = self._undo(fd, ino, path)
        self._save(undo, length, undo.durable_size)
        os.ftruncate(fd, length)
        undo.last_write = None

    def allocate(self, fd: int, ino: int, offset: int, length: int, path: str = "") -> None:
        """posix_fallocate: only the size can change, and a loss truncates back to the durable size anyway."""
        self._undo(fd, ino, path)
        os.posix_fallocate(fd, offset, length)

    def sync(self, ino: int) -> None:
        """fsync or fdatasync of the inode: everything written to it is durable now."""
        undo = self._files.pop(ino, None)
        if undo is not None:
            os.close(undo.fd)

    forget = sync  # an inode whose last name is durably gone: nothing to undo in it any more

    def pending(self) -> dict[str, int]:
        return {"files": len(self._files), "bytes": sum(u.unsynced_bytes for u in self._files.values())}

    def lose(self, torn: bool = False, rng: random.Random | None = None) -> tuple[int, list[TornWrite]]:
        """Put every file back as it was at its last sync; with ``torn``, a random-length prefix of each file's last
        unsynced write survives (at least one byte and never all of it, when the write is longer than one byte).
        Returns the number of files rolled back and the torn writes. Files are handled in the order of their names (then
        inodes), so a seed gives the same cuts for the same history."""
        rng = rng or random.Random(0)
        tears, files = [], len(self._files)
        for ino in sorted(self._files, key=lambda i: (self._files[i].path, i)):
            undo = self._files.pop(ino)
            try:
                prefix = b""
                if torn and undo.last_write is not None and undo.last_write[1] > 0:
                    offset, length = undo.last_write
                    kept = rng.randrange(1, length) if length > 1 else 0
                    prefix = _pread_all(undo.fd, kept, offset)
                    tears.append(TornWrite(undo.path, offset, length, len(prefix)))
                os.ftruncate(undo.fd, undo.durable_size)
                for offset, old in undo.saved:
                    _pwrite_all(undo.fd, old, offset)
                if prefix:
                    _pwrite_all(undo.fd, prefix, undo.last_write[0])  # type: ignore[index]
                os.fsync(undo.fd)
            finally:
                os.close(undo.fd)
        return files, tears

    def close(self) -> None:
        """Keep everything as written (a clean unmount): nothing to undo."""
        for ino in list(self._files):
            self.sync(ino)
