"""The FUSE operations of a disk layer: a passthrough to the backing directory that logs what is not yet durable.

mfusepy's high-level (path) API of libfuse 3. Every operation that changes something takes the one
lock, and none runs once the layer has lost power (``frozen``): then each answers EIO. What FUSE
forwards of durability (docs/disk-faults.md): fsync and fdatasync of a file (FUSE_FSYNC, with a
datasync flag), fsync of a directory (FUSE_FSYNCDIR), and for O_SYNC / O_DSYNC files an fsync after
each write, which the kernel sends itself; msync of a shared mapping arrives as writes then an fsync.
sync_file_range(2) never reaches a FUSE filesystem, and neither does sync(2) or syncfs(2).
Injections (a full disk, a failing one, a slow one, wrong bytes read back) are decided by injection.py; frozen answers
EIO before them. A slowed write or sync waits holding the lock: the layer's other changes queue behind it, as on a disk.
"""

from __future__ import annotations

import errno
import os
import random
import threading
from pathlib import Path
from typing import Any

import mfusepy

from failsafe.disk.data import DataJournal
from failsafe.disk.injection import Injection, Injector, Kind
from failsafe.disk.names import STASH, NameJournal

_TIME_KEYS = ("st_atime", "st_ctime", "st_mtime")  # with use_ns, mfusepy takes these names in nanoseconds
_STAT_KEYS = ("st_gid", "st_mode", "st_nlink", "st_size", "st_uid", "st_ino", "st_blocks", "st_rdev")
_STATVFS_KEYS = (
    "f_bavail",
    "f_bfree",
    "f_blocks",
    "f_bsize",
    "f_favail",
    "f_ffree",
    "f_files",
    "f_flag",
    "f_frsize",
    "f_namemax",
)
# open(2) flags that the backing descriptor must not carry: we write at the kernel's offsets, truncate through the
# journal, and read what we overwrite.
_STRIP = os.O_APPEND | os.O_TRUNC | os.O_CREAT | os.O_EXCL | os.O_ACCMODE
RENAME_NOREPLACE = 1
# When a directory change (create, link, unlink, rename) becomes durable. JOURNAL: at any fsync of the layer, file or
# directory, as on ext4 and xfs, whose fsync commits the one running journal transaction and with it every namespace
# change made before it; POSIX: only at an fsync of a directory it changed, the least POSIX promises.
JOURNAL = "journal"
POSIX = "posix"
METADATA_MODES = (JOURNAL, POSIX)
MAX_WRITE = 1 << 20


def _split(path: str) -> tuple[str, str]:
    parent, _, name = path.rstrip("/").rpartition("/")
    return parent.lstrip("/") or ".", name


class _Handle:
    __slots__ = ("fd", "ino", "path", "sync_writes")

    def __init__(self, fd: int, path: str, sync_writes: bool) -> None:
        self.fd = fd
        self.ino = os.fstat(fd).st_ino
        self.path = path
        self.sync_writes = sync_writes


