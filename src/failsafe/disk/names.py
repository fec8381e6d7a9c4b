"""What a power cut takes from directories: every create, link, unlink and rename since an fsync of the directory.

POSIX makes a directory entry durable only once the directory is fsynced (Kafka does that after it
rolls a segment or moves a checkpoint into place). Each change is applied to the backing directory at
once, so the mounted view is the live one, and logged until one of the directories it changed is
fsynced. A removed entry, or the one a rename replaced, is moved aside into a hidden stash in the
backing directory instead of being deleted, so that it can come back. Each pending change holds
descriptors (O_PATH) of its directories, so it can be undone whatever those are called by then.

A loss undoes the pending changes newest first. An undo that the current state no longer allows (the
entry it would move back is gone or another one stands in its place, because a later change that was
made durable moved it) is skipped: the durable change wins.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

STASH = ".failsafe-unsynced"


@dataclass
class _Change:
    kind: str  # "create" (also mkdir, symlink, mknod, link), "remove" (unlink, rmdir) or "rename"
    dir_inos: tuple[int, ...]  # the directories it changed: an fsync of any of them makes it durable
    dir_fds: tuple[int, ...]  # O_PATH descriptors of those directories (source first for a rename)
    name: str
    ino: int
    new_name: str = ""  # a rename's new name, in dir_fds[-1]
    stash: str = ""  # what this change moved aside: the removed entry, or the entry a rename replaced


def _ino_at(dir_fd: int, name: str) -> int | None:
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_ino
    except FileNotFoundError:
        return None


def _is_empty_dir(dir_fd: int, name: str) -> bool:
    fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=dir_fd)
    try:
        return not os.listdir(fd)
    finally:
        os.close(fd)


class NameJournal:
    """Directory changes under ``backing`` not yet made durable. Not thread-safe: the caller holds one lock."""

    def __init__(self, backing: Path) -> None:
        self.backing = backing
        stash = backing / STASH
        # A stash left by a layer that ended without a power loss holds entries that are gone in the live state.
        shutil.rmtree(stash, ignore_errors=True)
        stash.mkdir()
        self._stash_fd = os.open(stash, os.O_PATH | os.O_DIRECTORY)
        self._pending: list[_Change] = []
        self._seq = 0

    # -- helpers ------------------------------------------------------------------------------------------------------
    def _dir(self, rel_dir: str) -> tuple[int, int]:
        fd = os.open(self.backing / rel_dir, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW)
        return fd, os.fstat(fd).st_ino

    def _stash_name(self) -> str:
        self._seq += 1
        return str(self._seq)

    def _log(
        self, kind: str, dirs: list[tuple[int, int]], name: str, ino: int, new_name: str = "", stash: str = ""
    ) -> None:
        self._pending.append(
            _Change(kind, tuple(i for _, i in dirs), tuple(f for f, _ in dirs), name, ino, new_name, stash)
        )

    def _close(self, change: _Change) -> None:
        for fd in change.dir_fds:
            os.close(fd)

    # -- the changes, applied to the backing directory and logged ----------------------------------------------------
    def created(self, rel_dir: str, name: str) -> None:
        """Log an entry that the caller has just created in ``rel_dir``."""
        fd, dir_ino = self._dir(rel_dir)
        self._log("create", [(fd, dir_ino)], name, os.stat(name, dir_fd=fd, follow_symlinks=False).st_ino)

    def remove(self, rel_dir: str, name: str, is_dir: bool) -> int:
        """unlink or rmdir, with their errors; the entry goes to the stash. Returns its inode number."""
        fd, dir_ino = self._dir(rel_dir)
        try:
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            if is_dir and not stat.S_ISDIR(st.st_mode):
                raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), name)
            if not is_dir and stat.S_ISDIR(st.st_mode):
                raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), name)
            if is_dir and not _is_empty_dir(fd, name):
                raise OSError(errno.ENOTEMPTY, os.strerror(errno.ENOTEMPTY), name)
            stash = self._stash_name()
            os.rename(name, stash, src_dir_fd=fd, dst_dir_fd=self._stash_fd)
        except BaseException:
            os.close(fd)
            raise
        self._log("remove", [(fd, dir_ino)], name, st.st_ino, stash=stash)
        return st.st_ino

    def rename(self, old_dir: str, old_name: str, new_dir: str, new_name: str, noreplace: bool = False) -> None:
        """rename(2) with its errors; an entry it replaces goes to the stash."""
        dirs = [self._dir(old_dir), self._dir(new_dir)]
        try:
            (src_fd, _), (dst_fd, _) = dirs
            src = os.stat(old_name, dir_fd=src_fd, follow_symlinks=False)
            stash = ""
            try:
                dst = os.stat(new_name, dir_fd=dst_fd, follow_symlinks=False)
            except FileNotFoundError:
                dst = None
            if dst is not None:
                if noreplace:
                    raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), new_name)
                if dst.st_ino == src.st_ino:
                    raise _Unchanged  # two names of one inode: rename(2) does nothing
                if stat.S_ISDIR(src.st_mode) != stat.S_ISDIR(dst.st_mode):
                    code = errno.ENOTDIR if stat.S_ISDIR(src.st_mode) else errno.EISDIR
                    raise OSError(code, os.strerror(code), new_name)
                if stat.S_ISDIR(dst.st_mode) and not _is_empty_dir(dst_fd, new_name):
                    raise OSError(errno.ENOTEMPTY, os.strerror(errno.ENOTEMPTY), new_name)
                stash = self._stash_name()
                os.rename(new_name, stash, src_dir_fd=dst_fd, dst_dir_fd=self._stash_fd)
            try:
                os.rename(old_name, new_name, src_dir_fd=src_fd, dst_dir_fd=dst_fd)
            except OSError:
                if stash:
                    os.rename(stash, new_name, src_dir_fd=self._stash_fd, dst_dir_fd=dst_fd)
                raise
        except _Unchanged:
            for fd, _ in dirs:
                os.close(fd)
            return
        except BaseException:
            for fd, _ in dirs:
                os.close(fd)
            raise
        self._log("rename", dirs, old_name, src.st_ino, new_name, stash)

    # -- durability ---------------------------------------------------------------------------------------------------
    def sync_dir(self, dir_ino: int) -> list[int]:
        """fsync of the directory with inode number ``dir_ino``: every pending change to it is durable. Returns the
        inodes whose removal became durable (their last name is gone for good)."""
        return self._sync(lambda change: dir_ino in change.dir_inos)

    def sync_all(self) -> list[int]:
        """A journal commit (ext4's, which any fsync forces): every pending change is durable. Returns as
        ``sync_dir``."""
        return self._sync(lambda change: True)

    def _sync(self, durable: Callable[[_Change], bool]) -> list[int]:
        gone, keep = [], []
        for change in self._pending:
            if not durable(change):
                keep.append(change)
                continue
            if change.stash:
                path = self.backing / STASH / change.stash
                if path.is_dir() and not path.is_symlink():
                    shutil.rmtree(path)
                else:
                    path.unlink()
                if change.kind == "remove":
                    gone.append(change.ino)
            self._close(change)
        self._pending = keep
        return gone

    def pending(self) -> int:
        return len(self._pending)

    def lose(self) -> int:
        """Undo every pending change, newest first; returns how many were undone (skipped ones not counted)."""
        undone = 0
        for change in reversed(self._pending):
            undone += self._undo(change)
            self._close(change)
        self._pending = []
        self._empty_stash()
        return undone

    def _undo(self, change: _Change) -> int:
        dir_fd, last_fd = change.dir_fds[0], change.dir_fds[-1]
        if change.kind == "create":
            if _ino_at(dir_fd, change.name) != change.ino:
                return 0
            os.rename(change.name, self._stash_name(), src_dir_fd=dir_fd, dst_dir_fd=self._stash_fd)
            return 1
        if change.kind == "remove":
            if _ino_at(dir_fd, change.name) is not None:
                return 0
            os.rename(change.stash, change.name, src_dir_fd=self._stash_fd, dst_dir_fd=dir_fd)
            return 1
        if _ino_at(last_fd, change.new_name) != change.ino or _ino_at(dir_fd, change.name) is not None:
            return 0
        os.rename(change.new_name, change.name, src_dir_fd=last_fd, dst_dir_fd=dir_fd)
        if change.stash:
            os.rename(change.stash, change.new_name, src_dir_fd=self._stash_fd, dst_dir_fd=last_fd)
        return 1

    def _empty_stash(self) -> None:
        stash = self.backing / STASH
        for entry in stash.iterdir():
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()

    def close(self) -> None:
        """Keep the live state (a clean unmount): forget the log, delete what was removed, drop the stash."""
        for change in self._pending:
            self._close(change)
        self._pending = []
        os.close(self._stash_fd)
        shutil.rmtree(self.backing / STASH, ignore_errors=True)


class _Unchanged(Exception):
    pass
