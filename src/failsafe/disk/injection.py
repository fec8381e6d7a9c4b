"""Error injection in a disk layer: a full disk (ENOSPC) and a failing one (EIO), each from ``inject`` until ``clear``.

The decisions only (which operation fails, with which errno, and the counts), kept apart from the FUSE
operations (fusefs.py) so that they are tested without a mount. What fails (docs/disk-faults.md, "Error injection"):

    full    ENOSPC for what needs new space: a write or fallocate that reaches past the end of the file or into a
            hole (SEEK_HOLE of the backing file), and every new name (create, mkdir, symlink, link, mknod).
            statfs reports no free blocks. Overwrites in place, reads, truncation, fsync, unlink, rmdir and rename work.
    error   EIO for reads (``read``), writes (``write``: write, truncate, fallocate, fsync, fdatasync, fsync of a
            directory) or both, of the paths that match a glob (default: every path).

Both kinds can be in force at once (a write that both would fail gets EIO); a new ``error`` injection replaces the
previous one. The counts of refused operations are kept from the mount on, whatever was cleared since.
"""

from __future__ import annotations

import errno
import fnmatch
import os
import threading
from dataclasses import asdict, dataclass
from typing import Any, Literal

Kind = Literal["full", "error"]
Ops = Literal["read", "write", "both"]
KINDS: tuple[Kind, ...] = ("full", "error")
OPS: tuple[Ops, ...] = ("read", "write", "both")
# What each kind refuses, by the FUSE operation's name (the keys of status()["failed"]).
FULL_OPS = ("write", "fallocate", "create", "mkdir", "symlink", "link", "mknod")
ERROR_OPS = ("read", "write", "truncate", "fallocate", "fsync", "fdatasync", "fsyncdir")


@dataclass(frozen=True)
class Injection:
    """One injection. ``full`` takes no other field. ``error`` fails ``ops`` of the paths matching ``glob`` (fnmatch
    against the path under the mountpoint without its leading slash, where ``*`` also matches ``/``: ``*.log`` is every
    segment file at any depth), or of every path when ``glob`` is None."""

    kind: Kind
    ops: Ops = "both"
    glob: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind {self.kind!r}: a disk layer injects one of {', '.join(KINDS)}")
        if self.ops not in OPS:
            raise ValueError(f"ops {self.ops!r}: an error injection fails one of {', '.join(OPS)}")
        if self.glob is not None and (not isinstance(self.glob, str) or not self.glob):
            raise ValueError(f"glob {self.glob!r}: a non-empty pattern such as '*.log', or None for every path")
        if self.kind == "full" and (self.ops != "both" or self.glob is not None):
            raise ValueError(
                f"kind 'full' takes no ops or glob (got ops={self.ops!r}, glob={self.glob!r}): "
                "a full disk refuses every allocation"
            )

    @classmethod
    def from_message(cls, message: dict[str, Any]) -> Injection:
        return cls(kind=message.get("kind"), ops=message.get("ops", "both"), glob=message.get("glob"))  # type: ignore[arg-type]

    def to_message(self) -> dict[str, Any]:
        return asdict(self)

    def fails(self, side: Literal["read", "write"], path: str) -> bool:
        return self.ops in (side, "both") and (self.glob is None or fnmatch.fnmatchcase(path.lstrip("/"), self.glob))


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
    """The injections in force in one layer and what they refused. Thread-safe: reads run without the layer's lock.
    With nothing injected each check is two attribute reads, so a layer that injects nothing pays next to nothing."""

    def __init__(self) -> None:
        self.full = False
        self.error: Injection | None = None
        self._mu = threading.Lock()
        self._failed = {"full": dict.fromkeys(FULL_OPS, 0), "error": dict.fromkeys(ERROR_OPS, 0)}

    def inject(self, injection: Injection) -> None:
        if injection.kind == "full":
            self.full = True
        else:
            self.error = injection

    def clear(self, kind: Kind | None = None) -> list[str]:
        """End the injection of ``kind`` (both when None); returns the kinds that were in force and are cleared."""
        if kind is not None and kind not in KINDS:
            raise ValueError(f"kind {kind!r}: clear one of {', '.join(KINDS)}, or None for both")
        cleared = []
        if kind in (None, "full") and self.full:
            self.full = False
            cleared.append("full")
        if kind in (None, "error") and self.error is not None:
            self.error = None
            cleared.append("error")
        return cleared

    def _refuse(self, kind: Kind, op: str, code: int, path: str) -> None:
        with self._mu:
            self._failed[kind][op] += 1
        raise OSError(code, f"injected by failsafe: the disk is {'full' if kind == 'full' else 'failing'} ({op})", path)

    def check_io(self, op: str, path: str) -> None:
        """EIO when an error injection fails ``op`` (one of ERROR_OPS) of ``path``."""
        error = self.error
        if error is not None and error.fails("read" if op == "read" else "write", path):
            self._refuse("error", op, errno.EIO, path)

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
        error = self.error
        with self._mu:
            failed = {kind: dict(counts) for kind, counts in self._failed.items()}
        return {
            "injection": {
                "full": self.full,
                "error": None if error is None else {"ops": error.ops, "glob": error.glob},
            },
            "failed": failed,
        }