class Volatile(mfusepy.Operations):
    """A backing directory seen through a layer that forgets, on ``lose``, whatever was not made durable."""

    use_ns = True
    flag_nullpath_ok = True  # read, write, fsync... of an unlinked open file come with a handle and no path
    flag_nopath = True

    def __init__(self, backing: Path, metadata: str = JOURNAL) -> None:
        if metadata not in METADATA_MODES:
            raise ValueError(f"metadata {metadata!r} is not one of {', '.join(METADATA_MODES)}")
        self.backing = backing
        self.metadata = metadata
        self.data = DataJournal()
        self.names = NameJournal(backing)
        self._mu = threading.RLock()  # create of an existing name falls back to open under it
        self.frozen = False
        self._handles: dict[int, _Handle] = {}
        self._next_fh = 0
        self._root_ino = os.stat(backing).st_ino
        self.counts = {"fsync": 0, "fdatasync": 0, "fsyncdir": 0, "sync_writes": 0}
        self.injector = Injector()

    # -- plumbing ------------------------------------------------------------------------------------------------------
    def _real(self, path: str) -> str:
        rel = path.lstrip("/")
        if rel.split("/", 1)[0] == STASH:
            raise FileNotFoundError(errno.ENOENT, "hidden", path)
        return str(self.backing / rel) if rel else str(self.backing)

    def _check(self) -> None:
        if self.frozen:
            raise OSError(errno.EIO, "the layer lost power")

    def _handle(self, fd: int, path: str, flags: int) -> int:
        self._next_fh += 1
        self._handles[self._next_fh] = _Handle(fd, path, bool(flags & (os.O_SYNC | os.O_DSYNC)))
        return self._next_fh

    def init_with_config(self, conn_info: Any, config_3: Any) -> None:
        if conn_info is not None:
            conn_info.max_write = MAX_WRITE  # Kafka's appends up to 1 MiB arrive as one write, not eight

    # -- reading -------------------------------------------------------------------------------------------------------
    def getattr(self, path: str, fh: int | None = None) -> dict[str, int]:
        self._check()
        handle = self._handles.get(fh) if fh is not None else None
        st = os.fstat(handle.fd) if handle is not None else os.lstat(self._real(path))
        return {**{k: getattr(st, k) for k in _STAT_KEYS}, **{k: getattr(st, f"{k}_ns") for k in _TIME_KEYS}}

    def opendir(self, path: str) -> int:
        fd = os.open(self._real(path), os.O_RDONLY | os.O_DIRECTORY)
        with self._mu:
            return self._handle(fd, path, 0)

    def readdir(self, path: str | None, fh: int) -> list[str]:
        self._check()
        handle = self._handles[fh]
        names = os.listdir(handle.fd)
        return [".", "..", *(n for n in names if not (handle.ino == self._root_ino and n == STASH))]

    def releasedir(self, path: str | None, fh: int) -> None:
        self.release(path, fh)

    def readlink(self, path: str) -> str:
        return os.readlink(self._real(path))

    def statfs(self, path: str) -> dict[str, int]:
        st = os.statvfs(self._real(path))
        return self.injector.statfs({k: getattr(st, k) for k in _STATVFS_KEYS})

    def access(self, path: str, amode: int) -> None:
        if not os.access(self._real(path), amode):
            raise PermissionError(errno.EACCES, "access", path)

    def read(self, path: str, size: int, offset: int, fh: int) -> bytes:
        self._check()
        handle = self._handles[fh]
        self.injector.check_io("read", handle.path, size)
        return self.injector.read_back(handle.path, offset, os.pread(handle.fd, size, offset))

    # -- opening, writing, syncing -------------------------------------------------------------------------------------
    def open(self, path: str, flags: int) -> int:
        with self._mu:
            self._check()
            if flags & os.O_TRUNC:
                self.injector.check_io("truncate", path)
            fd = os.open(self._real(path), (flags & ~_STRIP) | os.O_RDWR)
            fh = self._handle(fd, path, flags)
            if flags & os.O_TRUNC:
                self.data.truncate(fd, self._handles[fh].ino, 0, path)
            return fh

    def create(self, path: str, mode: int, flags: int = os.O_WRONLY) -> int:
        with self._mu:
            self._check()
            real = self._real(path)
            self.injector.check_new_name("create", real, path)
            try:
                fd = os.open(real, (flags & ~_STRIP) | os.O_RDWR | os.O_CREAT | os.O_EXCL, mode)
            except FileExistsError:
                if flags & os.O_EXCL:
                    raise
                return self.open(path, flags)
            self.names.created(*_split(path))
            return self._handle(fd, path, flags)

    def write(self, path: str, data: bytes, offset: int, fh: int) -> int:
        with self._mu:
            self._check()
            handle = self._handles[fh]
            self.injector.check_io("write", handle.path, len(data))
            self.injector.check_space("write", handle.fd, offset, len(data), handle.path)
            n = self.data.write(handle.fd, handle.ino, data, offset, handle.path)
            if handle.sync_writes:
                self.counts["sync_writes"] += 1
                self.data.sync(handle.ino)
            return n

    def truncate(self, path: str | None, length: int, fh: int | None = None) -> None:
        with self._mu:
            self._check()
            if fh is not None:
                handle = self._handles[fh]
                self.injector.check_io("truncate", handle.path)
                self.data.truncate(handle.fd, handle.ino, length, handle.path)
                return
            self.injector.check_io("truncate", path or "")
            fd = os.open(self._real(path or ""), os.O_RDWR)
            try:
                self.data.truncate(fd, os.fstat(fd).st_ino, length, path or "")
            finally:
                os.close(fd)

    def fallocate(self, path: str, mode: int, offset: int, size: int, fh: int) -> None:
        if mode != 0:
            raise OSError(errno.EOPNOTSUPP, "only plain allocation")
        with self._mu:
            self._check()
            handle = self._handles[fh]
            self.injector.check_io("fallocate", handle.path, size)
            self.injector.check_space("fallocate", handle.fd, offset, size, handle.path)
            self.data.allocate(handle.fd, handle.ino, offset, size, handle.path)

    def fsync(self, path: str, datasync: int, fh: int) -> None:
        with self._mu:
            self._check()
            self.counts["fdatasync" if datasync else "fsync"] += 1
            handle = self._handles[fh]
            # A failed fsync makes nothing durable: a loss still takes what it would have synced.
            self.injector.check_io("fdatasync" if datasync else "fsync", handle.path)
            os.fdatasync(handle.fd) if datasync else os.fsync(handle.fd)
            self.data.sync(handle.ino)
            if self.metadata == JOURNAL:
                self._forget(self.names.sync_all())

    def fsyncdir(self, path: str | None, datasync: int, fh: int) -> None:
        with self._mu:
            self._check()
            self.counts["fsyncdir"] += 1
            handle = self._handles[fh]
            self.injector.check_io("fsyncdir", handle.path)
            os.fsync(handle.fd)
            self._forget(self.names.sync_all() if self.metadata == JOURNAL else self.names.sync_dir(handle.ino))

    def _forget(self, removed: list[int]) -> None:
        """Files whose removal became durable: nothing of them can come back."""
        for ino in removed:
            self.data.forget(ino)

    def flush(self, path: str, fh: int) -> None:
        return None

    def release(self, path: str, fh: int) -> None:
        with self._mu:
            handle = self._handles.pop(fh, None)
            if handle is not None:
                os.close(handle.fd)

    # -- directories ---------------------------------------------------------------------------------------------------
    def _made(self, path: str) -> None:
        self.names.created(*_split(path))

    def mkdir(self, path: str, mode: int) -> None:
        with self._mu:
            self._check()
            self.injector.check_new_name("mkdir", self._real(path), path)
            os.mkdir(self._real(path), mode)
            self._made(path)

    def symlink(self, target: str, source: str) -> None:
        with self._mu:
            self._check()
            self.injector.check_new_name("symlink", self._real(target), target)
            os.symlink(source, self._real(target))
            self._made(target)

    def link(self, target: str, source: str) -> None:
        with self._mu:
            self._check()
            self.injector.check_new_name("link", self._real(target), target)
            os.link(self._real(source), self._real(target))
            self._made(target)

    def mknod(self, path: str, mode: int, dev: int) -> None:
        with self._mu:
            self._check()
            self.injector.check_new_name("mknod", self._real(path), path)
            os.mknod(self._real(path), mode, dev)
            self._made(path)

    def unlink(self, path: str) -> None:
        with self._mu:
            self._check()
            self._real(path)
            self.names.remove(*_split(path), is_dir=False)

    def rmdir(self, path: str) -> None:
        with self._mu:
            self._check()
            self._real(path)
            self.names.remove(*_split(path), is_dir=True)

    def rename(self, old: str, new: str, flags: int = 0) -> None:
        if flags & ~RENAME_NOREPLACE:
            raise OSError(errno.EINVAL, "RENAME_EXCHANGE and RENAME_WHITEOUT are not supported")
        with self._mu:
            self._check()
            self._real(old), self._real(new)
            self.names.rename(*_split(old), *_split(new), noreplace=bool(flags & RENAME_NOREPLACE))

    # -- attributes: applied at once, not modelled ---------------------------------------------------------------------
    def chmod(self, path: str | None, mode: int) -> None:
        os.chmod(self._real(path or ""), mode)

    def chown(self, path: str | None, uid: int, gid: int) -> None:
        os.chown(self._real(path or ""), uid, gid, follow_symlinks=False)

    def utimens(self, path: str | None, times: tuple[int, int] | None = None) -> None:
        os.utime(self._real(path or ""), ns=times, follow_symlinks=False)

    # -- injected errors -----------------------------------------------------------------------------------------------
    def inject(self, injection: Injection) -> dict[str, Any]:
        """From now on, fail what ``injection`` says (injection.py) until ``clear``; returns what is in force."""
        with self._mu:
            self._check_powered("inject")
            self.injector.inject(injection)
            return {"injection": self.injector.status()["injection"]}

    def clear(self, kind: Kind | None) -> dict[str, Any]:
        """End the injection of ``kind``, or both (None): the disk is back, or has space again."""
        with self._mu:
            self._check_powered("clear")
            cleared = self.injector.clear(kind)
            return {"cleared": cleared, "injection": self.injector.status()["injection"]}

    def _check_powered(self, what: str) -> None:
        if self.frozen:
            raise RuntimeError(f"this layer has lost power: nothing to {what}")

    # -- power ---------------------------------------------------------------------------------------------------------
    def status(self) -> dict[str, Any]:
        with self._mu:
            return {
                "frozen": self.frozen,
                "metadata": self.metadata,
                "unsynced": self.data.pending(),
                "unsynced_dir_changes": self.names.pending(),
                "calls": dict(self.counts),
                **self.injector.status(),
            }

    def lose(self, torn: bool, seed: int) -> dict[str, Any]:
        """The power cut: from now on every operation fails, and the backing directory holds only what was durable."""
        with self._mu:
            if self.frozen:
                raise RuntimeError("this layer has already lost power")
            self.frozen = True
            before = self.data.pending()
            files, tears = self.data.lose(torn=torn, rng=random.Random(seed))
            undone = self.names.lose()
            return {
                "files_rolled_back": files,
                "bytes_lost": before["bytes"],
                "dir_changes_undone": undone,
                "torn": [{"path": t.path, "offset": t.offset, "length": t.length, "kept": t.kept} for t in tears],
            }

    def close(self) -> None:
        """After the unmount: what was not lost is kept (a clean shutdown)."""
        with self._mu:
            for handle in self._handles.values():
                os.close(handle.fd)
            self._handles.clear()
            self.data.close()
            self.names.close()


class Fuse(mfusepy.FUSE):
    """mfusepy's FUSE, passing what its libfuse 3 wrappers drop: rename's flags, and the handle of an ftruncate."""

    def rename_fuse_3(self, old: bytes, new: bytes, flags: int) -> int:
        return self.operations.rename(
            old.decode(self.encoding, self.errors), new.decode(self.encoding, self.errors), flags
        )

    def truncate_fuse_3(self, path: bytes | None, length: int, fip: Any) -> int:
        fh = fip.contents.fh if fip else None
        return self.operations.truncate(None if path is None else path.decode(self.encoding, self.errors), length, fh)
