"""Corrupting one file of a node's data at rest, seeded, and saying exactly what changed (docs/disk-faults.md,
"Corruption").

The ways (``WAYS``), each on a file the node does not have open (it is down), within the file's written part (up to its
last byte that is not zero: ``written_size``, so that an index's preallocated zeros are not where the damage lands):

    flip      ``bits`` bits flipped at seeded positions of the file: a disk's or a bus's bit error
    zero      ``length`` bytes from a seeded offset set to zero: a sector that came back blank
    truncate  the file cut at a seeded length anywhere in it: metadata that outlived its data
    torn      the file's tail torn: cut at a seeded byte within its last ``length`` bytes (a write that half landed)
    stale     the file's bytes of an earlier time back (``older``, taken by ``snapshot``): a lost or misdirected write

Which file of a node's log directory a class names (``FILE_CLASSES``), and where it is, is ``find``'s: a partition's
newest segment, index and time index (the newest that holds data), its ``leader-epoch-checkpoint`` and
``partition.metadata``; the directory's checkpoints and ``meta.properties``; the ``__cluster_metadata`` log's newest
segment and snapshot. What a way changed (``Change``) names the file, its sizes and every changed range with its bytes
before and after (in hex, at most ``SHOWN`` of them), so a run's history says what the node found.
"""

from __future__ import annotations

import os
import random
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from failsafe.disk.injection import flip_bits

WAYS = ("flip", "zero", "truncate", "torn", "stale")
METADATA_DIR = "__cluster_metadata-0"
# A file class -> (where: "partition" under TOPIC-N/, "root" of the log directory, "metadata" under
# __cluster_metadata-0/), and the file's name or the suffix of the newest such file.
FILE_CLASSES: dict[str, tuple[str, str]] = {
    "segment": ("partition", "*.log"),
    "index": ("partition", "*.index"),
    "timeindex": ("partition", "*.timeindex"),
    "leader-epoch-checkpoint": ("partition", "leader-epoch-checkpoint"),
    "partition.metadata": ("partition", "partition.metadata"),
    "replication-offset-checkpoint": ("root", "replication-offset-checkpoint"),
    "recovery-point-offset-checkpoint": ("root", "recovery-point-offset-checkpoint"),
    "log-start-offset-checkpoint": ("root", "log-start-offset-checkpoint"),
    "meta.properties": ("root", "meta.properties"),
    "metadata-log": ("metadata", "*.log"),
    "metadata-snapshot": ("metadata", "*.checkpoint"),
    "quorum-state": ("metadata", "quorum-state"),
}
SHOWN = 16  # changed ranges recorded in full; the rest counted
SHOWN_BYTES = 32  # bytes of a range shown before and after


class CorruptionError(ValueError):
    """A file class, way or file that cannot be corrupted as asked (no such file, an empty one, a bad field)."""


@dataclass
class Change:
    """What one way did to one file: its path (relative to the log directory), sizes, and the changed ranges."""

    file: str
    way: str
    size_before: int
    size_after: int
    ranges: list[dict[str, Any]] = field(default_factory=list)
    ranges_total: int = 0
    bytes_changed: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def needs_partition(file_class: str) -> bool:
    return FILE_CLASSES[file_class][0] == "partition"


WHICH = ("newest", "oldest")


def find(log_dir: Path, file_class: str, partition: str | None = None, which: str = "newest") -> Path:
    """The file of ``file_class`` in ``log_dir`` (for a partition's classes, under ``partition``'s directory TOPIC-N):
    a named file, or the newest (or oldest, ``which``) non-empty one of a pattern, by its base offset (the number its
    name starts with). The oldest of a partition that rolled is a segment below its recovery point: flushed, and not
    read again when the node recovers."""
    if file_class not in FILE_CLASSES:
        raise CorruptionError(f"file {file_class!r} is not one of {', '.join(FILE_CLASSES)}")
    where, name = FILE_CLASSES[file_class]
    if where == "partition":
        if not partition:
            raise CorruptionError(f"file {file_class!r} is a partition's: name the partition as TOPIC-N")
        directory = log_dir / partition
    else:
        directory = log_dir / METADATA_DIR if where == "metadata" else log_dir
    if not directory.is_dir():
        raise CorruptionError(f"{directory} does not exist: the node holds no {file_class}")
    if not name.startswith("*"):
        path = directory / name
        if not path.is_file():
            raise CorruptionError(f"{path} does not exist")
        return path
    suffix = name[1:]
    files = [p for p in directory.iterdir() if p.name.endswith(suffix) and p.is_file() and p.stat().st_size > 0]
    if not files:
        raise CorruptionError(f"{directory} holds no {file_class} ({name}) with data yet")
    if which not in WHICH:
        raise CorruptionError(f"which {which!r} is not one of {', '.join(WHICH)}")
    return (max if which == "newest" else min)(files, key=lambda p: p.name)


