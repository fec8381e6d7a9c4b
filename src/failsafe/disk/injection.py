"""Injection in a disk layer: a full disk (ENOSPC), a failing one (EIO), a slow one and one that reads back wrong bytes,
each from ``inject`` until ``clear``.

The decisions only (which operation fails, with which errno, and the counts), kept apart from the FUSE
operations (fusefs.py) so that they are tested without a mount. What fails (docs/disk-faults.md, "Error injection"):

    full    ENOSPC for what needs new space: a write or fallocate that reaches past the end of the file or into a
            hole (SEEK_HOLE of the backing file), and every new name (create, mkdir, symlink, link, mknod).
            statfs reports no free blocks. Overwrites in place, reads, truncation, fsync, unlink, rmdir and rename work.
    error   EIO for reads (``read``), writes (``write``: write, truncate, fallocate, fsync, fdatasync, fsync of a
            directory) or both, of the paths that match a glob (default: every path).
    slow    each matching operation waits ``delay_ms``, plus its bytes at ``rate_mb_s`` (a throughput cap), before it is
            done: ``read``, ``write`` (write, truncate, fallocate), ``sync`` (fsync, fdatasync, fsync of a directory) or
            ``both`` (every one of them). Slowed operations are served one at a time, as one disk serves them.
    corrupt every read of a matching file (``glob``) answers its bytes with ``bits`` bits flipped, at positions seeded
            by ``seed``, the file's path and the read's offset (the same read gives the same wrong bytes, as a bad
            sector does); what the file holds is not changed. The kernel's page cache answers reads of pages it
            holds without asking the layer: a file read again while open is served right, one opened again (a
            node's restart, log recovery) is read through the layer.

Every kind can be in force with the others (a write that full and error would both fail gets EIO); a new injection of
a kind replaces the previous one of that kind. The counts (refused, slowed, corrupted) are kept from the mount on,
whatever was cleared since.
"""

from __future__ import annotations

import errno
import fnmatch
import os
import random
import threading
import time
from dataclasses import asdict, dataclass
from typing import Any, Literal

Kind = Literal["full", "error", "slow", "corrupt"]
Ops = Literal["read", "write", "sync", "both"]
KINDS: tuple[Kind, ...] = ("full", "error", "slow", "corrupt")
OPS: tuple[Ops, ...] = ("read", "write", "both")  # an error injection's
SLOW_OPS: tuple[Ops, ...] = ("read", "write", "sync", "both")
SYNC_OPS = ("fsync", "fdatasync", "fsyncdir")
MAX_DELAY_MS = 60_000.0
# What each kind refuses, by the FUSE operation's name (the keys of status()["failed"]).
FULL_OPS = ("write", "fallocate", "create", "mkdir", "symlink", "link", "mknod")
ERROR_OPS = ("read", "write", "truncate", "fallocate", "fsync", "fdatasync", "fsyncdir")