def glob_of(file_class: str, partition: str | None = None) -> str:
    """The pattern (a disk layer's glob, relative to the log directory) of every file of ``file_class``."""
    where, name = FILE_CLASSES[file_class]
    if where == "partition":
        return f"{partition}/{name}"
    return f"{METADATA_DIR}/{name}" if where == "metadata" else name


def snapshot(path: Path) -> bytes:
    """The file's bytes now, for a ``stale`` corruption later."""
    return path.read_bytes()


def corrupt(
    path: Path,
    way: str,
    seed: int,
    *,
    bits: int = 1,
    length: int = 4096,
    older: bytes | None = None,
    base: Path | None = None,
) -> Change:
    """Corrupt ``path`` by ``way`` (see the module's doc), seeded; the file is fsynced after. Returns what changed, its
    path shown relative to ``base``."""
    if way not in WAYS:
        raise CorruptionError(f"way {way!r} is not one of {', '.join(WAYS)}")
    if bits < 1 or length < 1:
        raise CorruptionError(f"bits ({bits}) and length ({length}) must be at least 1")
    before = path.read_bytes()
    if not before and way != "stale":
        raise CorruptionError(f"{path} is empty: nothing to {way}")
    rng = random.Random(f"{seed}:{path.name}:{way}")
    written = written_size(before)
    if way == "flip":
        after = flip_bits(before, bits, rng, within=written)
    elif way == "zero":
        n = min(length, written)
        start = rng.randrange(written - n + 1)
        after = before[:start] + bytes(n) + before[start + n :]
    elif way == "truncate":
        after = before[: rng.randrange(written)]
    elif way == "torn":
        after = before[: written - rng.randint(1, min(length, written))]
    else:
        if older is None:
            raise CorruptionError("way 'stale' needs the file's older bytes (snapshot)")
        after = older
    _write(path, after)
    shown = path.relative_to(base) if base is not None else path
    return describe(str(shown), way, before, after)


def describe(name: str, way: str, before: bytes, after: bytes) -> Change:
    """What changed from ``before`` to ``after``: the sizes and the differing ranges (a cut tail is one range whose
    ``after`` is empty)."""
    ranges: list[tuple[int, int]] = []
    common = min(len(before), len(after))
    chunk = 4096
    for c in range(0, common, chunk):  # only chunks that differ are scanned byte by byte: a segment can be large
        end = min(c + chunk, common)
        if before[c:end] == after[c:end]:
            continue
        for i in range(c, end):
            if before[i] == after[i]:
                continue
            if ranges and ranges[-1][1] == i:
                ranges[-1] = (ranges[-1][0], i + 1)
            else:
                ranges.append((i, i + 1))
    if len(before) != len(after):
        ranges.append((common, max(len(before), len(after))))
    return Change(
        file=name,
        way=way,
        size_before=len(before),
        size_after=len(after),
        ranges=[
            {
                "offset": s,
                "length": e - s,
                "before": before[s : min(e, s + SHOWN_BYTES)].hex(),
                "after": after[s : min(e, s + SHOWN_BYTES)].hex(),
            }
            for s, e in ranges[:SHOWN]
        ],
        ranges_total=len(ranges),
        bytes_changed=sum(e - s for s, e in ranges),
    )


def written_size(data: bytes) -> int:
    """Where a file's written part ends: past its last byte that is not zero. Kafka preallocates an index (10 MB of
    zeros by default, segment.index.bytes) and fills it from the front: bits flipped or a tail torn in the zeros past
    its last entry would change nothing anybody reads. A file of zeros only counts as written whole."""
    end = len(data.rstrip(b"\0"))
    return end or len(data)


def restore(path: Path, original: bytes) -> None:
    """Put ``original`` back (the operator's repair of a node that would not start on the corrupted file)."""
    _write(path, original)


def _write(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)