@dataclass(frozen=True)
class Injection:
    """One injection. ``full`` takes no other field. ``error`` fails ``ops`` of the paths matching ``glob`` (fnmatch
    against the path under the mountpoint without its leading slash, where ``*`` also matches ``/``: ``*.log`` is every
    segment file at any depth), or of every path when ``glob`` is None. ``slow`` delays ``ops`` (``sync`` too) of
    ``glob`` by ``delay_ms`` and their bytes by ``rate_mb_s`` (None: no cap). ``corrupt`` flips ``bits`` bits of every
    read of ``glob``, seeded by ``seed``."""

    kind: Kind
    ops: Ops = "both"
    glob: str | None = None
    delay_ms: float = 0.0
    rate_mb_s: float | None = None
    bits: int = 1
    seed: int = 0

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind {self.kind!r}: a disk layer injects one of {', '.join(KINDS)}")
        allowed = SLOW_OPS if self.kind == "slow" else OPS
        if self.ops not in allowed:
            raise ValueError(f"ops {self.ops!r}: a {self.kind} injection takes one of {', '.join(allowed)}")
        if self.glob is not None and (not isinstance(self.glob, str) or not self.glob):
            raise ValueError(f"glob {self.glob!r}: a non-empty pattern such as '*.log', or None for every path")
        if self.kind == "full" and (self.ops != "both" or self.glob is not None):
            raise ValueError(
                f"kind 'full' takes no ops or glob (got ops={self.ops!r}, glob={self.glob!r}): "
                "a full disk refuses every allocation"
            )
        if self.kind == "slow":
            if not 0 <= self.delay_ms <= MAX_DELAY_MS:
                raise ValueError(f"delay_ms {self.delay_ms}: from 0 to {MAX_DELAY_MS:g}")
            if self.rate_mb_s is not None and not self.rate_mb_s > 0:
                raise ValueError(f"rate_mb_s {self.rate_mb_s}: a cap above 0 MB/s, or None for none")
            if self.delay_ms == 0 and self.rate_mb_s is None:
                raise ValueError("a slow disk needs delay_ms above 0 or a rate_mb_s cap")
        if self.kind == "corrupt" and (self.ops != "read" or self.bits < 1):
            raise ValueError(f"kind 'corrupt' corrupts reads (ops 'read', got {self.ops!r}) of at least 1 bit")

    @classmethod
    def from_message(cls, message: dict[str, Any]) -> Injection:
        fields = {k: message[k] for k in ("delay_ms", "rate_mb_s", "bits", "seed") if k in message}
        return cls(kind=message.get("kind"), ops=message.get("ops", "both"), glob=message.get("glob"), **fields)  # type: ignore[arg-type]

    def to_message(self) -> dict[str, Any]:
        return asdict(self)

    def matches(self, path: str) -> bool:
        return self.glob is None or fnmatch.fnmatchcase(path.lstrip("/"), self.glob)

    def fails(self, side: Literal["read", "write"], path: str) -> bool:
        return self.ops in (side, "both") and self.matches(path)

    def slows(self, op: str, path: str) -> bool:
        side = "read" if op == "read" else "sync" if op in SYNC_OPS else "write"
        return self.ops in (side, "both") and self.matches(path)

    def brief(self) -> dict[str, Any]:
        """What is in force, as status shows it."""
        if self.kind == "slow":
            return {"ops": self.ops, "glob": self.glob, "delay_ms": self.delay_ms, "rate_mb_s": self.rate_mb_s}
        if self.kind == "corrupt":
            return {"glob": self.glob, "bits": self.bits, "seed": self.seed}
        return {"ops": self.ops, "glob": self.glob}


def check_kind(kind: str) -> None:
    """ValueError unless ``kind`` is one a layer injects (what clear takes)."""
    if kind not in KINDS:
        raise ValueError(f"kind {kind!r}: a disk layer injects one of {', '.join(KINDS)}")


def flip_bits(data: bytes, bits: int, rng: random.Random, within: int | None = None) -> bytes:
    """``data`` with ``bits`` of its bits flipped at positions ``rng`` draws among the first ``within`` bytes (all of
    them when None); also what disk/corrupt.py flips in a file at rest."""
    span = len(data) if within is None else within
    out = bytearray(data)
    for position in rng.sample(range(span * 8), min(bits, span * 8)):
        out[position // 8] ^= 1 << (position % 8)
    return bytes(out)


def flip_read(data: bytes, injection: Injection, path: str, offset: int) -> bytes:
    """``data`` read at ``offset`` of ``path`` with ``injection.bits`` bits flipped, the same at every such read."""
    if not data:
        return data
    return flip_bits(data, injection.bits, random.Random(f"{injection.seed}:{path}:{offset}:{len(data)}"))


def allocates(fd: int, offset: int, length: int) -> bool:
    """Whether writing ``length`` bytes at ``offset`` of the file needs space it has not got: the write reaches past the
    end of the file or into a hole (a sparse file's, as a truncation up leaves). A range that fallocate reserved and
    nothing has written yet counts as a hole too: SEEK_HOLE reports such unwritten extents as holes on ext4."""
    if length <= 0:
        return False
    end = offset + length
    # offset < end <= size below, so SEEK_HOLE cannot fail with ENXIO; a filesystem without holes reports only the end.
    return end > os.fstat(fd).st_size or os.lseek(fd, offset, os.SEEK_HOLE) < end


class Injector:
    """The injections in force in one layer and what they refused, slowed and corrupted. Thread-safe: reads run without
    the layer's lock. With nothing injected each check is an attribute read or two, so a layer that injects nothing pays
    next to nothing."""

    def __init__(self) -> None:
        self.full = False
        self.error: Injection | None = None
        self.slow: Injection | None = None
        self.corrupt: Injection | None = None
        self._mu = threading.Lock()
        self._disk = threading.Lock()  # one slowed operation at a time, as one disk serves them
        self._failed = {"full": dict.fromkeys(FULL_OPS, 0), "error": dict.fromkeys(ERROR_OPS, 0)}
        self._slowed = {"ops": 0, "waited_s": 0.0}
        self._corrupted = {"reads": 0, "bytes_read": 0}

    def inject(self, injection: Injection) -> None:
        if injection.kind == "full":
            self.full = True
        else:
            setattr(self, injection.kind, injection)

    def clear(self, kind: Kind | None = None) -> list[str]:
        """End the injection of ``kind`` (every kind when None); returns the kinds that were in force and are
        cleared."""
        if kind is not None:
            check_kind(kind)
        cleared = []
        if kind in (None, "full") and self.full:
            self.full = False
            cleared.append("full")
        for name in ("error", "slow", "corrupt"):
            if kind in (None, name) and getattr(self, name) is not None:
                setattr(self, name, None)
                cleared.append(name)
        return cleared

    def _refuse(self, kind: Kind, op: str, code: int, path: str) -> None:
        with self._mu:
            self._failed[kind][op] += 1
        raise OSError(code, f"injected by failsafe: the disk is {'full' if kind == 'full' else 'failing'} ({op})", path)

    def check_io(self, op: str, path: str, length: int = 0) -> None:
        """EIO when an error injection fails ``op`` (one of ERROR_OPS) of ``path``; else, when the disk is slow for it,
        the wait for ``op`` of ``length`` bytes (served one at a time)."""
        error = self.error
        if error is not None and error.fails("read" if op == "read" else "write", path):
            self._refuse("error", op, errno.EIO, path)
        slow = self.slow
        if slow is not None and slow.slows(op, path):
            wait_s = slow.delay_ms / 1000 + (length / (slow.rate_mb_s * 1e6) if slow.rate_mb_s else 0.0)
            with self._disk:
                # The fault itself, not a wait for anything: the operation takes this long on this disk.
                time.sleep(wait_s)
            with self._mu:
                self._slowed["ops"] += 1
                self._slowed["waited_s"] += wait_s

    def read_back(self, path: str, offset: int, data: bytes) -> bytes:
        """What a read of ``path`` at ``offset`` answers: ``data``, or its corrupted copy while reads of it are
        corrupted."""
        corrupt = self.corrupt
        if corrupt is None or not data or not corrupt.matches(path):
            return data
        with self._mu:
            self._corrupted["reads"] += 1
            self._corrupted["bytes_read"] += len(data)
        return flip_read(data, corrupt, path, offset)

    def check_space(self, op: str, fd: int, offset: int, length: int, path: str = "") -> None:
        """ENOSPC when the disk is full and writing (or fallocating) ``length`` bytes at ``offset`` needs new space."""
        if self.full and allocates(fd, offset, length):
            self._refuse("full", op, errno.ENOSPC, path)

    def check_new_name(self, op: str, real: str, path: str = "") -> None:
        """ENOSPC when the disk is full and ``op`` would make the name ``real`` (a backing path) that does not exist yet
        (an existing one gets the operation's own answer: EEXIST, or create's open of the existing file)."""
        if self.full and not os.path.lexists(real):
            self._refuse("full", op, errno.ENOSPC, path)

    def statfs(self, st: dict[str, int]) -> dict[str, int]:
        """What statfs reports: no free block while full (free inodes are left alone, as a full ext4 has some)."""
        return {**st, "f_bavail": 0, "f_bfree": 0} if self.full else st

    def status(self) -> dict[str, Any]:
        kinds = {name: getattr(self, name) for name in ("error", "slow", "corrupt")}
        with self._mu:
            failed = {kind: dict(counts) for kind, counts in self._failed.items()}
            slowed = {"ops": self._slowed["ops"], "waited_s": round(self._slowed["waited_s"], 3)}
            corrupted = dict(self._corrupted)
        return {
            "injection": {"full": self.full, **{k: None if v is None else v.brief() for k, v in kinds.items()}},
            "failed": failed,
            "slowed": slowed,
            "corrupted": corrupted,
        }
